// Image transforms on ImageItem (image.hpp), for training augmentation. Random ones draw from
// the Rng passed in, e.g. the per-item Rng of an `augmented` view (views.hpp), so they are
// reproducible and independent of DataLoader worker threads.
//
//   # auto images = data::in_memory(std::vector<data::ImageItem>{});
//   auto train = data::augmented(images, /*seed=*/1, [](data::ImageItem it, data::Rng& rng) {
//     it = data::random_crop(std::move(it), 28, 28, /*padding=*/2, rng);
//     it = data::random_horizontal_flip(std::move(it), 0.5, rng);
//     return data::normalize(std::move(it), {0.2860f}, {0.3530f});
//   });
//
// Semantics follow torchvision: random_crop pads every side with `padding` zero pixels, then
// takes a height x width crop at a uniform random offset; normalize computes
// (x - mean[c]) / std[c] per channel on values in [0, 1] (u8 pixels are scaled by 1/255 first)
// and returns f32. Crop and flip keep the dtype (u8 or f32) and the layout.
#pragma once

#include <vector>

#include "ember/data/image.hpp"
#include "ember/data/rng.hpp"

namespace ember::data {

// u8 pixels as f32 in [0, 1] (f32 images are returned as they are).
ImageItem to_float(ImageItem item);

// (x - mean[c]) / std[c] for each channel c; mean and std have one value per channel, or one
// value for all channels.
ImageItem normalize(ImageItem item, const std::vector<float>& mean, const std::vector<float>& std);

// A height x width crop of the image padded by `padding` zeros on each side; the offset is
// uniform over every position where the crop fits.
ImageItem random_crop(ImageItem item, int64_t height, int64_t width, int64_t padding, Rng& rng);

// Mirror left-right; random_horizontal_flip does it with probability p.
ImageItem horizontal_flip(ImageItem item);
// Flips with probability `p` (a draw from `rng`), like torchvision's RandomHorizontalFlip.
ImageItem random_horizontal_flip(ImageItem item, double p, Rng& rng);

}  // namespace ember::data
