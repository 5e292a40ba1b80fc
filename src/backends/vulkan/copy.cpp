// Copies between strided views with dtype conversion (contiguous, cast), and the view ops, which
// only make new strides over the same buffer.
//
// Kernels: "copy/b<N>" moves raw N-byte elements (every same-dtype copy, any layout), and
// "cast/<to>/<from>" converts by PyTorch's rules (glsl::convert). A copy of contiguous bytes is
// a vkCmdCopyBuffer.
#include "copy.hpp"

#include "glsl.hpp"

namespace ember::vulkan {

namespace {

std::string raw_copy_source(size_t bytes) {
  // the header's dtype list only decides the extensions: a dtype of the same width
  const DType like = bytes == 1 ? DType::u8 : bytes == 2 ? DType::i16 : DType::f32;
  std::string s = glsl::header({like});
  s += glsl::raw_buffer(0, bytes, "o_", false);
  s += glsl::raw_buffer(1, bytes, "a_", true);
  s += R"GLSL(
void main() {
  uint step = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < p.n; i += step) o_[ember_index(i, 0)] = a_[ember_index(i, 1)];
}
)GLSL";
  return s;
}

std::string cast_source(DType to, DType from) {
  std::string s = glsl::header({to, from});
  s += glsl::buffer(0, to, "o_", false);
  s += glsl::buffer(1, from, "a_", true);
  s += "void main() {\n  uint step = gl_NumWorkGroups.x * gl_WorkGroupSize.x;\n"
       "  for (uint i = gl_GlobalInvocationID.x; i < p.n; i += step) {\n"
       "    " +
       glsl::compute_type(from) + " x = " + glsl::load(from, "a_[ember_index(i, 1)]") +
       ";\n"
       "    o_[ember_index(i, 0)] = " +
       glsl::store(to, glsl::convert(from, to, "x")) + ";\n  }\n}\n";
  return s;
}

bool cast_dtypes(const VulkanBackend& be, const Op& op) {
  return be.has_dtype(op.in(0).dtype) && be.has_dtype(op.outputs[0].dtype);
}
bool input_dtype(const VulkanBackend& be, const Op& op) { return be.has_dtype(op.in(0).dtype); }

std::vector<PrimitivePtr> reshape_kernel(VulkanBackend& be, Op& op) {
  auto& x = as_vk(op.inputs[0]);
  const Shape& s = op.outputs[0].shape;
  if (auto st = view_strides(x.shape(), x.strides, s))
    return {std::make_shared<VulkanTensor>(op.outputs[0], x.buffer, ShapeDims(st->begin(), st->end()), x.offset)};
  auto c = be.contiguous(op.inputs[0]);
  return {std::make_shared<VulkanTensor>(op.outputs[0], c->buffer, contiguous_strides(s), c->offset)};
}

std::vector<PrimitivePtr> permute_kernel(VulkanBackend&, Op& op) {
  auto& x = as_vk(op.inputs[0]);
  const auto& perm = op.attr<DimsAttrs>().dims;
  ShapeDims st(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) st[i] = x.strides[size_t(perm[i])];
  return {std::make_shared<VulkanTensor>(op.outputs[0], x.buffer, std::move(st), x.offset)};
}

std::vector<PrimitivePtr> expand_kernel(VulkanBackend&, Op& op) {
  auto& x = as_vk(op.inputs[0]);
  Operand b = broadcast_operand(x, op.outputs[0].shape);
  return {
      std::make_shared<VulkanTensor>(op.outputs[0], x.buffer, ShapeDims(b.strides.begin(), b.strides.end()), x.offset)};
}

std::vector<PrimitivePtr> slice_kernel(VulkanBackend&, Op& op) {
  auto& x = as_vk(op.inputs[0]);
  const auto& r = op.attr<SliceAttrs>().ranges;
  ShapeDims st(r.size());
  int64_t off = x.offset;
  for (size_t d = 0; d < r.size(); ++d) {
    st[d] = x.strides[d] * r[d].step;
    if (r[d].length() > 0) off += r[d].start * x.strides[d];
  }
  return {std::make_shared<VulkanTensor>(op.outputs[0], x.buffer, std::move(st), off)};
}

std::vector<PrimitivePtr> contiguous_kernel(VulkanBackend& be, Op& op) {
  auto& x = as_vk(op.inputs[0]);
  if (x.is_contiguous())
    return {std::make_shared<VulkanTensor>(op.outputs[0], x.buffer, contiguous_strides(x.shape()), x.offset)};
  return {be.contiguous(op.inputs[0])};
}

std::vector<PrimitivePtr> cast_kernel(VulkanBackend& be, Op& op) {
  auto& x = as_vk(op.inputs[0]);
  if (x.dtype() == op.outputs[0].dtype) return {be.contiguous(op.inputs[0])};
  auto out = be.alloc(op.outputs[0]);
  copy_strided(be, operand_of(*out), operand_of(x), out->shape());
  return {out};
}

}  // namespace

void copy_strided(VulkanBackend& be, const Operand& dst, const Operand& src, const Shape& shape) {
  const int64_t n = shape.numel();
  if (n == 0) return;
  KernelParams p = make_params(be.current_op(), shape, {dst, src});
  const size_t esz = dtype_size(dst.dtype);
  if (dst.dtype == src.dtype && p.contig == 3u) {
    be.copy_buffer(src.buffer, size_t(src.offset) * esz, dst.buffer, size_t(dst.offset) * esz, size_t(n) * esz);
    return;
  }
  VkPipeline pipe;
  if (dst.dtype == src.dtype) {
    pipe = be.shaders().get(be.current_op(), "copy/b" + std::to_string(esz), [esz] { return raw_copy_source(esz); });
  } else {
    const std::string key = "cast/" + std::string(dtype_name(dst.dtype)) + "/" + std::string(dtype_name(src.dtype));
    pipe = be.shaders().get(be.current_op(), key, [&] { return cast_source(dst.dtype, src.dtype); });
  }
  be.dispatch(pipe, {dst.buffer, src.buffer, nullptr, nullptr}, &p, sizeof p, be.groups_for(n));
}

VulkanTensorPtr VulkanBackend::contiguous(const PrimitivePtr& p) {
  auto t = as_vk_ptr(p);
  if (t->is_contiguous()) return t;
  auto out = alloc(t->meta());
  copy_strided(*this, operand_of(*out), operand_of(*t), t->shape());
  return out;
}

void register_copy_kernels(KernelTable& t, DTypeTable& d) {
  t[size_t(OpKind::reshape)] = reshape_kernel;
  t[size_t(OpKind::permute)] = permute_kernel;
  t[size_t(OpKind::expand)] = expand_kernel;
  t[size_t(OpKind::slice)] = slice_kernel;
  t[size_t(OpKind::contiguous)] = contiguous_kernel;
  t[size_t(OpKind::cast)] = cast_kernel;
  d[size_t(OpKind::reshape)] = input_dtype;
  d[size_t(OpKind::contiguous)] = input_dtype;
  d[size_t(OpKind::cast)] = cast_dtypes;
}

}  // namespace ember::vulkan
