// Quantized ops: matmul_integer and conv_integer (u8/i8 with zero points -> i32, wrapping) and
// qlinear_add (the quantized residual add).
//
// matmul_integer and conv_integer are direct kernels (an invocation per output element) summing
// (a - a_zp)(b - b_zp) in 32-bit integers, as the CPU backend's reference. qlinear_add computes
// each step in f32 as the plain ops it stands for: (a - a_zp) a_scale + (b - b_zp) b_scale, / c_scale,
// rounded half to even, + c_zp, saturated; its six scalars are first gathered (cast to f32) into a
// small buffer by the copy kernel, so the host never reads them. qlinear_conv, qlinear_matmul
// and matmul_wq are not supported yet.
#include <cstring>

#include "copy.hpp"
#include "glsl.hpp"

namespace ember::vulkan {

namespace {

bool int8_inputs(const VulkanBackend& be, const Op&) {
  return be.has_dtype(DType::u8) && be.has_dtype(DType::i8) && be.has_dtype(DType::i32);
}

// ---- matmul_integer: generic parameters over the batch (operands out, a, b), ia = (M, K),
// ib = (N, a's row stride), da = (a's k stride, b's k stride), db.x = b's column stride,
// flag: 1 a_zp, 2 a_zp per row, 4 b_zp, 8 b_zp per column; off[3] / pad[0]: the zero points
std::string matmul_integer_source(DType at, DType bt) {
  std::string s = glsl::header({at, bt, DType::i32});
  s += glsl::buffer(0, DType::i32, "o_", false);
  s += glsl::buffer(1, at, "a_", true);
  s += glsl::buffer(2, bt, "b_", true);
  s += glsl::buffer(3, at, "az_", true);
  s += glsl::buffer(4, bt, "bz_", true);
  s += "void main() {\n  uint step = gl_NumWorkGroups.x * gl_WorkGroupSize.x;\n"
       "  int M = p.ia.x, K = p.ia.y, N = p.ib.x, a_rs = p.ib.y;\n"
       "  int a_ks = int(p.da.x), b_ks = int(p.da.y), b_cs = int(p.db.x);\n"
       "  uint total = p.n * uint(M * N);\n"
       "  for (uint e = gl_GlobalInvocationID.x; e < total; e += step) {\n"
       "    uint b = e / uint(M * N);\n    int rest = int(e - b * uint(M * N));\n"
       "    int i = rest / N, j = rest % N;\n"
       "    int ab = ember_index(b, 1), bb = ember_index(b, 2), ob = ember_index(b, 0);\n"
       "    int az = (p.flag & 1u) != 0u ? " + glsl::load(at, "az_[p.off[3] + ((p.flag & 2u) != 0u ? i : 0)]") + " : 0;\n"
       "    int bz = (p.flag & 4u) != 0u ? " + glsl::load(bt, "bz_[p.pad0 + ((p.flag & 8u) != 0u ? j : 0)]") + " : 0;\n"
       "    int acc = 0;\n"
       "    for (int k = 0; k < K; ++k)\n"
       "      acc += (" + glsl::load(at, "a_[ab + i * a_rs + k * a_ks]") + " - az) * (" +
       glsl::load(bt, "b_[bb + k * b_ks + j * b_cs]") + " - bz);\n"
       "    o_[ob + i * N + j] = acc;\n  }\n}\n";
  return s;
}

std::vector<PrimitivePtr> matmul_integer_kernel(VulkanBackend& be, Op& op) {
  const VulkanTensor& a = as_vk(op.inputs[0]);
  const VulkanTensor& b = as_vk(op.inputs[1]);
  auto out = be.alloc(op.outputs[0]);
  const Shape& os = out->shape();
  if (os.numel() == 0) return {out};
  const int r = os.rank();
  const int64_t M = os[r - 2], N = os[r - 1], K = a.shape()[-1];
  EMBER_CHECK(os.numel() <= INT32_MAX, op.name(), ": too many elements for 32-bit indexing");
  Shape batch(std::vector<int64_t>(os.begin(), os.end() - 2));
  auto batch_operand = [&](const VulkanTensor& t) {
    std::vector<int64_t> st(size_t(batch.rank()), 0);
    const int tr = t.shape().rank() - 2, lead = batch.rank() - tr;
    for (int d = 0; d < tr; ++d) st[size_t(lead + d)] = t.shape()[d] == 1 ? 0 : t.strides[size_t(d)];
    return Operand{t.buffer, t.dtype(), st, t.offset};
  };
  std::vector<int64_t> ost(size_t(batch.rank()));
  for (int d = 0; d < batch.rank(); ++d) ost[size_t(d)] = out->strides[size_t(d)];
  KernelParams p = make_params("matmul_integer", batch, {Operand{out->buffer, DType::i32, ost, 0}, batch_operand(a), batch_operand(b)});
  const int ra = a.shape().rank(), rb = b.shape().rank();
  p.ia[0] = int32_t(M);
  p.ia[1] = int32_t(K);
  p.ib[0] = int32_t(N);
  p.ib[1] = int32_t(a.strides[size_t(ra - 2)]);
  p.da[0] = uint32_t(int32_t(a.strides[size_t(ra - 1)]));
  p.da[1] = uint32_t(int32_t(b.strides[size_t(rb - 2)]));
  p.db[0] = uint32_t(int32_t(b.strides[size_t(rb - 1)]));
  BufferPtr az, bz;
  if (op.inputs.size() > 2 && op.inputs[2]) {
    VulkanTensorPtr z = be.contiguous(op.inputs[2]);
    az = z->buffer;
    p.off[3] = int32_t(z->offset);
    p.flag |= 1u | (z->numel() > 1 ? 2u : 0u);
  }
  if (op.inputs.size() > 3 && op.inputs[3]) {
    VulkanTensorPtr z = be.contiguous(op.inputs[3]);
    bz = z->buffer;
    p.pad[0] = int32_t(z->offset);
    p.flag |= 4u | (z->numel() > 1 ? 8u : 0u);
  }
  const DType at = a.dtype(), bt = b.dtype();
  const std::string key = "matmul_integer/" + std::string(dtype_name(at)) + "/" + std::string(dtype_name(bt));
  VkPipeline pipe = be.shaders().get(op.name(), key, [at, bt] { return matmul_integer_source(at, bt); });
  be.dispatch(pipe, {out->buffer, a.buffer, b.buffer, az, bz, nullptr}, &p, sizeof p, be.groups_for(os.numel()));
  return {out};
}

// ---- conv_integer: as conv.cpp's kernel in int, the zero points subtracted; padded taps add 0
struct ConvIntParams {
  uint32_t n = 0;
  int32_t cin = 0, cout = 0, groups = 1;
  int32_t off_x = 0, off_w = 0, off_xz = 0, off_wz = 0;
  int32_t flags = 0, pad[3] = {};  // flags: 1 x_zp, 2 w_zp, 4 w_zp per output channel
  int32_t in[4] = {}, out[4] = {}, k[4] = {}, s[4] = {}, p[4] = {}, d[4] = {};
};
static_assert(sizeof(ConvIntParams) == 144);

std::string conv_integer_source(DType xt, DType wt) {
  std::string s = glsl::header({xt, wt, DType::i32}, false);
  s += R"GLSL(
struct ConvIntParams {
  uint n; int cin; int cout; int groups; int off_x; int off_w; int off_xz; int off_wz; int flags; int pad0; int pad1; int pad2;
  ivec4 in_; ivec4 out_; ivec4 k; ivec4 s; ivec4 p; ivec4 d;
};
layout(std430, binding = 6) readonly buffer ConvIntParamsBuf { ConvIntParams r; };
)GLSL";
  s += glsl::buffer(0, DType::i32, "o_", false);
  s += glsl::buffer(1, xt, "x_", true);
  s += glsl::buffer(2, wt, "w_", true);
  s += glsl::buffer(3, xt, "xz_", true);
  s += glsl::buffer(4, wt, "wz_", true);
  s += "void main() {\n  uint step = gl_NumWorkGroups.x * gl_WorkGroupSize.x;\n"
       "  int cin_g = r.cin / r.groups, cout_g = r.cout / r.groups;\n"
       "  int in_sp = r.in_[0] * r.in_[1] * r.in_[2], k_sp = r.k[0] * r.k[1] * r.k[2];\n"
       "  int xz = (r.flags & 1) != 0 ? " + glsl::load(xt, "xz_[r.off_xz]") + " : 0;\n"
       "  for (uint e = gl_GlobalInvocationID.x; e < r.n; e += step) {\n"
       "    int q = int(e);\n    int o2 = q % r.out_[2]; q /= r.out_[2];\n    int o1 = q % r.out_[1]; q /= r.out_[1];\n"
       "    int o0 = q % r.out_[0]; q /= r.out_[0];\n    int oc = q % r.cout, b = q / r.cout;\n"
       "    int wz = (r.flags & 2) != 0 ? " + glsl::load(wt, "wz_[r.off_wz + ((r.flags & 4) != 0 ? oc : 0)]") + " : 0;\n"
       "    int g = oc / cout_g;\n    int acc = 0;\n"
       "    for (int c = 0; c < cin_g; ++c) {\n      int ic = g * cin_g + c;\n"
       "      int xb = r.off_x + (b * r.cin + ic) * in_sp, wb = r.off_w + (oc * cin_g + c) * k_sp;\n"
       "      for (int t0 = 0; t0 < r.k[0]; ++t0) {\n"
       "        int i0 = o0 * r.s[0] - r.p[0] + t0 * r.d[0];\n        if (i0 < 0 || i0 >= r.in_[0]) continue;\n"
       "        for (int t1 = 0; t1 < r.k[1]; ++t1) {\n"
       "          int i1 = o1 * r.s[1] - r.p[1] + t1 * r.d[1];\n          if (i1 < 0 || i1 >= r.in_[1]) continue;\n"
       "          for (int t2 = 0; t2 < r.k[2]; ++t2) {\n"
       "            int i2 = o2 * r.s[2] - r.p[2] + t2 * r.d[2];\n            if (i2 < 0 || i2 >= r.in_[2]) continue;\n"
       "            acc += (" + glsl::load(xt, "x_[xb + (i0 * r.in_[1] + i1) * r.in_[2] + i2]") + " - xz) * (" +
       glsl::load(wt, "w_[wb + (t0 * r.k[1] + t1) * r.k[2] + t2]") + " - wz);\n"
       "          }\n        }\n      }\n    }\n"
       "    o_[int(e)] = acc;\n  }\n}\n";
  return s;
}

std::vector<PrimitivePtr> conv_integer_kernel(VulkanBackend& be, Op& op) {
  const auto& a = op.attr<ConvAttrs>();
  VulkanTensorPtr x = be.contiguous(op.inputs[0]);
  VulkanTensorPtr w = be.contiguous(op.inputs[1]);
  auto out = be.alloc(op.outputs[0]);
  const Shape& os = out->shape();
  const int64_t n = os.numel();
  if (n == 0) return {out};
  EMBER_CHECK(n <= INT32_MAX && x->numel() <= INT32_MAX && w->numel() <= INT32_MAX, op.name(),
              ": too many elements for 32-bit indexing");
  const int nd = int(a.stride.size());
  ConvIntParams p;
  p.n = uint32_t(n);
  p.cin = int32_t(x->shape()[1]);
  p.cout = int32_t(os[1]);
  p.groups = int32_t(a.groups);
  p.off_x = int32_t(x->offset);
  p.off_w = int32_t(w->offset);
  for (int i = 0; i < 3; ++i) p.in[i] = p.out[i] = p.k[i] = p.s[i] = p.d[i] = 1;
  for (int i = 0; i < nd; ++i) {
    const int j = 3 - nd + i;
    p.in[j] = int32_t(x->shape()[2 + i]);
    p.out[j] = int32_t(os[2 + i]);
    p.k[j] = int32_t(w->shape()[2 + i]);
    p.s[j] = int32_t(a.stride[size_t(i)]);
    p.p[j] = int32_t(a.padding[size_t(i)]);  // the begin pads (the end pads only size the output)
    p.d[j] = int32_t(a.dilation[size_t(i)]);
  }
  BufferPtr xz, wz;
  if (op.inputs.size() > 2 && op.inputs[2]) {
    VulkanTensorPtr z = be.contiguous(op.inputs[2]);
    xz = z->buffer;
    p.off_xz = int32_t(z->offset);
    p.flags |= 1;
  }
  if (op.inputs.size() > 3 && op.inputs[3]) {
    VulkanTensorPtr z = be.contiguous(op.inputs[3]);
    wz = z->buffer;
    p.off_wz = int32_t(z->offset);
    p.flags |= 2 | (z->numel() > 1 ? 4 : 0);
  }
  const DType xt = x->dtype(), wt = w->dtype();
  const std::string key = "conv_integer/" + std::string(dtype_name(xt)) + "/" + std::string(dtype_name(wt));
  VkPipeline pipe = be.shaders().get(op.name(), key, [xt, wt] { return conv_integer_source(xt, wt); });
  be.dispatch(pipe, {out->buffer, x->buffer, w->buffer, xz, wz, nullptr}, &p, sizeof p, be.groups_for(n));
  return {out};
}

// ---- qlinear_add: a, a_scale, a_zp?, b, b_scale, b_zp?, c_scale, c_zp? -> c
std::string qlinear_add_source(DType dt) {
  std::string s = glsl::header({dt});
  s += glsl::buffer(0, dt, "o_", false);
  s += glsl::buffer(1, dt, "a_", true);
  s += glsl::buffer(2, dt, "b_", true);
  s += glsl::buffer(3, DType::f32, "s_", true);
  const std::string lo = dt == DType::u8 ? "0.0" : "-128.0", hi = dt == DType::u8 ? "255.0" : "127.0";
  s += "void main() {\n  uint step = gl_NumWorkGroups.x * gl_WorkGroupSize.x;\n"
       "  float sa = s_[0], za = s_[1], sb = s_[2], zb = s_[3], sc = s_[4], zc = s_[5];\n"
       "  for (uint i = gl_GlobalInvocationID.x; i < p.n; i += step) {\n"
       "    precise float ra = (float(" + glsl::load(dt, "a_[ember_index(i, 1)]") + ") - za) * sa;\n"
       "    precise float rb = (float(" + glsl::load(dt, "b_[ember_index(i, 2)]") + ") - zb) * sb;\n"
       "    precise float sum = ra + rb;\n"
       "    precise float q = roundEven(sum / sc) + zc;\n"
       "    o_[ember_index(i, 0)] = " + glsl::store(dt, "int(clamp(q, " + lo + ", " + hi + "))") + ";\n  }\n}\n";
  return s;
}

std::vector<PrimitivePtr> qlinear_add_kernel(VulkanBackend& be, Op& op) {
  const VulkanTensor& a = as_vk(op.inputs[0]);
  const VulkanTensor& b = as_vk(op.inputs[3]);
  auto out = be.alloc(op.outputs[0]);
  const int64_t n = out->numel();
  if (n == 0) return {out};
  // the scalars a_scale, a_zp, b_scale, b_zp, c_scale, c_zp as f32 (an absent zero point is 0)
  auto scalars = be.alloc(TensorMeta{Shape{6}, DType::f32});
  fill_bits(be, *scalars, 0);
  const size_t from[6] = {1, 2, 4, 5, 6, 7};
  for (size_t i = 0; i < 6; ++i)
    if (op.inputs.size() > from[i] && op.inputs[from[i]])
      copy_strided(be, Operand{scalars->buffer, DType::f32, {}, int64_t(i)},
                   Operand{as_vk(op.inputs[from[i]]).buffer, op.inputs[from[i]]->dtype(), {},
                           as_vk(op.inputs[from[i]]).offset},
                   Shape{});
  KernelParams p = make_params("qlinear_add", out->shape(),
                               {operand_of(*out), broadcast_operand(a, out->shape()), broadcast_operand(b, out->shape())});
  const DType dt = a.dtype();
  VkPipeline pipe = be.shaders().get(op.name(), "qlinear_add/" + std::string(dtype_name(dt)), [dt] { return qlinear_add_source(dt); });
  be.dispatch(pipe, {out->buffer, a.buffer, b.buffer, scalars->buffer, nullptr, nullptr}, &p, sizeof p, be.groups_for(n));
  return {out};
}

}  // namespace

void register_quant_kernels(KernelTable& t, DTypeTable& d) {
  t[size_t(OpKind::matmul_integer)] = matmul_integer_kernel;
  t[size_t(OpKind::conv_integer)] = conv_integer_kernel;
  t[size_t(OpKind::qlinear_add)] = qlinear_add_kernel;
  for (OpKind k : {OpKind::matmul_integer, OpKind::conv_integer, OpKind::qlinear_add}) d[size_t(k)] = int8_inputs;
}

}  // namespace ember::vulkan
