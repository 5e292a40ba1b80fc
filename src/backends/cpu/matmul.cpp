// Linear-algebra kernels: matmul.
//
// matmul: [..., n, k] x [..., k, m] -> [..., n, m] with broadcast batch dims. The operands
// are read in place through their strides (transposed / permuted / expanded views need no
// copy); the batch dims of both operands and the (contiguous) output are collapsed into as
// few (size, stride_a, stride_b, stride_c) dims as possible, so the common cases become one
// gemm_batched call (or a single large GEMM when the rhs is shared by every batch entry).
// f32 / f64 use the packed SIMD GEMM, integers the portable kernel (wrap-around), f16 / bf16
// are converted to f32, multiplied in f32 and rounded once. Tiny products use a direct loop.
#include <algorithm>
#include <cstring>
#include <vector>

#include "cpu_backend.hpp"
#include "gemm.hpp"
#include "thread_pool.hpp"

namespace ember::cpu {

namespace {

// One collapsed batch dim: element b of it is at a + b*sa, b + b*sb, c + b*sc.
struct BatchDim {
  int64_t size, sa, sb, sc;
};

struct MatmulPlan {
  int64_t M = 0, N = 0, K = 0;
  int64_t rsa = 0, csa = 0, rsb = 0, csb = 0, rsc = 0, csc = 1;
  // Innermost collapsed batch dim (size 1 when there is no batch) and the remaining outer
  // dims, outermost first (usually empty).
  BatchDim inner{1, 0, 0, 0};
  std::vector<BatchDim> outer;
  int64_t outer_count() const {
    int64_t n = 1;
    for (const auto& d : outer) n *= d.size;
    return n;
  }
  // Offsets (elements) of outer batch entry `o` (row-major over `outer`).
  void outer_offsets(int64_t o, int64_t& oa, int64_t& ob, int64_t& oc) const {
    oa = ob = oc = 0;
    for (int d = int(outer.size()) - 1; d >= 0; --d) {
      int64_t i = o % outer[d].size;
      o /= outer[d].size;
      oa += i * outer[d].sa;
      ob += i * outer[d].sb;
      oc += i * outer[d].sc;
    }
  }
};

// sa / sb: strides of the operands (elements); the output is contiguous with shape `out`.
MatmulPlan make_plan(const Shape& as, const std::vector<int64_t>& sa, const Shape& bs,
                     const std::vector<int64_t>& sb, const Shape& out) {
  MatmulPlan p;
  const int ra = as.rank(), rb = bs.rank(), ro = out.rank();
  p.M = as[-2];
  p.K = as[-1];
  p.N = bs[-1];
  p.rsa = sa[ra - 2];
  p.csa = sa[ra - 1];
  p.rsb = sb[rb - 2];
  p.csb = sb[rb - 1];
  p.rsc = p.N;
  p.csc = 1;
  // Strides of size-1 matrix dims are meaningless: give them values that keep fast paths.
  if (p.M == 1) p.rsa = p.K * p.csa;
  if (p.K == 1) {
    p.csa = 1;
    p.rsb = p.N == 1 ? 1 : p.csb * p.N;
  }
  if (p.N == 1) p.csb = 1;

  // Batch dims, right-aligned, collapsed.
  const int nb = ro - 2;
  std::vector<BatchDim> dims;
  int64_t sc = p.M * p.N;
  std::vector<BatchDim> rev;  // innermost first
  for (int d = nb - 1; d >= 0; --d) {
    const int64_t size = out[d];
    const int da = d - (nb - (ra - 2)), db = d - (nb - (rb - 2));
    const int64_t xa = (da >= 0 && as[da] != 1) ? sa[da] : 0;
    const int64_t xb = (db >= 0 && bs[db] != 1) ? sb[db] : 0;
    const int64_t xc = sc;
    sc *= size;
    if (size == 1) continue;
    if (!rev.empty()) {
      BatchDim& in = rev.back();
      if (xa == in.sa * in.size && xb == in.sb * in.size && xc == in.sc * in.size) {
        in.size *= size;
        continue;
      }
    }
    rev.push_back({size, xa, xb, xc});
  }
  if (!rev.empty()) {
    p.inner = rev.front();
    for (size_t i = rev.size(); i-- > 1;) p.outer.push_back(rev[i]);
  }
  // The rhs is shared by every batch entry and the lhs rows continue across the batch: one
  // tall GEMM (the output is contiguous, so its rows continue as well).
  if (p.outer.empty() && p.inner.size > 1 && p.inner.sb == 0 &&
      (p.inner.sa == p.M * p.rsa || p.M == 1)) {
    p.rsa = p.M == 1 ? p.inner.sa : p.rsa;
    p.M *= p.inner.size;
    p.inner = {1, 0, 0, 0};
  }
  return p;
}

// Direct triple loop for tiny products, accumulating in the compute type.
template <class T>
void matmul_naive(const MatmulPlan& p, const T* A, const T* B, T* C) {
  using A_t = compute_t<T>;
  const int64_t no = p.outer_count();
  for (int64_t o = 0; o < no; ++o) {
    int64_t oa, ob, oc;
    p.outer_offsets(o, oa, ob, oc);
    for (int64_t bi = 0; bi < p.inner.size; ++bi) {
      const T* a = A + oa + bi * p.inner.sa;
      const T* b = B + ob + bi * p.inner.sb;
      T* c = C + oc + bi * p.inner.sc;
      for (int64_t i = 0; i < p.M; ++i) {
        for (int64_t j = 0; j < p.N; ++j) {
          A_t acc = A_t(0);
          for (int64_t k = 0; k < p.K; ++k) {
            if constexpr (std::is_integral_v<T>) {
              // Wrap-around like the GEMM (unsigned arithmetic avoids signed overflow UB).
              using U = std::make_unsigned_t<std::conditional_t<(sizeof(T) < 4), int32_t, T>>;
              acc = static_cast<T>(U(acc) + U(a[i * p.rsa + k * p.csa]) * U(b[k * p.rsb + j * p.csb]));
            } else {
              acc += static_cast<A_t>(a[i * p.rsa + k * p.csa]) * static_cast<A_t>(b[k * p.rsb + j * p.csb]);
            }
          }
          c[i * p.rsc + j * p.csc] = convert_scalar<T>(acc);
        }
      }
    }
  }
}

// One gemm_batched call (T is float, double or an integer type).
template <class T>
void batched(int64_t batch, const MatmulPlan& p, const T* A, int64_t sa, const T* B, int64_t sb, T* C,
             int64_t sc) {
  if constexpr (std::is_same_v<T, float>) {
    gemm_batched_f32(batch, p.M, p.N, p.K, 1.0f, A, sa, p.rsa, p.csa, B, sb, p.rsb, p.csb, 0.0f, C, sc, p.rsc,
                     p.csc);
  } else if constexpr (std::is_same_v<T, double>) {
    gemm_batched_f64(batch, p.M, p.N, p.K, 1.0, A, sa, p.rsa, p.csa, B, sb, p.rsb, p.csb, 0.0, C, sc, p.rsc,
                     p.csc);
  } else {
    gemm_batched_generic<T>(batch, p.M, p.N, p.K, T(1), A, sa, p.rsa, p.csa, B, sb, p.rsb, p.csb, T(0), C, sc,
                            p.rsc, p.csc);
  }
}

template <class T>
void run_plan(const MatmulPlan& p, const T* A, const T* B, T* C) {
  if (p.outer.empty()) {
    batched<T>(p.inner.size, p, A, p.inner.sa, B, p.inner.sb, C, p.inner.sc);
    return;
  }
  const int64_t no = p.outer_count();
  const int64_t work = p.inner.size * p.M * p.N * std::max<int64_t>(p.K, 1);
  auto body = [&](int64_t o0, int64_t o1) {
    for (int64_t o = o0; o < o1; ++o) {
      int64_t oa, ob, oc;
      p.outer_offsets(o, oa, ob, oc);
      batched<T>(p.inner.size, p, A + oa, p.inner.sa, B + ob, p.inner.sb, C + oc, p.inner.sc);
    }
  };
  // Small products: spread the outer entries over the threads (the GEMMs then run serially);
  // large ones parallelise inside each GEMM.
  if (work < (int64_t(1) << 20) && no > 1)
    parallel_for(0, no, std::max<int64_t>(1, (int64_t(1) << 17) / std::max<int64_t>(work, 1)), body);
  else
    body(0, no);
}

// f16 / bf16 -> f32 contiguous copy of a (strided) tensor.
template <class H>
CpuTensorPtr to_f32(const CpuTensor& t) {
  auto out = alloc({t.shape(), DType::f32});
  strided_loop(t.shape(),
               {{static_cast<char*>(out->raw()), 4, out->strides}, {static_cast<char*>(t.raw()), 2, t.strides}},
               [](char** ptr, const int64_t* st, int64_t n) {
                 float* d = reinterpret_cast<float*>(ptr[0]);
                 const char* s = ptr[1];
                 for (int64_t i = 0; i < n; ++i) {
                   uint16_t bits;
                   std::memcpy(&bits, s + i * st[1], 2);
                   d[i] = H::to_float(bits);
                 }
               });
  return out;
}

std::vector<PrimitivePtr> matmul_kernel(CpuBackend&, Op& op) {
  const TensorMeta& om = op.outputs[0];
  auto out = alloc(om);
  const int64_t total = om.shape.numel();
  if (total == 0) return {out};
  const auto& a = as_cpu(op.inputs[0]);
  const auto& b = as_cpu(op.inputs[1]);
  const MatmulPlan plan = make_plan(a.shape(), a.strides, b.shape(), b.strides, om.shape);
  const int64_t macs = total * std::max<int64_t>(plan.K, 1);

  visit_dtype(om.dtype, [&]<class T>() {
    if constexpr (std::is_same_v<T, bool>) {
      EMBER_FAIL("matmul: bool tensors are not supported");
    } else {
      if (plan.K == 0) {
        T* c = out->data<T>();
        std::fill(c, c + total, convert_scalar<T>(0));
        return;
      }
      if (macs <= 4096) {
        matmul_naive<T>(plan, a.data<T>(), b.data<T>(), out->data<T>());
        return;
      }
      if constexpr (is_half_v<T>) {
        // Convert both operands once (contiguous f32), multiply in f32, round the result once.
        auto af = to_f32<T>(a);
        auto bf = to_f32<T>(b);
        const MatmulPlan pf = make_plan(af->shape(), af->strides, bf->shape(), bf->strides, om.shape);
        std::vector<float> cf(static_cast<size_t>(total));
        run_plan<float>(pf, af->template data<float>(), bf->template data<float>(), cf.data());
        T* c = out->data<T>();
        const float* s = cf.data();
        parallel_for(0, total, 32768, [&](int64_t i0, int64_t i1) {
          for (int64_t i = i0; i < i1; ++i) c[i] = T(s[i]);
        });
      } else {
        run_plan<T>(plan, a.data<T>(), b.data<T>(), out->data<T>());
      }
    }
  });
  return {out};
}

}  // namespace

void register_linalg_kernels(KernelTable& t) { t[size_t(OpKind::matmul)] = matmul_kernel; }

}  // namespace ember::cpu
