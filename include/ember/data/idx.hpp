// IDX files (the MNIST family) and the MNIST / Fashion-MNIST datasets built from them.
//
//   auto train = data::FashionMnist::train();          // /usr/share/datasets/fashion-mnist
//   auto test = data::FashionMnist::test();
//   data::MnistItem it = *train->get(0);               // 28x28 u8 pixels + label (9: ankle boot)
//   TensorData raw = data::read_idx("t10k-labels-idx1-ubyte.gz");   // any IDX file, shape from its header
//
// IDX format: a big-endian magic number 0x0000TTNN (TT: element type 0x08 u8, 0x09 i8, 0x0B i16,
// 0x0C i32, 0x0D f32, 0x0E f64; NN: number of dimensions), NN big-endian u32 dimensions, then the
// elements in row-major order, big-endian. MNIST labels are 0x00000801 (u8, [count]) and images
// 0x00000803 (u8, [count, rows, cols]). Files may be gzip-compressed (detected from their
// content, not their name) or raw.
// Errors (ember::Error) name the file: a missing file, a bad magic number, a gzip stream that
// ends early, data shorter than the header promises (with the byte offset where it ends,
// counted in the decompressed data), images and labels files of different lengths; a missing
// Fashion-MNIST says which Debian package to install.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ember/core/tensor_data.hpp"
#include "ember/data/dataset.hpp"
#include "ember/data/image.hpp"

namespace ember::data {

// The whole IDX file as a tensor (dtype and shape from its header; values converted to
// little-endian).
TensorData read_idx(const std::string& path);

// One MNIST-style example: a grayscale u8 image and its class label (as IdxDataset::get returns it).
struct MnistItem {
  std::vector<uint8_t> image;  // rows * cols pixels, row-major, 0 = background
  uint8_t label = 0;           // class index (0-9 for MNIST and Fashion-MNIST)
  // rows: the image height in pixels.
  int64_t rows = 28, cols = 28;  // cols: the image width in pixels
};

// Images + labels IDX files paired item by item.
class IdxDataset final : public Dataset<MnistItem> {
 public:
  // Reads both files (gzip or raw) eagerly; throws ember::Error unless images is u8 [count, rows, cols] and
  // labels u8 [count] with the same count, or for any read_idx error.
  IdxDataset(const std::string& images_path, const std::string& labels_path);
  std::optional<MnistItem> get(size_t index) const override;
  size_t size() const override { return count_; }
  int64_t rows() const { return rows_; }                // image height in pixels
  int64_t cols() const { return cols_; }                // image width in pixels
  const TensorData& images() const { return images_; }  // u8 [count, rows, cols]
  const TensorData& labels() const { return labels_; }  // u8 [count]

 private:
  TensorData images_, labels_;
  size_t count_ = 0;
  int64_t rows_ = 0, cols_ = 0;
};

// MNIST-style directories: {train,t10k}-{images-idx3,labels-idx1}-ubyte, each either .gz or raw.
struct Mnist {
  // The training split: dir/train-images-idx3-ubyte and dir/train-labels-idx1-ubyte (.gz or raw). Throws
  // ember::Error when a file is missing.
  static std::shared_ptr<const IdxDataset> train(const std::string& dir);
  // The test split: dir/t10k-images-idx3-ubyte and dir/t10k-labels-idx1-ubyte (.gz or raw). Throws
  // ember::Error when a file is missing.
  static std::shared_ptr<const IdxDataset> test(const std::string& dir);
};

// Where Debian's dataset-fashion-mnist package installs the files.
inline constexpr const char* kFashionMnistDir = "/usr/share/datasets/fashion-mnist";

// Fashion-MNIST (60,000 training and 10,000 test images of 10 clothing classes), by default
// from Debian's package dataset-fashion-mnist.
struct FashionMnist {
  // The 60,000 training images; a missing file throws ember::Error suggesting the Debian package.
  static std::shared_ptr<const IdxDataset> train(const std::string& dir = kFashionMnistDir);
  // The 10,000 test images; a missing file throws ember::Error suggesting the Debian package.
  static std::shared_ptr<const IdxDataset> test(const std::string& dir = kFashionMnistDir);
  // Class names by label: "T-shirt/top", "Trouser", ..., "Ankle boot".
  static const std::array<const char*, 10> kClassNames;
};

// An MNIST item as an ImageItem: u8 [1, rows, cols] (CHW), label widened to int64.
ImageItem to_image_item(const MnistItem& item);

// A batcher for MNIST items: images f32 [N, 1, rows, cols] scaled to [0, 1], labels i64 [N].
ImageBatch batch_mnist(std::vector<MnistItem> items, const Device& device);

}  // namespace ember::data
