// The quantized matrix-product ops on the cpu backend: matmul_integer and matmul_wq (ops.def).
// Operands are made contiguous, zero points expanded to one value per row / column, batch dims
// broadcast; the products run on qgemm.cpp's kernels.
#include <algorithm>
#include <vector>

#include "cpu_backend.hpp"
#include "qgemm.hpp"

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
}

}  // namespace ember::cpu
