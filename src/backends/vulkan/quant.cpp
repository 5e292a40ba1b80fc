// Quantized ops: matmul_integer and conv_integer (u8/i8 with zero points -> i32, wrapping),
// qlinear_add (the quantized residual add), qlinear_conv, qlinear_matmul and matmul_wq.
//
// matmul_integer and conv_integer are direct kernels (an invocation per output element) summing
// (a - a_zp)(b - b_zp) in 32-bit integers, as the CPU backend's reference. qlinear_add computes
// each step in f32 as the plain ops it stands for: (a - a_zp) a_scale + (b - b_zp) b_scale, / c_scale,
// rounded half to even, + c_zp, saturated; its six scalars are first gathered (cast to f32) into a
// small buffer by the copy kernel, so the host never reads them. qlinear_conv and qlinear_matmul
// are the integer product followed by a requantization kernel; matmul_wq dequantizes its blocks
// in a direct kernel.
#include <cmath>
#include <cstring>

#include "conv.hpp"
#include "copy.hpp"
#include "glsl.hpp"
#include "matmul.hpp"

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
       "    int az = (p.flag & 1u) != 0u ? " +
       glsl::load(at, "az_[p.off[3] + ((p.flag & 2u) != 0u ? i : 0)]") +
       " : 0;\n"
       "    int bz = (p.flag & 4u) != 0u ? " +
       glsl::load(bt, "bz_[p.pad0 + ((p.flag & 8u) != 0u ? j : 0)]") +
       " : 0;\n"
       "    int acc = 0;\n"
       "    for (int k = 0; k < K; ++k)\n"
       "      acc += (" +
       glsl::load(at, "a_[ab + i * a_rs + k * a_ks]") + " - az) * (" + glsl::load(bt, "b_[bb + k * b_ks + j * b_cs]") +
       " - bz);\n"
       "    o_[ob + i * N + j] = acc;\n  }\n}\n";
  return s;
}

std::vector<PrimitivePtr> matmul_integer_kernel(VulkanBackend& be, Op& op) {
  const VulkanTensor& a = as_vk(op.inputs[0]);
  const VulkanTensor& b = as_vk(op.inputs[1]);
  auto out = be.alloc(op.outputs[0]);
  const Shape& os = out->shape();
  if (os.numel() == 0) return {out};
  EMBER_CHECK(os.numel() <= INT32_MAX, op.name(), ": too many elements for 32-bit indexing");
  KernelParams p = matmul_params("matmul_integer", *out, a, b);
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
       "  int xz = (r.flags & 1) != 0 ? " +
       glsl::load(xt, "xz_[r.off_xz]") +
       " : 0;\n"
       "  for (uint e = gl_GlobalInvocationID.x; e < r.n; e += step) {\n"
       "    int q = int(e);\n    int o2 = q % r.out_[2]; q /= r.out_[2];\n    int o1 = q % r.out_[1]; q /= r.out_[1];\n"
       "    int o0 = q % r.out_[0]; q /= r.out_[0];\n    int oc = q % r.cout, b = q / r.cout;\n"
       "    int wz = (r.flags & 2) != 0 ? " +
       glsl::load(wt, "wz_[r.off_wz + ((r.flags & 4) != 0 ? oc : 0)]") +
       " : 0;\n"
       "    int g = oc / cout_g;\n    int acc = 0;\n"
       "    for (int c = 0; c < cin_g; ++c) {\n      int ic = g * cin_g + c;\n"
       "      int xb = r.off_x + (b * r.cin + ic) * in_sp, wb = r.off_w + (oc * cin_g + c) * k_sp;\n"
       "      for (int t0 = 0; t0 < r.k[0]; ++t0) {\n"
       "        int i0 = o0 * r.s[0] - r.p[0] + t0 * r.d[0];\n        if (i0 < 0 || i0 >= r.in_[0]) continue;\n"
       "        for (int t1 = 0; t1 < r.k[1]; ++t1) {\n"
       "          int i1 = o1 * r.s[1] - r.p[1] + t1 * r.d[1];\n          if (i1 < 0 || i1 >= r.in_[1]) continue;\n"
       "          for (int t2 = 0; t2 < r.k[2]; ++t2) {\n"
       "            int i2 = o2 * r.s[2] - r.p[2] + t2 * r.d[2];\n            if (i2 < 0 || i2 >= r.in_[2]) continue;\n"
       "            acc += (" +
       glsl::load(xt, "x_[xb + (i0 * r.in_[1] + i1) * r.in_[2] + i2]") + " - xz) * (" +
       glsl::load(wt, "w_[wb + (t0 * r.k[1] + t1) * r.k[2] + t2]") +
       " - wz);\n"
       "          }\n        }\n      }\n    }\n"
       "    o_[int(e)] = acc;\n  }\n}\n";
  return s;
}

