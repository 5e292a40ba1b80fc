// The quantized matrix-product ops on the cpu backend: matmul_integer, qlinear_matmul and matmul_wq
// (ops.def).
// Operands are made contiguous, zero points expanded to one value per row / column, batch dims
// broadcast; the products run on qgemm.cpp's kernels.
#include <algorithm>
#include <vector>

#include "conv_integer.hpp"
#include "cpu_backend.hpp"
#include "cpu_features.hpp"
#include "gemm.hpp"
#include "qgemm.hpp"
#include "qlinear.hpp"
#include "thread_pool.hpp"

namespace ember::cpu {
namespace {

// A zero point as `count` i32 values (one value repeated, or one each); zeros when absent.
std::vector<int32_t> zero_points(const Op& op, size_t i, int64_t count) {
  std::vector<int32_t> z(size_t(count), 0);
  if (op.inputs.size() <= i || !op.inputs[i]) return z;
  auto t = contiguous(op.inputs[i]);
  const bool is_signed = t->dtype() == DType::i8;
  const uint8_t* p = t->data<uint8_t>();
  auto value = [&](int64_t k) { return is_signed ? int32_t(int8_t(p[k])) : int32_t(p[k]); };
  for (int64_t k = 0; k < count; ++k) z[size_t(k)] = value(t->numel() == 1 ? 0 : k);
  return z;
}

// Offsets (in matrices) of each output batch entry's operand in a tensor of batch shape `in`,
// broadcast to the output's batch shape `out` (right-aligned, size-1 dims repeat).
std::vector<int64_t> batch_offsets(const Shape& in, const Shape& out) {
  const int ro = out.rank(), ri = in.rank();
  int64_t total = out.numel();
  std::vector<int64_t> offs(size_t(total), 0), idx(size_t(ro), 0);
  std::vector<int64_t> stride(size_t(ro), 0);
  int64_t s = 1;
  for (int d = ro - 1; d >= 0; --d) {
    const int di = d - (ro - ri);
    if (di >= 0 && in[di] != 1) stride[size_t(d)] = s;
    if (di >= 0) s *= in[di];
  }
  for (int64_t e = 0; e < total; ++e) {
    int64_t o = 0;
    for (int d = 0; d < ro; ++d) o += idx[size_t(d)] * stride[size_t(d)];
    offs[size_t(e)] = o;
    for (int d = ro - 1; d >= 0 && ++idx[size_t(d)] == out[d]; --d) idx[size_t(d)] = 0;
  }
  return offs;
}

std::vector<PrimitivePtr> matmul_integer_kernel(CpuBackend&, Op& op) {
  auto out = alloc(op.outputs[0]);
  const Shape& os = op.outputs[0].shape;
  if (os.numel() == 0) return {out};
  auto a = contiguous(op.inputs[0]);
  auto b = contiguous(op.inputs[1]);
  const int64_t M = a->shape()[-2], K = a->shape()[-1], N = b->shape()[-1];
  const std::vector<int32_t> za = zero_points(op, 2, M), zb = zero_points(op, 3, N);
  const Shape ob(os.begin(), os.end() - 2);
  const std::vector<int64_t> oa = batch_offsets(Shape(a->shape().begin(), a->shape().end() - 2), ob);
  const std::vector<int64_t> obb = batch_offsets(Shape(b->shape().begin(), b->shape().end() - 2), ob);
  const uint8_t* ap = a->data<uint8_t>();
  const uint8_t* bp = b->data<uint8_t>();
  int32_t* c = out->data<int32_t>();
  for (size_t e = 0; e < oa.size(); ++e)
    qgemm_u8i8(M, N, K, ap + oa[e] * M * K, K, a->dtype() == DType::i8, bp + obb[e] * K * N, N,
               b->dtype() == DType::i8, za.data(), zb.data(), c + int64_t(e) * M * N, N);
  return {out};
}

// qlinear_matmul's VNNI path: b (the weight) packed once into qgemm_kernel_vnni's B panels with
// their column sums (kept with b's storage), a packed per call; each 8 x 32 tile of the product
// through the epilogue while in cache, with qgemm.cpp's correction of the zero points and the
// +-128 shifts: v = raw + (K alpha beta_j - alpha colsum_j + bias_j) - rowsum_i beta_j.
void qlinear_matmul_vnni(const Int8Operands& o, int64_t M, int64_t K, int64_t N, int32_t a_zp, const int32_t* b_zp,
                         const int32_t* bias, Requant e, uint8_t* y) {
  constexpr int MR = detail::kVnniMR, NR = detail::kVnniNR;
  const int64_t KG = (K + 3) / 4, mp = (M + MR - 1) / MR, np = (N + NR - 1) / NR, panel = KG * NR * 4;
  const bool a_signed = o.x->dtype() == DType::i8, b_signed = o.w->dtype() == DType::i8;
  const uint8_t* b = o.w->data<uint8_t>();
  auto make = [&](uint8_t* dst) {
    auto* colsum = reinterpret_cast<int32_t*>(dst + np * panel);
    parallel_for(0, np, 1, [&](int64_t q0, int64_t q1) {
      for (int64_t q = q0; q < q1; ++q)
        detail::conv_integer_pack_columns_vnni(b, N, K, q * NR, int(std::min<int64_t>(NR, N - q * NR)), b_signed,
                                               reinterpret_cast<int8_t*>(dst + q * panel), colsum + q * NR);
    });
  };
  std::shared_ptr<const Storage> hold;
  std::vector<uint8_t> own;
  const int64_t bytes = np * panel + np * NR * 4;
  const uint8_t* bp = kept_int8_packing(o.w_storage, o.w_offset, {2, b_signed, K, N}, bytes, make, hold);
  if (!bp) own.resize(size_t(bytes)), make(own.data()), bp = own.data();
  const auto* colsum = reinterpret_cast<const int32_t*>(bp + np * panel);
  // a's panels and row sums, in parallel by panel
  std::vector<uint8_t> ap(size_t(vnni_a_bytes(M, K)));
  std::vector<int32_t> rowsum(static_cast<size_t>(M)), c(static_cast<size_t>(N)), q(static_cast<size_t>(N));
  parallel_for(0, mp, std::max<int64_t>(1, 4096 / std::max<int64_t>(K, 1)), [&](int64_t p0, int64_t p1) {
    const int64_t r0 = p0 * MR, r1 = std::min(M, p1 * MR);
    pack_a_vnni(o.x->data<uint8_t>() + r0 * K, K, r1 - r0, K, a_signed, ap.data() + p0 * KG * MR * 4,
                reinterpret_cast<uint32_t*>(rowsum.data()) + r0);
  });
  const uint32_t alpha = uint32_t(a_zp) + (a_signed ? 128u : 0u), kk = uint32_t(K);
  for (int64_t j = 0; j < N; ++j) {
    const uint32_t beta = uint32_t(b_zp[j]) + (b_signed ? 0u : uint32_t(-128));
    q[size_t(j)] = int32_t(beta);
    c[size_t(j)] = int32_t(kk * alpha * beta - alpha * uint32_t(colsum[j]) + uint32_t(bias ? bias[j] : 0));
  }
  e.per_row = false;
  e.r = nullptr;
  e.c = c.data();
  e.p = rowsum.data();
  e.q = q.data();
  const int64_t es = e.elem_bytes();
  // tasks: a column panel times up to 8 row panels
  constexpr int64_t kRowPanels = 8;
  const int64_t tm = (mp + kRowPanels - 1) / kRowPanels;
  parallel_for(0, tm * np, 1, [&](int64_t t0, int64_t t1) {
    alignas(64) int32_t tile[MR * NR];
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t qn = t % np, pm0 = (t / np) * kRowPanels, pm1 = std::min(mp, pm0 + kRowPanels);
      const int64_t j0 = qn * NR;
      const int n = int(std::min<int64_t>(NR, N - j0));
      for (int64_t qm = pm0; qm < pm1; ++qm) {
        const int64_t i0 = qm * MR;
        const int m = int(std::min<int64_t>(MR, M - i0));
        detail::qgemm_kernel_vnni(KG, ap.data() + qm * KG * MR * 4, reinterpret_cast<const int8_t*>(bp + qn * panel),
                                  tile, NR, m, n, false);
        requant_tile(e, tile, NR, i0, j0, m, n, y + (i0 * N + j0) * es, N);
      }
    }
  });
}

std::vector<PrimitivePtr> qlinear_matmul_kernel(CpuBackend&, Op& op) {
  auto out = alloc(op.outputs[0]);
  if (out->numel() == 0) return {out};
  const Int8Operands o = int8_operands(op, 0, 3);
  const int64_t M = o.x->shape()[0], K = o.x->shape()[1], N = o.w->shape()[1];
  const std::vector<int32_t> za = zero_points(op, 2, 1), zb = zero_points(op, 5, N);
  std::vector<float> mult, f32_bias;
  std::vector<int32_t> i32_bias;
  const auto& clamp = op.attr<ScalarAttrs>();
  Requant e = qlinear_epilogue(op, N, clamp.a, clamp.b, mult, f32_bias, i32_bias);
  e.per_row = false;
  const int32_t* bias = i32_bias.empty() ? nullptr : i32_bias.data();
  auto* y = static_cast<uint8_t*>(out->raw());
  if (K > 0 && detail::qgemm_best_isa() >= detail::kIsaAvx512 && features().avx512vnni)
    return qlinear_matmul_vnni(o, M, K, N, za[0], zb.data(), bias, e, y), std::vector<PrimitivePtr>{out};
  // elsewhere: the i32 product, then the epilogue over it
  std::vector<int32_t> acc(size_t(M * N));
  qgemm_u8i8(M, N, K, o.x->data<uint8_t>(), K, o.x->dtype() == DType::i8, o.w->data<uint8_t>(), N,
             o.w->dtype() == DType::i8, std::vector<int32_t>(size_t(M), za[0]).data(), zb.data(), acc.data(), N);
  e.c = bias;
  requant_tile(e, acc.data(), N, 0, 0, M, N, y, N);
  return {out};
}

std::vector<PrimitivePtr> matmul_wq_kernel(CpuBackend&, Op& op) {
  auto out = alloc(op.outputs[0]);
  if (out->numel() == 0) return {out};
  const auto& q = op.attr<WeightQuantAttrs>();
  auto x = contiguous(op.inputs[0]);
  auto data = contiguous(op.inputs[1]);
  auto scales = contiguous(op.inputs[2]);
  CpuTensorPtr zp = op.inputs.size() > 3 && op.inputs[3] ? contiguous(op.inputs[3]) : nullptr;
  QuantWeight w;
  w.K = x->shape()[-1];
  w.N = data->shape()[0];
  w.bits = q.bits;
  w.block = q.block;
  w.data = data->data<uint8_t>();
  w.scales = scales->data<float>();
  w.zp = zp ? zp->data<uint8_t>() : nullptr;
  w.quantize_x = q.quantize_x;
  const int64_t M = w.K == 0 ? 0 : x->numel() / w.K;
  if (w.K == 0) {
    std::fill(out->data<float>(), out->data<float>() + out->numel(), 0.f);
    return {out};
  }
  matmul_wq_f32(w, M, x->data<float>(), out->data<float>());
  return {out};
}

}  // namespace

void register_quantized_kernels(KernelTable& t) {
  t[size_t(OpKind::matmul_integer)] = matmul_integer_kernel;
  t[size_t(OpKind::matmul_wq)] = matmul_wq_kernel;
  t[size_t(OpKind::qlinear_matmul)] = qlinear_matmul_kernel;
}

}  // namespace ember::cpu
