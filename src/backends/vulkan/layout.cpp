// Layout ops that make new buffers: flip, roll, cat, pad (constant mode), tril, triu and
// slice_assign. Most are strided copies (copy.hpp) between windows of the tensors, so they add
// no shader of their own; tril/triu and pad's reflect and replicate modes have one per element
// size ("tril/b4", "pad/b4").
#include <algorithm>
#include <cstring>

#include "copy.hpp"
#include "glsl.hpp"

namespace ember::vulkan {

namespace {

// The window of `t` over `shape`, starting `offset` elements further on, with strides `strides`.
Operand window(const VulkanTensor& t, std::vector<int64_t> strides, int64_t offset) {
  return Operand{t.buffer, t.dtype(), std::move(strides), offset};
}
std::vector<int64_t> strides_of(const VulkanTensor& t) {
  return std::vector<int64_t>(t.strides.begin(), t.strides.end());
}

bool input_dtype(const VulkanBackend& be, const Op& op) {
  for (const auto& in : op.inputs)
    if (in && !be.has_dtype(in->dtype())) return false;
  return true;
}
// pad's reflect and replicate modes: an index kernel per element size ("pad/b4") that maps each
// output position to its source position dim by dim.
struct PadParams {
  uint32_t n = 0;
  int32_t rank = 0, off_x = 0, mode = 0;  // mode 1 reflect, 2 replicate
  int32_t osize[kMaxRank] = {}, isize[kMaxRank] = {}, lo[kMaxRank] = {}, xst[kMaxRank] = {};
};

std::string pad_source(size_t bytes) {
  const DType like = bytes == 1 ? DType::u8 : bytes == 2 ? DType::i16 : DType::f32;
  std::string s = glsl::header({like}, false);
  s += R"GLSL(
struct PadParams { uint n; int rank; int off_x; int mode; int osize[8]; int isize[8]; int lo[8]; int xst[8]; };
layout(std430, binding = 6) readonly buffer PadParamsBuf { PadParams r; };
)GLSL";
  s += glsl::raw_buffer(0, bytes, "o_", false);
  s += glsl::raw_buffer(1, bytes, "a_", true);
  s += R"GLSL(
void main() {
  uint step = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint e = gl_GlobalInvocationID.x; e < r.n; e += step) {
    int q = int(e), src = r.off_x;
    for (int d = r.rank - 1; d >= 0; --d) {
      int s = r.osize[d];
      int k = q / s;
      int i = q - k * s - r.lo[d], n = r.isize[d];
      q = k;
      if (r.mode == 1) {  // reflect (mirror without the edge)
        if (i < 0) i = -i;
        if (i >= n) i = 2 * (n - 1) - i;
      } else {  // replicate
        i = clamp(i, 0, n - 1);
      }
      src += i * r.xst[d];
    }
    o_[int(e)] = a_[src];
  }
}
)GLSL";
  return s;
}

bool pad_dtypes(const VulkanBackend& be, const Op& op) {
  return input_dtype(be, op) && (op.attr<PadAttrs>().mode == PadMode::constant || op.in(0).shape.rank() <= kMaxRank);
}

std::vector<PrimitivePtr> pad_index_kernel(VulkanBackend& be, Op& op, const VulkanTensor& x) {
  const auto& a = op.attr<PadAttrs>();
  auto out = be.alloc(op.outputs[0]);
  const Shape& is = x.shape();
  const Shape& os = out->shape();
  const int64_t n = os.numel();
  if (n == 0) return {out};
  EMBER_CHECK(n <= INT32_MAX, "pad: too many elements for 32-bit indexing");
  PadParams p;
  p.n = uint32_t(n);
  p.rank = os.rank();
  p.off_x = int32_t(x.offset);
  p.mode = a.mode == PadMode::reflect ? 1 : 2;
  for (int d = 0; d < os.rank(); ++d) {
    p.osize[d] = int32_t(os[d]);
    p.isize[d] = int32_t(is[d]);
    p.lo[d] = int32_t(a.pads[size_t(2 * d)]);
    p.xst[d] = int32_t(x.strides[size_t(d)]);
  }
  const size_t esz = dtype_size(out->dtype());
  VkPipeline pipe = be.shaders().get("pad", "pad/b" + std::to_string(esz), [esz] { return pad_source(esz); });
  be.dispatch(pipe, {out->buffer, x.buffer, nullptr, nullptr}, &p, sizeof p, be.groups_for(n));
  return {out};
}

