// MaxPool1d/2d, AvgPool1d/2d, AdaptiveAvgPool1d/2d.
#include "ember/nn/pool.hpp"

#include "ember/core/error.hpp"
#include "layer_util.hpp"

namespace ember::nn {

namespace {
void check_pool_input(const DynTensor& x, int n, const char* name) {
  EMBER_CHECK(x.rank() == n + 1 || x.rank() == n + 2, name, ": input must be [N, C, *spatial] or [C, *spatial] with ",
              n, " spatial dims, got ", x.shape());
}
}  // namespace

template <int N>
DynTensor MaxPool<N>::forward(DynTensor x) const {
  return detail::in_module(ember_module_, N == 1 ? "MaxPool1d" : "MaxPool2d", [&] {
    check_pool_input(x, N, N == 1 ? "MaxPool1d" : "MaxPool2d");
    PoolOptions o{kernel_size, stride, padding, dilation, ceil_mode, true};
    return N == 1 ? max_pool1d(std::move(x), std::move(o)) : max_pool2d(std::move(x), std::move(o));
  });
}

template <int N>
std::pair<DynTensor, DynTensor> MaxPool<N>::forward_with_indices(DynTensor x) const {
  return detail::in_module(ember_module_, N == 1 ? "MaxPool1d" : "MaxPool2d", [&] {
    check_pool_input(x, N, N == 1 ? "MaxPool1d" : "MaxPool2d");
    PoolOptions o{kernel_size, stride, padding, dilation, ceil_mode, true};
    return N == 1 ? max_pool1d_with_indices(std::move(x), std::move(o))
                  : max_pool2d_with_indices(std::move(x), std::move(o));
  });
}

template <int N>
DynTensor AvgPool<N>::forward(DynTensor x) const {
  return detail::in_module(ember_module_, N == 1 ? "AvgPool1d" : "AvgPool2d", [&] {
    const char* name = N == 1 ? "AvgPool1d" : "AvgPool2d";
    check_pool_input(x, N, name);
    PoolOptions o{kernel_size, stride, padding, {1}, ceil_mode, count_include_pad};
    return N == 1 ? avg_pool1d(std::move(x), std::move(o)) : avg_pool2d(std::move(x), std::move(o));
  });
}

DynTensor AdaptiveAvgPool1d::forward(DynTensor x) const {
  return detail::in_module(ember_module_, "AdaptiveAvgPool1d", [&] {
    check_pool_input(x, 1, "AdaptiveAvgPool1d");
    return adaptive_avg_pool1d(std::move(x), output_size);
  });
}

DynTensor AdaptiveAvgPool2d::forward(DynTensor x) const {
  return detail::in_module(ember_module_, "AdaptiveAvgPool2d", [&] {
    check_pool_input(x, 2, "AdaptiveAvgPool2d");
    Sizes size = internal::expand_sizes(output_size, 2, "AdaptiveAvgPool2d", "output_size");
    for (int i = 0; i < 2; ++i)
      if (size[i] == -1) size[i] = x.size(x.rank() - 2 + i);
    return adaptive_avg_pool2d(std::move(x), std::move(size));
  });
}

template struct MaxPool<1>;
template struct MaxPool<2>;
template struct AvgPool<1>;
template struct AvgPool<2>;

}  // namespace ember::nn
