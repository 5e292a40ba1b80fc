// What attention.cpp (forward) and attention_backward.cpp share: the operands of an attention
// op and a few host helpers.
#pragma once

#include <cmath>
#include <mutex>
#include <set>
#include <vector>

#include "attention_sources.hpp"
#include "cuda_backend.hpp"
#include "matmul.hpp"

namespace ember::cuda {

struct AttnInputs {
  CudaTensorPtr q, k, v, mask;
  int64_t L = 0, S = 0, E = 0, Ev = 0;
  double scale = 1.0;
  bool causal = false;
  Shape batch;
};

// q, k, v are inputs 0..2 of both ops; the optional mask is input `mask_input`.
inline AttnInputs attn_inputs(const Op& op, size_t mask_input) {
  const auto& a = op.attr<AttentionAttrs>();
  AttnInputs in;
  in.q = as_cuda_ptr(op.inputs[0]);
  in.k = as_cuda_ptr(op.inputs[1]);
  in.v = as_cuda_ptr(op.inputs[2]);
  if (op.inputs.size() > mask_input && op.inputs[mask_input]) in.mask = as_cuda_ptr(op.inputs[mask_input]);
  const Shape& qs = in.q->shape();
  const int r = qs.rank();
  in.batch = Shape(qs.begin(), qs.end() - 2);
  in.L = qs[r - 2];
  in.E = qs[r - 1];
  in.S = in.k->shape()[r - 2];
  in.Ev = in.v->shape()[r - 1];
  in.causal = a.causal;
  in.scale = std::isnan(a.scale) ? 1.0 / std::sqrt(double(in.E)) : a.scale;
  return in;
}

inline bool use_tensor_cores(DType dt) { return dt == DType::f16 || dt == DType::bf16; }
// Whether f32 attention runs its products on TF32 tensor cores: where f32 products may
// (set_allow_tf32), as the materialised paths' cuBLASLt products do.
inline bool tf32_attention(DType dt) { return dt == DType::f32 && tf32_allowed(); }

// Batch strides of `t` over dims [0, nb) of `batch` (0 where t's dim is broadcast).
inline std::vector<int64_t> lead_strides(const std::vector<int64_t>& strides, int nb) {
  return std::vector<int64_t>(strides.begin(), strides.begin() + nb);
}

// A contiguous copy of `t` in dtype `dt` (t itself when it already is one).
inline CudaTensorPtr contiguous_as(CudaBackend& be, const CudaTensorPtr& t, DType dt) {
  if (t->dtype() == dt) return contiguous(be, t);
  auto out = alloc(be, {t->shape(), dt});
  copy_view(be, view_of(*out), view_of(*t));
  return out;
}

// How the mask is read (AttnMask::none without one).
inline AttnMask mask_kind_of(const AttnInputs& in) {
  return !in.mask ? AttnMask::none : in.mask->dtype() == DType::boolean ? AttnMask::boolean : AttnMask::additive;
}

// The mask's strides seen from the score shape [batch.., L, S]: one per batch dim (zeros without
// a mask), and its row and column strides.
struct MaskLayout {
  std::vector<int64_t> batch;
  int64_t rs = 0, cs = 0;
};
MaskLayout mask_layout(const AttnInputs& in);

// The materialised paths' masked, scaled softmax over rows [0, rows) of P (n batch entries of
// [L, S] from entry b0, in place; f32 or f64 as `ct`), writing lse where it is not null.
void attention_softmax(CudaBackend& be, Op& op, const AttnInputs& in, DType ct, void* P, float* lse, int64_t rows,
                       int64_t b0);

// C = op(A) op(B) with cuBLASLt, or zeros when the inner dim is empty (C dense: ldc = N and
// stride_c = M N).
void gemm_or_zero(CudaBackend& be, const GemmArgs& g, std::string_view op);

// Launches need more than the default 48 KiB of dynamic shared memory set per function once.
inline void allow_smem(CUfunction f, size_t smem) {
  static std::mutex mu;
  static std::set<CUfunction> configured;
  std::lock_guard<std::mutex> lock(mu);
  if (smem > 48 * 1024 && !configured.count(f)) {
    EMBER_CU_CHECK(driver().cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, int(smem)));
    configured.insert(f);
  }
}

// The device helpers of the tensor-core kernels, forward and backward, for inputs of dtype dt
// (f16 / bf16 on m16n8k16, f32 on TF32 m16n8k8; cp.async, fragment loads, rounding stores,
// fast_exp2 and the warp-level products; attention.cpp): a source adds them after its `T`.
std::string mma_helpers(DType dt);

// cuDNN's fused attention (attention_cudnn.cpp): f16 / bf16 without a mask, where cuDNN has an
// engine for the problem. False (nothing done) where it does not apply; the caller runs its own
// kernels. lse is written / read in the op's convention (natural log, f32, one per query row).
bool cudnn_attention(CudaBackend& be, const Op& op, const AttnInputs& in, CudaTensor& out, CudaTensor& lse);
bool cudnn_attention_backward(CudaBackend& be, const Op& op, const AttnInputs& in, const CudaTensor& out,
                              const CudaTensorPtr& dout, const CudaTensor& lse, CudaTensor& dq, CudaTensor& dk,
                              CudaTensor& dv);

// How many forward and backward calls cuDNN's attention has run in the process (for the tests).
int64_t cudnn_attention_runs();

// The attention_backward kernel (attention_backward.cpp).
std::vector<PrimitivePtr> attention_backward_kernel(CudaBackend& be, Op& op);

}  // namespace ember::cuda
