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
#include <vector>

#include "cpu_backend.hpp"
#include "gemm.hpp"
#include "thread_pool.hpp"
#include "vec/vec_math.hpp"

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

// Direct loops for tiny products (at most kNaiveMacs multiply-adds, so N <= kNaiveMacs),
// accumulating a row of C in the compute type (unsigned for integers: wrap-around without UB).
constexpr int64_t kNaiveMacs = 4096;
constexpr int64_t kNaivePerProduct = 512;

template <class T>
struct NaiveAcc {
  using type = compute_t<T>;
};
template <class T>
  requires std::is_integral_v<T>
struct NaiveAcc<T> {
  using type = std::conditional_t<(sizeof(T) <= 4), uint32_t, uint64_t>;
};

// Products [e0, e1) of the flattened batch (outer entries x inner entries).
template <class T>
void matmul_naive(const MatmulPlan& p, const T* A, const T* B, T* C, int64_t e0, int64_t e1) {
  using Acc = typename NaiveAcc<T>::type;
  Acc acc[kNaiveMacs];
  for (int64_t e = e0; e < e1; ++e) {
    int64_t oa, ob, oc;
    p.outer_offsets(e / p.inner.size, oa, ob, oc);
    const int64_t bi = e % p.inner.size;
    const T* a = A + oa + bi * p.inner.sa;
    const T* b = B + ob + bi * p.inner.sb;
    T* c = C + oc + bi * p.inner.sc;
    for (int64_t i = 0; i < p.M; ++i) {
      for (int64_t j = 0; j < p.N; ++j) acc[j] = Acc(0);
      for (int64_t k = 0; k < p.K; ++k) {
        const Acc av = static_cast<Acc>(a[i * p.rsa + k * p.csa]);
        const T* __restrict bk = b + k * p.rsb;
        if (p.csb == 1) {
          for (int64_t j = 0; j < p.N; ++j) acc[j] += av * static_cast<Acc>(bk[j]);
        } else {
          for (int64_t j = 0; j < p.N; ++j) acc[j] += av * static_cast<Acc>(bk[j * p.csb]);
        }
      }
      T* ci = c + i * p.rsc;  // csc == 1
      for (int64_t j = 0; j < p.N; ++j) ci[j] = convert_scalar<T>(acc[j]);
    }
  }
}

// One gemm_batched call (T is float, double or an integer type).
// (ep: f32 / f64 only.)
template <class T>
void batched(int64_t batch, const MatmulPlan& p, const T* A, int64_t sa, const T* B, int64_t sb, T* C,
             int64_t sc, const GemmEpilogue* ep) {
  if constexpr (std::is_same_v<T, float>) {
    gemm_batched_f32(batch, p.M, p.N, p.K, 1.0f, A, sa, p.rsa, p.csa, B, sb, p.rsb, p.csb, 0.0f, C, sc, p.rsc,
                     p.csc, ep);
  } else if constexpr (std::is_same_v<T, double>) {
    gemm_batched_f64(batch, p.M, p.N, p.K, 1.0, A, sa, p.rsa, p.csa, B, sb, p.rsb, p.csb, 0.0, C, sc, p.rsc,
                     p.csc, ep);
  } else {
    gemm_batched_generic<T>(batch, p.M, p.N, p.K, T(1), A, sa, p.rsa, p.csa, B, sb, p.rsb, p.csb, T(0), C, sc,
                            p.rsc, p.csc);
  }
}

template <class T>
void run_plan(const MatmulPlan& p, const T* A, const T* B, T* C, const GemmEpilogue* ep = nullptr) {
  if (p.outer.empty()) {
    batched<T>(p.inner.size, p, A, p.inner.sa, B, p.inner.sb, C, p.inner.sc, ep);
    return;
  }
  const int64_t no = p.outer_count();
  const int64_t work = p.inner.size * p.M * p.N * std::max<int64_t>(p.K, 1);
  auto body = [&](int64_t o0, int64_t o1) {
    for (int64_t o = o0; o < o1; ++o) {
      int64_t oa, ob, oc;
      p.outer_offsets(o, oa, ob, oc);
      batched<T>(p.inner.size, p, A + oa, p.inner.sa, B + ob, p.inner.sb, C + oc, p.inner.sc, ep);
    }
  };
  // Small products: spread the outer entries over the threads (the GEMMs then run serially);
  // large ones parallelise inside each GEMM.
  if (work < (int64_t(1) << 20) && no > 1)
    parallel_for(0, no, std::max<int64_t>(1, (int64_t(1) << 17) / std::max<int64_t>(work, 1)), body);
  else
    body(0, no);
}

// f16 / bf16 -> f32 conversion of a contiguous run.
template <class H>
void half_run_to_f32(const H* src, float* dst, int64_t n) {
  if constexpr (std::is_same_v<H, f16>)
    vec::f16_to_f32(reinterpret_cast<const uint16_t*>(src), dst, n);
  else
    vec::bf16_to_f32(reinterpret_cast<const uint16_t*>(src), dst, n);
}