std::vector<PrimitivePtr> conv_integer_kernel(VulkanBackend& be, Op& op) {
  auto [x, w, out, p] = conv_launch<ConvIntParams>(be, op);
  const int64_t n = out->numel();
  if (n == 0) return {out};
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
       "    precise float ra = (float(" +
       glsl::load(dt, "a_[ember_index(i, 1)]") +
       ") - za) * sa;\n"
       "    precise float rb = (float(" +
       glsl::load(dt, "b_[ember_index(i, 2)]") +
       ") - zb) * sb;\n"
       "    precise float sum = ra + rb;\n"
       "    precise float q = roundEven(sum / sc) + zc;\n"
       "    o_[ember_index(i, 0)] = " +
       glsl::store(dt, "int(clamp(q, " + lo + ", " + hi + "))") + ";\n  }\n}\n";
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
      copy_strided(
          be, Operand{scalars->buffer, DType::f32, {}, int64_t(i)},
          Operand{as_vk(op.inputs[from[i]]).buffer, op.inputs[from[i]]->dtype(), {}, as_vk(op.inputs[from[i]]).offset},
          Shape{});
  KernelParams p =
      make_params("qlinear_add", out->shape(),
                  {operand_of(*out), broadcast_operand(a, out->shape()), broadcast_operand(b, out->shape())});
  const DType dt = a.dtype();
  VkPipeline pipe = be.shaders().get(op.name(), "qlinear_add/" + std::string(dtype_name(dt)),
                                     [dt] { return qlinear_add_source(dt); });
  be.dispatch(pipe, {out->buffer, a.buffer, b.buffer, scalars->buffer, nullptr, nullptr}, &p, sizeof p,
              be.groups_for(n));
  return {out};
}

// ---- qlinear_conv / qlinear_matmul: the integer product (conv_integer / matmul_integer with the
// zero points), then a requantization kernel per element of output channel c:
//   with y_scale: y = saturate(round_half_even(f32(acc + bias) m) + y_zp), m = x_scale w_scale[c] / y_scale
//   without:      y (f32) = clamp(m f32(acc) + bias, act_min, act_max),   m = x_scale w_scale[c]
// each step in f32 (generic parameters: ia = (inner, channels), fa/fb = the clamp, flag: 1 y_scale,
// 2 bias, 4 w_scale per channel; off[2], off[3]: w_scale's and bias's offsets).
std::string requant_source(DType out, DType bias) {
  std::string s = glsl::header({out, DType::i32, DType::f32, bias});
  s += glsl::buffer(0, out, "o_", false);
  s += glsl::buffer(1, DType::i32, "acc_", true);
  s += glsl::buffer(2, DType::f32, "s_", true);
  s += glsl::buffer(3, DType::f32, "ws_", true);
  s += glsl::buffer(4, bias, "b_", true);
  s += "void main() {\n  uint step = gl_NumWorkGroups.x * gl_WorkGroupSize.x;\n"
       "  float xs = s_[0], ys = s_[1], yz = s_[2];\n"
       "  for (uint i = gl_GlobalInvocationID.x; i < p.n; i += step) {\n"
       "    int c = (int(i) / p.ia.x) % p.ia.y;\n"
       "    float w = ws_[p.off[2] + ((p.flag & 4u) != 0u ? c : 0)];\n"
       "    int acc = acc_[int(i)];\n";
  if (out != DType::f32) {
    const std::string lo = out == DType::u8 ? "0.0" : "-128.0", hi = out == DType::u8 ? "255.0" : "127.0";
    s += "    if ((p.flag & 2u) != 0u) acc += b_[p.off[3] + c];\n"
         "    precise float m = (xs * w) / ys;\n"
         "    precise float q = roundEven(float(acc) * m) + yz;\n"
         "    o_[int(i)] = " +
         glsl::store(out, "int(clamp(q, " + lo + ", " + hi + "))") + ";\n  }\n}\n";
  } else {
    s += "    precise float m = xs * w;\n"
         "    precise float y = m * float(acc) + ((p.flag & 2u) != 0u ? float(b_[p.off[3] + c]) : 0.0);\n"
         "    y = y < p.fa ? p.fa : y;\n    y = y > p.fb ? p.fb : y;\n"
         "    o_[int(i)] = y;\n  }\n}\n";
  }
  return s;
}

