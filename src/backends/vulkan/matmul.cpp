// matmul: [.., n, k] x [.., k, m] (batch dims broadcast by strides), with the optional bias [m]
// of the floating dtypes added to every row.
//
// One shader per dtype ("matmul/f32"): a workgroup computes a 16 x 16 tile of one batch's
// output at a time (grid-stride over batches and tiles), staging 16 x 16 tiles of both operands
// in shared memory; each of its 128 invocations accumulates two outputs. Operands are read
// through their strides (a transposed operand costs nothing). f16/bf16 accumulate in float and
// round once, integers wrap in their compute type. VK_KHR_cooperative_matrix and tuned tiles
// are for later.
#include "matmul.hpp"

#include "glsl.hpp"

namespace ember::vulkan {

namespace {

bool matmul_dtypes(const VulkanBackend& be, const Op& op) {
  const DType dt = op.in(0).dtype;
  return be.has_dtype(dt) && (is_float(dt) || dt == DType::i32 || dt == DType::i64);
}

std::string matmul_source(DType dt) {
  std::string s = glsl::header({dt});
  s += "#define C " + glsl::compute_type(dt) + "\n";
  s += glsl::buffer(0, dt, "o_", false);
  s += glsl::buffer(1, dt, "a_", true);
  s += glsl::buffer(2, dt, "b_", true);
  s += glsl::buffer(3, dt, "c_", true);
  const auto ld = [&](const std::string& e) { return glsl::load(dt, e); };
  // the geometry in the generic parameters: ia = (n, k), ib = (m, lhs row stride), da = (lhs k
  // stride, rhs k stride), db = (rhs column stride, -), flag = bias; the batch in n/rank/size/st
  s += R"GLSL(
shared C As[16][17];
shared C Bs[16][17];
void main() {
  uint t = gl_LocalInvocationID.x;
  int tx = int(t % 16u), ty = int(t / 16u);
  int N = p.ia.x, K = p.ia.y, M = p.ib.x, a_rs = p.ib.y;
  int a_ks = int(p.da.x), b_ks = int(p.da.y), b_cs = int(p.db.x);
  int tn = (N + 15) / 16, tm = (M + 15) / 16;
  uint per = uint(tn * tm), total = p.n * per;
  for (uint w = gl_WorkGroupID.x; w < total; w += gl_NumWorkGroups.x) {
    uint b = w / per;
    int r = int(w - b * per);
    int i0 = (r / tm) * 16, j0 = (r % tm) * 16;
    int ob = ember_index(b, 0), ab = ember_index(b, 1), bb = ember_index(b, 2);
    C acc0 = C(0), acc1 = C(0);
    for (int k0 = 0; k0 < K; k0 += 16) {
      for (int h = 0; h < 2; ++h) {
        int ii = ty + 8 * h;
        int gi = i0 + ii, gk = k0 + tx;
)GLSL";
  s += "        As[ii][tx] = (gi < N && gk < K) ? " + ld("a_[ab + gi * a_rs + gk * a_ks]") + " : C(0);\n";
  s += "        int gk2 = k0 + ii, gj = j0 + tx;\n";
  s += "        Bs[ii][tx] = (gk2 < K && gj < M) ? " + ld("b_[bb + gk2 * b_ks + gj * b_cs]") + " : C(0);\n";
  s += R"GLSL(      }
      barrier();
      for (int kk = 0; kk < 16; ++kk) {
        acc0 += As[ty][kk] * Bs[kk][tx];
        acc1 += As[ty + 8][kk] * Bs[kk][tx];
      }
      barrier();
    }
    int gj = j0 + tx;
    if (gj < M) {
)GLSL";
  const std::string bias = is_float(dt) ? "(p.flag != 0u ? " + ld("c_[p.off[3] + gj]") + " : C(0))" : "C(0)";
  s += "      C bias = " + bias + ";\n";
  s += "      if (i0 + ty < N) o_[ob + (i0 + ty) * M + gj] = " + glsl::store(dt, "acc0 + bias") + ";\n";
  s += "      if (i0 + ty + 8 < N) o_[ob + (i0 + ty + 8) * M + gj] = " + glsl::store(dt, "acc1 + bias") + ";\n";
  s += "    }\n  }\n}\n";
  return s;
}

std::vector<PrimitivePtr> matmul_kernel(VulkanBackend& be, Op& op) {
  const VulkanTensor& a = as_vk(op.inputs[0]);
  const VulkanTensor& b = as_vk(op.inputs[1]);
  auto out = be.alloc(op.outputs[0]);
  const Shape& os = out->shape();
  if (os.numel() == 0) return {out};
  const int r = os.rank();
  const int64_t N = os[r - 2], M = os[r - 1];
  BufferPtr bias_buf;
  int64_t bias_off = 0;
  if (op.inputs.size() > 2 && op.inputs[2]) {
    VulkanTensorPtr bias = be.contiguous(op.inputs[2]);
    bias_buf = bias->buffer;
    bias_off = bias->offset;
  }
  KernelParams p = matmul_params("matmul", *out, a, b);  // (K = 0 writes the bias or zeros)
  p.flag = bias_buf ? 1u : 0u;
  p.off[3] = int32_t(bias_off);
  const DType dt = out->dtype();
  VkPipeline pipe =
      be.shaders().get("matmul", "matmul/" + std::string(dtype_name(dt)), [dt] { return matmul_source(dt); });
  const int64_t tiles = int64_t(p.n) * ceil_div(N, 16) * ceil_div(M, 16);
  be.dispatch(pipe, {out->buffer, a.buffer, b.buffer, bias_buf}, &p, sizeof p, be.groups_for(tiles, 1));
  return {out};
}

}  // namespace

KernelParams matmul_params(std::string_view op, const VulkanTensor& out, const VulkanTensor& a, const VulkanTensor& b) {
  const Shape& os = out.shape();
  const int r = os.rank();
  const int64_t rows = os[r - 2], cols = os[r - 1], K = a.shape()[-1];
  EMBER_CHECK(rows <= INT32_MAX && cols <= INT32_MAX && K <= INT32_MAX, op, ": dims exceed 32-bit indexing");
  // the batch: out's leading dims, each operand's strides over them (0 where broadcast)
  Shape batch(std::vector<int64_t>(os.begin(), os.end() - 2));
  auto batch_operand = [&](const VulkanTensor& t) {
    std::vector<int64_t> st(size_t(batch.rank()), 0);
    const int tr = t.shape().rank() - 2, lead = batch.rank() - tr;
    for (int d = 0; d < tr; ++d) st[size_t(lead + d)] = t.shape()[d] == 1 ? 0 : t.strides[size_t(d)];
    return Operand{t.buffer, t.dtype(), st, t.offset};
  };
  std::vector<int64_t> ost(size_t(batch.rank()));
  for (int d = 0; d < batch.rank(); ++d) ost[size_t(d)] = out.strides[size_t(d)];
  KernelParams p =
      make_params(op, batch, {Operand{out.buffer, out.dtype(), ost, 0}, batch_operand(a), batch_operand(b)});
  const int ra = a.shape().rank(), rb = b.shape().rank();
  p.ia[0] = int32_t(rows);
  p.ia[1] = int32_t(K);
  p.ib[0] = int32_t(cols);
  p.ib[1] = int32_t(a.strides[size_t(ra - 2)]);
  p.da[0] = uint32_t(int32_t(a.strides[size_t(ra - 1)]));
  p.da[1] = uint32_t(int32_t(b.strides[size_t(rb - 2)]));
  p.db[0] = uint32_t(int32_t(b.strides[size_t(rb - 1)]));
  return p;
}

void register_matmul_kernels(KernelTable& t, DTypeTable& d) {
  t[size_t(OpKind::matmul)] = matmul_kernel;
  d[size_t(OpKind::matmul)] = matmul_dtypes;
}

}  // namespace ember::vulkan