// f16 / bf16 -> f32 contiguous copy of a (strided) tensor.
template <class H>
CpuTensorPtr to_f32(const CpuTensor& t) {
  auto out = alloc({t.shape(), DType::f32});
  float* d = out->data<float>();
  if (t.is_contiguous()) {
    const H* s = t.data<H>();
    parallel_for(0, t.numel(), 65536, [&](int64_t i0, int64_t i1) { half_run_to_f32(s + i0, d + i0, i1 - i0); });
    return out;
  }
  strided_loop(t.shape(),
               {{static_cast<char*>(out->raw()), 4, out->strides}, {static_cast<char*>(t.raw()), 2, t.strides}},
               [](char** ptr, const int64_t* st, int64_t n) {
                 float* dst = reinterpret_cast<float*>(ptr[0]);
                 const char* src = ptr[1];
                 if (st[1] == 2) {
                   half_run_to_f32(reinterpret_cast<const H*>(src), dst, n);
                   return;
                 }
                 for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<float>(*reinterpret_cast<const H*>(src + i * st[1]));
               });
  return out;
}

// out (contiguous, rows of n) += bias [n], rounded as the elementwise add rounds.
template <class T>
void add_bias_rows(T* out, const T* bias, int64_t total, int64_t n) {
  using A = compute_t<T>;
  parallel_for(0, total / n, std::max<int64_t>(1, 32768 / n), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      T* o = out + r * n;
      for (int64_t j = 0; j < n; ++j) o[j] = T(A(o[j]) + A(bias[j]));
    }
  });
}

}  // namespace

bool matmul_into(const Op& op, CpuTensor& out_t, const GemmEpilogue* ep) {
  const TensorMeta& om = op.outputs[0];
  CpuTensor* out = &out_t;
  const int64_t total = om.shape.numel();
  bool handed_back = false;
  if (total == 0) return false;
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
      // Tiny products (alone, or many of them): direct loops, spread over the batch.
      const int64_t per = plan.M * plan.N * plan.K;
      if (macs <= kNaiveMacs || (per <= kNaivePerProduct && plan.N <= kNaiveMacs)) {
        const int64_t entries = plan.outer_count() * plan.inner.size;
        const T* ap = a.data<T>();
        const T* bp = b.data<T>();
        T* cp = out->data<T>();
        if (macs <= (int64_t(1) << 16)) {
          matmul_naive<T>(plan, ap, bp, cp, 0, entries);
        } else {
          parallel_for(0, entries, std::max<int64_t>(1, (int64_t(1) << 15) / per),
                       [&](int64_t e0, int64_t e1) { matmul_naive<T>(plan, ap, bp, cp, e0, e1); });
        }
        return;
      }
      if constexpr (is_half_v<T>) {
        // Convert both operands once (contiguous f32), multiply in f32, round the result once.
        auto af = to_f32<T>(a);
        auto bf = to_f32<T>(b);
        const MatmulPlan pf = make_plan(af->shape(), af->strides, bf->shape(), bf->strides, om.shape);
        auto cf = alloc({om.shape, DType::f32});
        run_plan<float>(pf, af->template data<float>(), bf->template data<float>(), cf->template data<float>());
        auto* c = reinterpret_cast<uint16_t*>(out->data<T>());
        const float* s = cf->template data<float>();
        parallel_for(0, total, 65536, [&](int64_t i0, int64_t i1) {
          if constexpr (std::is_same_v<T, f16>)
            vec::f32_to_f16(s + i0, c + i0, i1 - i0);
          else
            vec::f32_to_bf16(s + i0, c + i0, i1 - i0);
        });
      } else {
        constexpr bool packed = std::is_same_v<T, float> || std::is_same_v<T, double>;
        run_plan<T>(plan, a.data<T>(), b.data<T>(), out->data<T>(), packed ? ep : nullptr);
        handed_back = packed && ep;
      }
    }
  });
  return handed_back;
}

namespace {

// The product of inputs 0 and 1.
CpuTensorPtr matmul_product(const Op& op) {
  auto out = alloc(op.outputs[0]);
  matmul_into(op, *out, nullptr);
  return out;
}


// The product, then a bias (optional input 2) added to each row: the CPU has no epilogue to
// fold it into.
std::vector<PrimitivePtr> matmul_kernel(CpuBackend&, Op& op) {
  CpuTensorPtr out = matmul_product(op);
  if (op.inputs.size() > 2 && op.inputs[2] && out->numel() > 0) {
    auto b = contiguous(op.inputs[2]);
    const int64_t n = op.outputs[0].shape[-1];
    visit_float_dtype(out->dtype(), op.name(),
                      [&]<class T>() { add_bias_rows<T>(out->data<T>(), b->data<T>(), out->numel(), n); });
  }
  return {out};
}

}  // namespace

void register_linalg_kernels(KernelTable& t) { t[size_t(OpKind::matmul)] = matmul_kernel; }

}  // namespace ember::cpu