std::vector<PrimitivePtr> qlinear_kernel(VulkanBackend& be, Op& op) {
  const bool conv = op.kind == OpKind::qlinear_conv;
  auto in = [&](size_t i) { return op.inputs.size() > i ? op.inputs[i] : nullptr; };
  PrimitivePtr acc;
  double act_min = -INFINITY, act_max = INFINITY;
  if (conv) {
    ConvAttrs ca = op.attr<ConvAttrs>();
    act_min = ca.act_min;
    act_max = ca.act_max;
    ca.act_min = -INFINITY;
    ca.act_max = INFINITY;
    acc = be.execute(make_op(OpKind::conv_integer, {in(0), in(3), in(2), in(5)}, ca))[0];
  } else {
    const auto& sa = op.attr<ScalarAttrs>();
    act_min = sa.a;
    act_max = sa.b;
    acc = be.execute(make_op(OpKind::matmul_integer, {in(0), in(3), in(2), in(5)}))[0];
  }
  auto out = be.alloc(op.outputs[0]);
  const Shape& os = out->shape();
  const int64_t n = os.numel();
  if (n == 0) return {out};
  EMBER_CHECK(n <= INT32_MAX, op.name(), ": too many elements for 32-bit indexing");
  // x_scale, y_scale (1 without), y_zp (0 without) as f32
  auto scalars = be.alloc(TensorMeta{Shape{3}, DType::f32});
  const float defaults[3] = {1.f, 1.f, 0.f};
  const size_t from[3] = {1, 6, 7};
  for (size_t i = 0; i < 3; ++i) {
    if (in(from[i])) {
      copy_strided(be, Operand{scalars->buffer, DType::f32, {}, int64_t(i)},
                   Operand{as_vk(in(from[i])).buffer, in(from[i])->dtype(), {}, as_vk(in(from[i])).offset}, Shape{});
    } else {
      auto c = as_vk_ptr(be.execute(make_op(OpKind::full, {}, CreateAttrs{Shape{}, DType::f32, defaults[i]}))[0]);
      copy_strided(be, Operand{scalars->buffer, DType::f32, {}, int64_t(i)}, operand_of(*c), Shape{});
    }
  }
  VulkanTensorPtr ws = be.contiguous(in(4));
  KernelParams p = make_params(op.name(), os, {operand_of(*out)});
  const int64_t channels = conv ? os[1] : os[os.rank() - 1];
  int64_t inner = 1;
  if (conv)
    for (int d = 2; d < os.rank(); ++d) inner *= os[d];
  p.ia[0] = int32_t(inner);
  p.ia[1] = int32_t(channels);
  p.fa = float(act_min);
  p.fb = float(act_max);
  p.off[2] = int32_t(ws->offset);
  p.flag = (in(6) ? 1u : 0u) | (ws->numel() > 1 ? 4u : 0u);
  BufferPtr bias;
  DType bias_dt = in(6) ? DType::i32 : DType::f32;
  if (in(8)) {
    VulkanTensorPtr b = be.contiguous(in(8));
    bias = b->buffer;
    bias_dt = b->dtype();
    p.off[3] = int32_t(b->offset);
    p.flag |= 2u;
  }
  const DType od = out->dtype();
  const std::string key = "requant/" + std::string(dtype_name(od)) + "/" + std::string(dtype_name(bias_dt));
  VkPipeline pipe = be.shaders().get(op.name(), key, [od, bias_dt] { return requant_source(od, bias_dt); });
  be.dispatch(pipe, {out->buffer, as_vk(acc).buffer, scalars->buffer, ws->buffer, bias, nullptr}, &p, sizeof p,
              be.groups_for(n));
  return {out};
}

