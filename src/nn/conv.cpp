// Conv1d/2d/3d and ConvTranspose1d/2d/3d.
#include "ember/nn/conv.hpp"

#include <string>

#include "ember/core/error.hpp"
#include "ember/nn/quantize.hpp"
#include "layer_util.hpp"

namespace ember::nn {

namespace {

const char* conv_name(int n, bool transposed) {
  static constexpr const char* kConv[] = {"Conv1d", "Conv2d", "Conv3d"};
  static constexpr const char* kTransposed[] = {"ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d"};
  return (transposed ? kTransposed : kConv)[n - 1];
}

void check_dtypes(const char* name, const DynTensor& x, const Param& weight, const std::optional<Param>& bias) {
  if (weight.defined()) internal::check_dtype(name, x, weight);  // undefined: an int8 layer's dropped weight
  internal::check_dtype(name, x, bias, "bias");
}

DynTensor conv_op(int n, bool transposed, DynTensor x, DynTensor w, std::optional<DynTensor> b, const ConvOptions& o) {
  if (transposed) {
    if (n == 1) return conv_transpose1d(std::move(x), std::move(w), std::move(b), o);
    if (n == 2) return conv_transpose2d(std::move(x), std::move(w), std::move(b), o);
    return conv_transpose3d(std::move(x), std::move(w), std::move(b), o);
  }
  if (n == 1) return conv1d(std::move(x), std::move(w), std::move(b), o);
  if (n == 2) return conv2d(std::move(x), std::move(w), std::move(b), o);
  return conv3d(std::move(x), std::move(w), std::move(b), o);
}

void check_channels(const std::string& name, int64_t in, int64_t out, int64_t groups) {
  EMBER_CHECK(in > 0 && out > 0, name, ": in_channels ", in, " and out_channels ", out, " must be positive");
  EMBER_CHECK(groups > 0 && in % groups == 0 && out % groups == 0, name, ": in_channels ", in, " and out_channels ",
              out, " must both be divisible by groups ", groups);
}

Sizes kernel_sizes(const std::string& name, const Sizes& kernel_size, int n) {
  EMBER_CHECK(!kernel_size.empty(), name, ": kernel_size is required");
  Sizes k = internal::expand_sizes(kernel_size, n, name, "kernel_size");
  for (int64_t v : k) EMBER_CHECK(v > 0, name, ": kernel_size must be positive, got ", Shape(kernel_size));
  return k;
}

// Pads spatial dim i of x [N, C, *spatial] by before[i] / after[i] with wrap-around (padding_mode circular).
DynTensor circular_pad(DynTensor x, const Sizes& before, const Sizes& after, const std::string& name) {
  for (size_t i = 0; i < before.size(); ++i) {
    const int axis = 2 + static_cast<int>(i);
    const int64_t size = x.size(axis);
    EMBER_CHECK(before[i] <= size && after[i] <= size, name, ": circular padding (", before[i], ", ", after[i],
                ") is larger than the input size ", size, " of input ", x.shape());
    std::vector<DynTensor> parts;
    if (before[i] > 0) parts.push_back(narrow(x, axis, size - before[i], before[i]));
    parts.push_back(x);
    if (after[i] > 0) parts.push_back(narrow(x, axis, 0, after[i]));
    if (parts.size() > 1) x = cat(std::move(parts), axis);
  }
  return x;
}

// A convolution layer's input: batched (a batch dim of 1 added to an unbatched one, `unbatched`
// says so), of rank N + 2, and of the parameters' dtype.
DynTensor conv_input(DynTensor x, int n, const char* name, const Param& weight, const std::optional<Param>& bias,
                     bool& unbatched) {
  x = internal::batch_if_unbatched(std::move(x), n + 2, unbatched);
  EMBER_CHECK(x.rank() == n + 2, name, ": input must be [N, C, *spatial] or [C, *spatial] with ", n,
              " spatial dims, got ", x.shape());
  check_dtypes(name, x, weight, bias);
  return x;
}

}  // namespace

template <int N>
Conv<N> ConvConfig<N>::init(const Device& device) const {
  const std::string name = conv_name(N, false);
  check_channels(name, in_channels, out_channels, groups);
  Sizes shape{out_channels, in_channels / groups};
  for (int64_t k : kernel_sizes(name, kernel_size, N)) shape.push_back(k);
  const Sizes strides = internal::expand_sizes(stride, N, name, "stride");
  internal::expand_sizes(padding, N, name, "padding");
  internal::expand_sizes(dilation, N, name, "dilation");
  EMBER_CHECK(!padding_same || strides == Sizes(N, 1), name,
              ": padding_same (padding=\"same\") is not supported for strided convolutions");
  Conv<N> m;
  m.config = *this;
  m.weight = Param(initializer.init(Shape(shape), device));
  if (bias) m.bias = Param(internal::fan_in_uniform({out_channels}, fans(Shape(shape)).first, device));
  return m;
}

template <int N>
DynTensor Conv<N>::forward(DynTensor x) const {
  return forward(std::move(x), ConvEpilogue{});
}

template <int N>
DynTensor Conv<N>::forward(DynTensor x, ConvEpilogue e) const {
  return detail::in_module(ember_module_, conv_name(N, false), [&] {
    const char* name = conv_name(N, false);
    bool unbatched = false;
    const bool int8 = quantized && !quantized->observer;  // static int8 (the float weight may be gone)
    x = conv_input(std::move(x), N, name, int8 ? Param{} : weight, bias, unbatched);
    const ConvConfig<N>& c = config;
    const Shape& kernel = int8 ? quantized->tensor.shape() : weight.shape();
    const Sizes dilation = internal::expand_sizes(c.dilation, N, name, "dilation");
    Sizes before(N), after(N);
    if (c.padding_same) {
      for (int i = 0; i < N; ++i) {
        const int64_t total = dilation[i] * (kernel[2 + i] - 1);
        before[i] = total / 2;
        after[i] = total - before[i];
      }
    } else {
      before = after = internal::expand_sizes(c.padding, N, name, "padding");
    }
    ConvOptions o{c.stride, before, dilation, {0}, c.groups};
    if (c.padding_mode != ConvPaddingMode::zeros || before != after) {
      // Pad explicitly, then convolve without padding (as PyTorch does for these cases).
      if (c.padding_mode == ConvPaddingMode::circular) {
        x = circular_pad(std::move(x), before, after, name);
      } else {
        Sizes pads;  // PyTorch order: last dim first
        for (int i = N - 1; i >= 0; --i) pads.insert(pads.end(), {before[i], after[i]});
        const PadMode mode = c.padding_mode == ConvPaddingMode::reflect     ? PadMode::reflect
                             : c.padding_mode == ConvPaddingMode::replicate ? PadMode::replicate
                                                                            : PadMode::constant;
        x = pad(std::move(x), std::move(pads), mode);
      }
      o.padding = {0};
    }
    DynTensor y;
    if (unbatched && e.residual) e.residual = unsqueeze(std::move(*e.residual), 0);
    if (int8) {  // the clamp runs in the int8 kernel's epilogue unless a residual comes before it
      if (e.residual) {
        y = quantized_conv(*quantized, std::move(x), internal::value_of(bias), o) + *e.residual;
        if (e.min || e.max) y = clamp(std::move(y), e.min, e.max);
      } else {
        y = quantized_conv(*quantized, std::move(x), internal::value_of(bias), o, e.min, e.max);
      }
      return unbatched ? squeeze(std::move(y), 0) : y;
    }
    DynTensor w = weight;
    if (quantized) {  // observing or fake-quantizing (nn::prepare, nn::prepare_qat)
      x = quantized_input(*quantized, std::move(x));
      w = quantized_weight(*quantized, w);
    }
    if (e.residual || e.min || e.max) {
      y = conv_fused(std::move(x), std::move(w), internal::value_of(bias), o, std::move(e));
    } else {
      y = conv_op(N, false, std::move(x), std::move(w), internal::value_of(bias), o);
    }
    return unbatched ? squeeze(std::move(y), 0) : y;
  });
}

template <int N>
ConvTranspose<N> ConvTransposeConfig<N>::init(const Device& device) const {
  const std::string name = conv_name(N, true);
  check_channels(name, in_channels, out_channels, groups);
  Sizes shape{in_channels, out_channels / groups};
  for (int64_t k : kernel_sizes(name, kernel_size, N)) shape.push_back(k);
  internal::expand_sizes(stride, N, name, "stride");
  internal::expand_sizes(padding, N, name, "padding");
  internal::expand_sizes(dilation, N, name, "dilation");
  internal::expand_sizes(output_padding, N, name, "output_padding");
  ConvTranspose<N> m;
  m.config = *this;
  m.weight = Param(initializer.init(Shape(shape), device));
  if (bias) m.bias = Param(internal::fan_in_uniform({out_channels}, fans(Shape(shape)).first, device));
  return m;
}

template <int N>
DynTensor ConvTranspose<N>::forward(DynTensor x) const {
  return detail::in_module(ember_module_, conv_name(N, true), [&] {
    const char* name = conv_name(N, true);
    bool unbatched = false;
    x = conv_input(std::move(x), N, name, weight, bias, unbatched);
    const ConvTransposeConfig<N>& c = config;
    ConvOptions o{c.stride, c.padding, c.dilation, c.output_padding, c.groups};
    DynTensor y = conv_op(N, true, std::move(x), weight, internal::value_of(bias), o);
    return unbatched ? squeeze(std::move(y), 0) : y;
  });
}

template <int N>
DynTensor ConvTranspose<N>::forward(DynTensor x, Sizes output_size) const {
  return detail::in_module(ember_module_, conv_name(N, true), [&] {
    const char* name = conv_name(N, true);
    const ConvTransposeConfig<N>& c = config;
    if (static_cast<int>(output_size.size()) > N) output_size.erase(output_size.begin(), output_size.end() - N);
    EMBER_CHECK(static_cast<int>(output_size.size()) == N, name, ": output_size needs ", N, " spatial sizes, got ",
                Shape(output_size));
    EMBER_CHECK(x.rank() >= N, name, ": input ", x.shape(), " has fewer than ", N, " dims");
    const Sizes stride = internal::expand_sizes(c.stride, N, name, "stride");
    const Sizes padding = internal::expand_sizes(c.padding, N, name, "padding");
    const Sizes dilation = internal::expand_sizes(c.dilation, N, name, "dilation");
    Sizes output_padding(N);
    for (int i = 0; i < N; ++i) {
      const int64_t in = x.size(x.rank() - N + i), k = weight.shape()[2 + i];
      const int64_t min_size = (in - 1) * stride[i] - 2 * padding[i] + dilation[i] * (k - 1) + 1;
      const int64_t max_size = min_size + stride[i] - 1;
      EMBER_CHECK(output_size[i] >= min_size && output_size[i] <= max_size, name, ": requested output size ",
                  Shape(output_size), " is not reachable: dim ", i, " must be in [", min_size, ", ", max_size,
                  "] for input ", x.shape());
      output_padding[i] = output_size[i] - min_size;
    }
    ConvTranspose<N> with_padding = *this;
    with_padding.config.output_padding = output_padding;
    return with_padding.forward(std::move(x));
  });
}

template struct ConvConfig<1>;
template struct ConvConfig<2>;
template struct ConvConfig<3>;
template struct Conv<1>;
template struct Conv<2>;
template struct Conv<3>;
template struct ConvTransposeConfig<1>;
template struct ConvTransposeConfig<2>;
template struct ConvTransposeConfig<3>;
template struct ConvTranspose<1>;
template struct ConvTranspose<2>;
template struct ConvTranspose<3>;

}  // namespace ember::nn
