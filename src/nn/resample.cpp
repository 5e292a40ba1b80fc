// PixelShuffle, PixelUnshuffle, Upsample.
#include "ember/nn/resample.hpp"

#include <cmath>

#include "ember/core/error.hpp"
#include "ember/nn/functional.hpp"

namespace ember::nn {

DynTensor PixelShuffle::forward(DynTensor x) const {
  return detail::in_module(ember_module_, "PixelShuffle", [&] { return pixel_shuffle(std::move(x), upscale_factor); });
}

DynTensor PixelUnshuffle::forward(DynTensor x) const {
  return detail::in_module(ember_module_, "PixelUnshuffle",
                           [&] { return pixel_unshuffle(std::move(x), downscale_factor); });
}

DynTensor Upsample::forward(DynTensor x) const {
  return detail::in_module(ember_module_, "Upsample", [&] {
    EMBER_CHECK(x.rank() >= 3, "Upsample: input must be [N, C, *spatial], got ", x.shape());
    const int nd = x.rank() - 2;
    EMBER_CHECK(size.empty() != scale_factor.empty(), "Upsample: give exactly one of size and scale_factor");
    const char* mode_name = mode == UpsampleMode::nearest    ? "nearest"
                            : mode == UpsampleMode::linear   ? "linear"
                            : mode == UpsampleMode::bilinear ? "bilinear"
                                                             : "bicubic";
    if (mode != UpsampleMode::nearest) {
      const int want = mode == UpsampleMode::linear ? 1 : 2;
      EMBER_CHECK(nd == want, "Upsample: mode ", mode_name, " needs a [N, C, ", want == 1 ? "L" : "H, W",
                  "] input, got ", x.shape());
    }
    EMBER_CHECK(!(mode == UpsampleMode::nearest && align_corners), "Upsample: align_corners is only valid for the ",
                "linear, bilinear and bicubic modes");
    Sizes out;
    if (!size.empty()) {
      EMBER_CHECK(size.size() == 1 || static_cast<int>(size.size()) == nd, "Upsample: size needs 1 or ", nd,
                  " values, got ", size.size());
      for (int i = 0; i < nd; ++i) out.push_back(size.size() == 1 ? size[0] : size[static_cast<size_t>(i)]);
    } else {
      EMBER_CHECK(scale_factor.size() == 1 || static_cast<int>(scale_factor.size()) == nd,
                  "Upsample: scale_factor needs 1 or ", nd, " values, got ", scale_factor.size());
      for (int i = 0; i < nd; ++i) {
        const double s = scale_factor.size() == 1 ? scale_factor[0] : scale_factor[static_cast<size_t>(i)];
        EMBER_CHECK(s > 0, "Upsample: scale_factor must be positive, got ", s);
        out.push_back(static_cast<int64_t>(std::floor(static_cast<double>(x.size(2 + i)) * s)));
      }
    }
    const InterpMode m = mode == UpsampleMode::nearest   ? InterpMode::nearest
                         : mode == UpsampleMode::bicubic ? InterpMode::cubic
                                                         : InterpMode::linear;
    return interpolate(std::move(x), std::move(out), m, align_corners.value_or(false));
  });
}

}  // namespace ember::nn