// ---- matmul_wq: y [M, N] = x [M, K] W^T, W [N, K] quantized per block along K (4 bits, two per
// byte, or 8; symmetric or with u8 zero points), an invocation per output: per block the sum of
// (q - z) x in f32, scaled once (the CPU backend's reference); with quantize_x, x is first rounded
// to int8 per 32 (scale amax / 127, round half to even) and each 32's integer sum is scaled by
// the block's scale times x's. (generic parameters: ia = (K, N), ib = (block, bits), flag: 1 zero
// points, 2 quantize_x; off[1..3]: x, data, scales; pad0: the zero points)
std::string matmul_wq_source() {
  std::string s = glsl::header({DType::f32, DType::u8});
  s += glsl::buffer(0, DType::f32, "o_", false);
  s += glsl::buffer(1, DType::f32, "x_", true);
  s += glsl::raw_buffer(2, 1, "d_", true);
  s += glsl::buffer(3, DType::f32, "s_", true);
  s += glsl::raw_buffer(4, 1, "z_", true);
  s += R"GLSL(
int ember_q(int n, int k, int K, bool four, bool zp) {
  if (four) {
    int byte = int(d_[p.off[2] + n * (K / 2) + k / 2]);
    int q = (k & 1) != 0 ? byte >> 4 : byte & 15;
    return zp ? q : (q ^ 8) - 8;
  }
  int byte = int(d_[p.off[2] + n * K + k]);
  return zp ? byte : (byte >= 128 ? byte - 256 : byte);
}
void main() {
  uint step = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  int K = p.ia.x, N = p.ia.y, block = p.ib.x, nb = K / block;
  bool four = p.ib.y == 4, zp = (p.flag & 1u) != 0u, qx = (p.flag & 2u) != 0u;
  for (uint e = gl_GlobalInvocationID.x; e < p.n; e += step) {
    int j = int(e) / N, n = int(e) % N;
    int xb = p.off[1] + j * K;
    precise float acc = 0.0;
    for (int b = 0; b < nb; ++b) {
      float sw = s_[p.off[3] + n * nb + b];
      int z = zp ? int(z_[p.pad0 + n * nb + b]) : 0;
      if (!qx) {
        precise float blk = 0.0;
        for (int k = b * block; k < (b + 1) * block; ++k) blk += float(ember_q(n, k, K, four, zp) - z) * x_[xb + k];
        acc += sw * blk;
      } else {
        for (int k0 = b * block; k0 < (b + 1) * block; k0 += 32) {
          float amax = 0.0;
          for (int i = 0; i < 32; ++i) amax = max(amax, abs(x_[xb + k0 + i]));
          float id = amax > 0.0 ? 127.0 / amax : 0.0;
          float sx = amax / 127.0;
          int isum = 0;
          for (int i = 0; i < 32; ++i)
            isum += (ember_q(n, k0 + i, K, four, zp) - z) * int(roundEven(x_[xb + k0 + i] * id));
          acc += float(isum) * (sw * sx);
        }
      }
    }
    o_[int(e)] = acc;
  }
}
)GLSL";
  return s;
}

bool matmul_wq_dtypes(const VulkanBackend& be, const Op&) { return be.has_dtype(DType::u8); }

std::vector<PrimitivePtr> matmul_wq_kernel(VulkanBackend& be, Op& op) {
  const auto& q = op.attr<WeightQuantAttrs>();
  auto out = be.alloc(op.outputs[0]);
  const int64_t n = out->numel();
  if (n == 0) return {out};
  VulkanTensorPtr x = be.contiguous(op.inputs[0]);
  VulkanTensorPtr data = be.contiguous(op.inputs[1]);
  VulkanTensorPtr scales = be.contiguous(op.inputs[2]);
  const int64_t K = x->shape()[-1], N = data->shape()[0];
  if (K == 0) {
    fill_bits(be, *out, 0);
    return {out};
  }
  EMBER_CHECK(n <= INT32_MAX && x->numel() <= INT32_MAX, op.name(), ": too many elements for 32-bit indexing");
  KernelParams p = make_params(op.name(), out->shape(), {operand_of(*out)});
  p.ia[0] = int32_t(K);
  p.ia[1] = int32_t(N);
  p.ib[0] = int32_t(q.block);
  p.ib[1] = q.bits;
  p.off[1] = int32_t(x->offset);
  p.off[2] = int32_t(data->offset);
  p.off[3] = int32_t(scales->offset);
  BufferPtr zp;
  if (op.inputs.size() > 3 && op.inputs[3]) {
    VulkanTensorPtr z = be.contiguous(op.inputs[3]);
    zp = z->buffer;
    p.pad[0] = int32_t(z->offset);
    p.flag |= 1u;
  }
  if (q.quantize_x) p.flag |= 2u;
  VkPipeline pipe = be.shaders().get(op.name(), "matmul_wq/f32", [] { return matmul_wq_source(); });
  be.dispatch(pipe, {out->buffer, x->buffer, data->buffer, scales->buffer, zp, nullptr}, &p, sizeof p,
              be.groups_for(n));
  return {out};
}

}  // namespace

void register_quant_kernels(KernelTable& t, DTypeTable& d) {
  t[size_t(OpKind::matmul_wq)] = matmul_wq_kernel;
  d[size_t(OpKind::matmul_wq)] = matmul_wq_dtypes;
  t[size_t(OpKind::qlinear_conv)] = qlinear_kernel;
  t[size_t(OpKind::qlinear_matmul)] = qlinear_kernel;
  d[size_t(OpKind::qlinear_conv)] = int8_inputs;
  d[size_t(OpKind::qlinear_matmul)] = int8_inputs;
  t[size_t(OpKind::matmul_integer)] = matmul_integer_kernel;
  t[size_t(OpKind::conv_integer)] = conv_integer_kernel;
  t[size_t(OpKind::qlinear_add)] = qlinear_add_kernel;
  for (OpKind k : {OpKind::matmul_integer, OpKind::conv_integer, OpKind::qlinear_add}) d[size_t(k)] = int8_inputs;
}

}  // namespace ember::vulkan
