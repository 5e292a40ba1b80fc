// Images as dataset items: decoding PNG (libpng) and JPEG (libjpeg), writing them, and
// batching image items into tensors.
//
//   TensorData img = data::read_image("cat.jpg");                  // u8 [C, H, W]
//   data::ImageItem item{img, /*label=*/3};
//   data::write_png("out.png", item.image);
//   data::ImageBatch b = data::batch_images({item, item}, Device::cpu());  // f32 [2, C, H, W] + i64 [2]
//
// Pixels are u8 (0..255) after decoding; transforms (image_transforms.hpp) may turn them into
// f32. An ImageItem's layout says how its image tensor is ordered: chw [C, H, W] (PyTorch's
// order, the default) or hwc [H, W, C] (the files' interleaved order).
// Channels: 0 keeps the file's channels (gray 1, gray+alpha 2, RGB 3, RGBA 4); 1, 3 or 4
// converts (JPEG gets an opaque alpha for 4).
// Errors (ember::Error) name the file: missing, not PNG or JPEG, truncated (with the byte
// offset where the data ends) or otherwise corrupt.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "ember/core/tensor_data.hpp"
#include "ember/tensor/dyn_tensor.hpp"

namespace ember::data {

// How an image tensor's dimensions are ordered: chw [C, H, W] (PyTorch's order) or hwc [H, W, C] (the files'
// interleaved order).
enum class ImageLayout { chw, hwc };

// An image and its class label: the item type of ImageFolderDataset and the input of batch_images.
struct ImageItem {
  TensorData image;                       // u8 or f32; [C, H, W] (chw) or [H, W, C] (hwc)
  int64_t label = 0;                      // class index
  ImageLayout layout = ImageLayout::chw;  // the order of image's dimensions

  int64_t channels() const { return image.shape()[layout == ImageLayout::chw ? 0 : 2]; }  // Number of channels (C).
  int64_t height() const { return image.shape()[layout == ImageLayout::chw ? 1 : 0]; }    // Height in pixels (H).
  int64_t width() const { return image.shape()[layout == ImageLayout::chw ? 2 : 1]; }     // Width in pixels (W).
};

// Decodes PNG or JPEG bytes (recognised by their signature); `name` is used in error messages.
TensorData decode_image(std::span<const uint8_t> bytes, const std::string& name, ImageLayout layout = ImageLayout::chw,
                        int channels = 0);
// Reads and decodes a PNG or JPEG file into u8 pixels; `channels` 0 keeps the file's, 1, 3 or 4 converts.
// Throws ember::Error naming the file when it is missing, not PNG or JPEG, truncated or corrupt.
TensorData read_image(const std::string& path, ImageLayout layout = ImageLayout::chw, int channels = 0);

// Write u8 images with 1-4 channels (PNG) or 1 or 3 channels (JPEG, quality 1..100).
void write_png(const std::string& path, const TensorData& image, ImageLayout layout = ImageLayout::chw);
// JPEG at `quality` 1..100 (default 95); a u8 image of 1 or 3 channels, else ember::Error.
void write_jpeg(const std::string& path, const TensorData& image, ImageLayout layout = ImageLayout::chw,
                int quality = 95);

// The same image in another layout.
TensorData to_layout(const TensorData& image, ImageLayout from, ImageLayout to);

// A batch of images for a classifier.
struct ImageBatch {
  DynTensor images;  // f32 [N, C, H, W]
  DynTensor labels;  // i64 [N]
};

// A batcher (dataloader.hpp) for image items of one size: u8 pixels are scaled to [0, 1],
// f32 pixels are kept, hwc items are transposed to CHW.
ImageBatch batch_images(std::vector<ImageItem> items, const Device& device);

}  // namespace ember::data