std::vector<PrimitivePtr> flip_kernel(VulkanBackend& be, Op& op) {
  const VulkanTensor& x = as_vk(op.inputs[0]);
  const Shape& s = x.shape();
  std::vector<int64_t> st = strides_of(x);
  int64_t off = x.offset;
  std::vector<bool> seen(size_t(s.rank()), false);
  for (int d : op.attr<DimsAttrs>().dims) {
    if (s.rank() == 0) continue;
    EMBER_CHECK(!seen[size_t(d)], "flip: dim ", d, " appears multiple times in the list of dims");
    seen[size_t(d)] = true;
    if (s[d] > 0) off += (s[d] - 1) * st[size_t(d)];
    st[size_t(d)] = -st[size_t(d)];
  }
  auto out = be.alloc(op.outputs[0]);
  copy_strided(be, operand_of(*out), window(x, st, off), s);
  return {out};
}

std::vector<PrimitivePtr> roll_kernel(VulkanBackend& be, Op& op) {
  const auto& a = op.attr<RollAttrs>();
  auto out = be.alloc(op.outputs[0]);
  const Shape& s = out->shape();
  const int64_t n = s.numel();
  if (n == 0) return {out};
  if (a.dims.empty()) {  // the flattened tensor: two copies of a contiguous version
    VulkanTensorPtr c = be.contiguous(op.inputs[0]);
    const int64_t sh = a.shifts.empty() ? 0 : ((a.shifts[0] % n) + n) % n;
    if (n - sh > 0) copy_strided(be, window(*out, {1}, sh), window(*c, {1}, c->offset), Shape{n - sh});
    if (sh > 0) copy_strided(be, window(*out, {1}, 0), window(*c, {1}, c->offset + n - sh), Shape{sh});
    return {out};
  }
  const VulkanTensor& x = as_vk(op.inputs[0]);
  const int r = s.rank();
  std::vector<int64_t> shift(size_t(r), 0);
  for (size_t i = 0; i < a.dims.size(); ++i) {
    if (r == 0) continue;
    const int d = a.dims[i];
    shift[size_t(d)] = ((shift[size_t(d)] + a.shifts[i] % s[d]) % s[d] + s[d]) % s[d];
  }
  std::vector<int> rolled;
  for (int d = 0; d < r; ++d)
    if (shift[size_t(d)] != 0) rolled.push_back(d);
  const size_t k = rolled.size();
  for (uint64_t mask = 0; mask < (uint64_t(1) << k); ++mask) {  // one copy per block of the result
    Shape box = s;
    int64_t doff = 0, soff = x.offset;
    for (size_t j = 0; j < k; ++j) {
      const int d = rolled[j];
      const int64_t sh = shift[size_t(d)], len = s[d];
      if (mask >> j & 1) {  // out [0, sh) <- x [len - sh, len)
        soff += (len - sh) * x.strides[size_t(d)];
        box[d] = sh;
      } else {  // out [sh, len) <- x [0, len - sh)
        doff += sh * out->strides[size_t(d)];
        box[d] = len - sh;
      }
    }
    copy_strided(be, window(*out, strides_of(*out), doff), window(x, strides_of(x), soff), box);
  }
  return {out};
}

std::vector<PrimitivePtr> cat_kernel(VulkanBackend& be, Op& op) {
  const int dim = op.attr<DimAttrs>().dim;
  auto out = be.alloc(op.outputs[0]);
  if (out->numel() == 0) return {out};
  int64_t off = 0;
  for (const auto& p : op.inputs) {
    const VulkanTensor& t = as_vk(p);
    if (t.numel() > 0)
      copy_strided(be, window(*out, strides_of(*out), off * out->strides[size_t(dim)]), operand_of(t), t.shape());
    off += t.shape()[dim];
  }
  return {out};
}

// pad, constant mode: the output filled with the value, then the input's overlap copied in
// (negative pads crop).
std::vector<PrimitivePtr> pad_kernel(VulkanBackend& be, Op& op) {
  const VulkanTensor& x = as_vk(op.inputs[0]);
  const auto& a = op.attr<PadAttrs>();
  if (a.mode != PadMode::constant) return pad_index_kernel(be, op, x);
  auto out = be.alloc(op.outputs[0]);
  const Shape& is = x.shape();
  const Shape& os = out->shape();
  const int64_t n = os.numel();
  if (n == 0) return {out};
  uint64_t bits = 0;
  visit_dtype(x.dtype(), [&]<class T>() {
    T v = convert_scalar<T>(a.value);
    std::memcpy(&bits, &v, sizeof(T));
  });
  fill_bits(be, *out, bits);
  Shape box = is;
  int64_t doff = 0, soff = x.offset;
  for (int d = 0; d < os.rank(); ++d) {
    const int64_t lo = a.pads[size_t(2 * d)], hi = a.pads[size_t(2 * d + 1)];
    const int64_t len = is[d] + std::min<int64_t>(lo, 0) + std::min<int64_t>(hi, 0);
    if (len <= 0) return {out};
    box[d] = len;
    doff += std::max<int64_t>(lo, 0) * out->strides[size_t(d)];
    soff += std::max<int64_t>(-lo, 0) * x.strides[size_t(d)];
  }
  copy_strided(be, window(*out, strides_of(*out), doff), window(x, strides_of(x), soff), box);
  return {out};
}

