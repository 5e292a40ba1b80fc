// The start of a direct convolution kernel, shared by conv.cpp (conv, conv_transpose) and
// quant.cpp (conv_integer), whose parameter blocks (ConvParams, ConvIntParams) begin alike.
#pragma once

#include "vulkan_backend.hpp"

namespace ember::vulkan {

template <class Params>
struct ConvLaunch {
  VulkanTensorPtr x, w, out;
  Params p;
};

// The input and the weight of `op` made contiguous and its output allocated; unless the output is
// empty (nothing to do), `p` holds the element count, the channels and groups, the operands'
// offsets and per spatial dim (right-aligned in 3 slots, as pool.cpp lifts them) the input and
// output sizes, kernel, stride, begin pad (the end pads only size the output) and dilation.
template <class Params>
ConvLaunch<Params> conv_launch(VulkanBackend& be, Op& op) {
  const auto& a = op.attr<ConvAttrs>();
  ConvLaunch<Params> c{be.contiguous(op.inputs[0]), be.contiguous(op.inputs[1]), be.alloc(op.outputs[0]), {}};
  const Shape& xs = c.x->shape();
  const Shape& ws = c.w->shape();
  const Shape& os = c.out->shape();
  const int64_t n = os.numel();
  if (n == 0) return c;
  EMBER_CHECK(n <= INT32_MAX && xs.numel() <= INT32_MAX && ws.numel() <= INT32_MAX, op.name(),
              ": too many elements for 32-bit indexing");
  const int nd = int(a.stride.size());
  Params& p = c.p;
  p.n = uint32_t(n);
  p.cin = int32_t(xs[1]);
  p.cout = int32_t(os[1]);
  p.groups = int32_t(a.groups);
  p.off_x = int32_t(c.x->offset);
  p.off_w = int32_t(c.w->offset);
  for (int i = 0; i < 3; ++i) p.in[i] = p.out[i] = p.k[i] = p.s[i] = p.d[i] = 1;
  for (int i = 0; i < nd; ++i) {
    const int j = 3 - nd + i;
    p.in[j] = int32_t(xs[2 + i]);
    p.out[j] = int32_t(os[2 + i]);
    p.k[j] = int32_t(ws[2 + i]);
    p.s[j] = int32_t(a.stride[size_t(i)]);
    p.p[j] = int32_t(a.padding[size_t(i)]);
    p.d[j] = int32_t(a.dilation[size_t(i)]);
  }
  return c;
}

}  // namespace ember::vulkan
