// Image transforms on ImageItem: element copies through (channel, row, column) offsets, so
// every transform handles both layouts; crop and flip copy raw elements (u8 or f32).
#include "ember/data/image_transforms.hpp"

#include <cstring>

namespace ember::data {
namespace {

// Offsets of element (c, y, x) for an image of the given layout and sizes.
struct Geometry {
  ImageLayout layout;
  int64_t c, h, w;
  explicit Geometry(const ImageItem& it) : layout(it.layout), c(it.channels()), h(it.height()), w(it.width()) {}
  Geometry(ImageLayout l, int64_t c_, int64_t h_, int64_t w_) : layout(l), c(c_), h(h_), w(w_) {}
  int64_t at(int64_t ch, int64_t y, int64_t x) const {
    return layout == ImageLayout::chw ? (ch * h + y) * w + x : (y * w + x) * c + ch;
  }
  Shape shape() const { return layout == ImageLayout::chw ? Shape{c, h, w} : Shape{h, w, c}; }
};

void check_image(const ImageItem& it, const char* who) {
  EMBER_CHECK(it.image.shape().rank() == 3, who, ": an image has rank 3 ([C, H, W] or [H, W, C]), got shape ",
              it.image.shape());
  EMBER_CHECK(it.image.dtype() == DType::u8 || it.image.dtype() == DType::f32, who, ": images are u8 or f32, got ",
              it.image.dtype());
}

}  // namespace

ImageItem to_float(ImageItem item) {
  check_image(item, "to_float");
  if (item.image.dtype() == DType::f32) return item;
  auto px = item.image.as<uint8_t>();
  std::vector<float> v(px.size());
  for (size_t i = 0; i < px.size(); ++i) v[i] = float(px[i]) / 255.0f;
  item.image = TensorData::from_vector(v, item.image.shape());
  return item;
}

ImageItem normalize(ImageItem item, const std::vector<float>& mean, const std::vector<float>& std) {
  item = to_float(std::move(item));
  const Geometry g(item);
  auto ok = [&](size_t n) { return n == 1 || n == static_cast<size_t>(g.c); };
  EMBER_CHECK(ok(mean.size()) && ok(std.size()), "normalize: mean has ", mean.size(), " values and std ", std.size(),
              "; the image has ", g.c, " channels (give one value per channel, or one for all)");
  for (float s : std) EMBER_CHECK(s != 0, "normalize: std must not be zero");
  auto px = item.image.as<float>();
  for (int64_t c = 0; c < g.c; ++c) {
    const float m = mean[mean.size() == 1 ? 0 : size_t(c)], s = std[std.size() == 1 ? 0 : size_t(c)];
    for (int64_t y = 0; y < g.h; ++y)
      for (int64_t x = 0; x < g.w; ++x) {
        float& v = px[size_t(g.at(c, y, x))];
        v = (v - m) / s;
      }
  }
  return item;
}

ImageItem random_crop(ImageItem item, int64_t height, int64_t width, int64_t padding, Rng& rng) {
  check_image(item, "random_crop");
  const Geometry g(item);
  EMBER_CHECK(height > 0 && width > 0 && padding >= 0, "random_crop: bad size ", height, "x", width, " or padding ",
              padding);
  const int64_t ph = g.h + 2 * padding, pw = g.w + 2 * padding;
  EMBER_CHECK(height <= ph && width <= pw, "random_crop: a ", height, "x", width, " crop does not fit the ", g.h, "x",
              g.w, " image padded by ", padding);
  const int64_t top = rng.range(0, ph - height), left = rng.range(0, pw - width);
  const Geometry out_g(g.layout, g.c, height, width);
  TensorData out(out_g.shape(), item.image.dtype());  // zero-filled: the padding
  const size_t elem = dtype_size(item.image.dtype());
  const std::byte* src = item.image.bytes().data();
  std::byte* dst = out.bytes().data();
  for (int64_t c = 0; c < g.c; ++c)
    for (int64_t y = 0; y < height; ++y) {
      const int64_t sy = top + y - padding;
      if (sy < 0 || sy >= g.h) continue;
      for (int64_t x = 0; x < width; ++x) {
        const int64_t sx = left + x - padding;
        if (sx < 0 || sx >= g.w) continue;
        std::memcpy(dst + out_g.at(c, y, x) * elem, src + g.at(c, sy, sx) * elem, elem);
      }
    }
  item.image = std::move(out);
  return item;
}

ImageItem horizontal_flip(ImageItem item) {
  check_image(item, "horizontal_flip");
  const Geometry g(item);
  TensorData out(item.image.shape(), item.image.dtype());
  const size_t elem = dtype_size(item.image.dtype());
  const std::byte* src = item.image.bytes().data();
  std::byte* dst = out.bytes().data();
  for (int64_t c = 0; c < g.c; ++c)
    for (int64_t y = 0; y < g.h; ++y)
      for (int64_t x = 0; x < g.w; ++x)
        std::memcpy(dst + g.at(c, y, x) * elem, src + g.at(c, y, g.w - 1 - x) * elem, elem);
  item.image = std::move(out);
  return item;
}

ImageItem random_horizontal_flip(ImageItem item, double p, Rng& rng) {
  return rng.bernoulli(p) ? horizontal_flip(std::move(item)) : item;
}

}  // namespace ember::data