// tril / triu: out[.., i, j] = x[.., i, j] where j - i <= k (tril) or >= k (triu), else zero
// (every dtype's zero is all-zero bits). x is read through its strides.
std::string tri_source(bool lower, size_t bytes) {
  const DType like = bytes == 1 ? DType::u8 : bytes == 2 ? DType::i16 : DType::f32;
  std::string s = glsl::header({like});
  s += glsl::raw_buffer(0, bytes, "o_", false);
  s += glsl::raw_buffer(1, bytes, "a_", true);
  const std::string zero = bytes == 8 ? "uvec2(0u)" : glsl::raw_type(bytes) + "(0)";
  s += "void main() {\n  uint step = gl_NumWorkGroups.x * gl_WorkGroupSize.x;\n"
       "  int cols = p.ib.x, rows = p.ib.y, k = p.ia.x;\n"
       "  for (uint i = gl_GlobalInvocationID.x; i < p.n; i += step) {\n"
       "    int col = int(i) % cols, row = (int(i) / cols) % rows;\n"
       "    bool keep = col - row " +
       std::string(lower ? "<=" : ">=") +
       " k;\n"
       "    o_[ember_index(i, 0)] = keep ? a_[ember_index(i, 1)] : " +
       zero + ";\n  }\n}\n";
  return s;
}

std::vector<PrimitivePtr> tri_kernel(VulkanBackend& be, Op& op) {
  const bool lower = op.kind == OpKind::tril;
  auto out = be.alloc(op.outputs[0]);
  const Shape& s = out->shape();
  const int64_t n = s.numel();
  if (n == 0) return {out};
  const int r = s.rank();
  const VulkanTensor& x = as_vk(op.inputs[0]);
  KernelParams p = make_params(op.name(), s, {operand_of(*out), operand_of(x)});
  const int64_t k = std::clamp<int64_t>(op.attr<DimAttrs>().k, -INT32_MAX, INT32_MAX);
  p.ia[0] = int32_t(k);
  p.ib[0] = int32_t(s[r - 1]);
  p.ib[1] = int32_t(s[r - 2]);
  const size_t esz = dtype_size(out->dtype());
  const std::string key = std::string(op.name()) + "/b" + std::to_string(esz);
  VkPipeline pipe = be.shaders().get(op.name(), key, [&] { return tri_source(lower, esz); });
  be.dispatch(pipe, {out->buffer, x.buffer, nullptr, nullptr}, &p, sizeof p, be.groups_for(n));
  return {out};
}

std::vector<PrimitivePtr> slice_assign_kernel(VulkanBackend& be, Op& op) {
  const VulkanTensor& x = as_vk(op.inputs[0]);
  const VulkanTensor& v = as_vk(op.inputs[1]);
  auto out = be.alloc(op.outputs[0]);
  copy_strided(be, operand_of(*out), operand_of(x), x.shape());
  if (v.numel() == 0) return {out};
  const auto& ranges = op.attr<SliceAttrs>().ranges;
  const int r = out->shape().rank();
  std::vector<int64_t> st(static_cast<size_t>(r));
  int64_t off = 0;
  for (int d = 0; d < r; ++d) {
    off += ranges[size_t(d)].start * out->strides[size_t(d)];
    st[size_t(d)] = out->strides[size_t(d)] * ranges[size_t(d)].step;
  }
  copy_strided(be, window(*out, st, off), broadcast_operand(v, v.shape()), v.shape());
  return {out};
}

}  // namespace

void register_layout_kernels(KernelTable& t, DTypeTable& d) {
  t[size_t(OpKind::flip)] = flip_kernel;
  t[size_t(OpKind::roll)] = roll_kernel;
  t[size_t(OpKind::cat)] = cat_kernel;
  t[size_t(OpKind::pad)] = pad_kernel;
  t[size_t(OpKind::tril)] = tri_kernel;
  t[size_t(OpKind::triu)] = tri_kernel;
  t[size_t(OpKind::slice_assign)] = slice_assign_kernel;
  for (OpKind k : {OpKind::flip, OpKind::roll, OpKind::cat, OpKind::tril, OpKind::triu, OpKind::slice_assign})
    d[size_t(k)] = input_dtype;
  d[size_t(OpKind::pad)] = pad_dtypes;
}

}  // namespace ember::vulkan
