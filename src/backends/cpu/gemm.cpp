// GEMM driver: dispatch, blocking, packing buffers, threading, and the portable kernel.
//
// Blocked algorithm (Goto / BLIS style), see packed_serial(): for every KC-deep slice of K,
// an MC-row block of A is packed into MR-row micro-panels, then every NC-wide block of B is
// packed into NR-column micro-panels (or read in place when small), and the register-blocked
// micro-kernel multiplies one A micro-panel with each B micro-panel, accumulating straight
// into C. Threads split C into a grid of independent tiles (each packs its own panels) that
// are claimed dynamically. GEMV shapes (M == 1 or N == 1) use dedicated streaming kernels.
#include "gemm.hpp"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <new>
#include <type_traits>
#include <vector>

#include "cpu_features.hpp"
#include "ember/core/error.hpp"
#include "thread_pool.hpp"

namespace ember::cpu {
namespace detail {
namespace {

// Minimum multiply-adds per thread before another thread is used.
constexpr int64_t kMinWorkPerThread = int64_t(1) << 18;
// Rows of A packed at once (the packed block is reused for every NC block of B).
constexpr int64_t kMaxMC = 1536;
// Largest KC x N slice of a unit-column-stride B that is used without packing (in general,
// and when A has at most 2 * MR rows).
constexpr int64_t kDirectBBytes = 384 * 1024;
constexpr int64_t kDirectBSmallMBytes = 4 * 1024 * 1024;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t round_up(int64_t a, int64_t b) { return ceil_div(a, b) * b; }

// Grow-only, 4 KiB aligned, per-thread scratch memory.
class Scratch {
 public:
  Scratch() = default;
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  ~Scratch() { std::free(p_); }
  template <class T>
  T* get(int64_t count) {
    const size_t bytes = static_cast<size_t>(count) * sizeof(T) + 256;
    if (bytes > cap_) {
      std::free(p_);
      p_ = nullptr;
      cap_ = 0;
      const size_t want = static_cast<size_t>(round_up(static_cast<int64_t>(bytes), 4096));
      p_ = std::aligned_alloc(4096, want);
      if (!p_) throw std::bad_alloc();
      cap_ = want;
    }
    return static_cast<T*>(p_);
  }

 private:
  void* p_ = nullptr;
  size_t cap_ = 0;
};

thread_local Scratch t_pack_b;
thread_local Scratch t_pack_a;

// ---------------------------------------------------------------------------------------
// Portable kernel (scalar ISA level and the integer types).

template <class T>
struct AccType {
  using type = T;
};
template <class T>
  requires std::is_integral_v<T>
struct AccType<T> {
  // Unsigned arithmetic wraps; reducing modulo 2^bits at the end gives two's complement
  // wrap-around in T.
  using type = std::conditional_t<(sizeof(T) <= 4), uint32_t, uint64_t>;
};

template <class T>
void scale_c(int64_t M, int64_t N, T beta, T* C, int64_t rsc, int64_t csc) {
  using U = typename AccType<T>::type;
  if (beta == T(1)) return;
  for (int64_t i = 0; i < M; ++i) {
    T* c = C + i * rsc;
    if (beta == T(0)) {
      for (int64_t j = 0; j < N; ++j) c[j * csc] = T(0);
    } else {
      for (int64_t j = 0; j < N; ++j) c[j * csc] = static_cast<T>(U(beta) * U(c[j * csc]));
    }
  }
}

template <class T>
void generic_serial(int64_t M, int64_t N, int64_t K, T alpha, const T* A, int64_t rsa,
                    int64_t csa, const T* B, int64_t rsb, int64_t csb, T beta, T* C,
                    int64_t rsc, int64_t csc) {
  using U = typename AccType<T>::type;
  if (M <= 0 || N <= 0) return;
  if (K <= 0 || alpha == T(0)) {
    scale_c(M, N, beta, C, rsc, csc);
    return;
  }
  const U ua = U(alpha), ub = U(beta);
  auto finish = [&](T* c, U acc) {
    *c = beta == T(0) ? static_cast<T>(ua * acc) : static_cast<T>(ua * acc + ub * U(*c));
  };
  if (rsb == 1 && csb != 1) {
    // Columns of B are contiguous along k: dot products, blocked over columns of B.
    const int64_t jb = std::max<int64_t>(8, (int64_t(1) << 17) / std::max<int64_t>(1, K * int64_t(sizeof(T))));
    for (int64_t j0 = 0; j0 < N; j0 += jb) {
      const int64_t j1 = std::min(N, j0 + jb);
      for (int64_t i = 0; i < M; ++i) {
        const T* a = A + i * rsa;
        for (int64_t j = j0; j < j1; ++j) {
          const T* b = B + j * csb;
          U s0 = 0, s1 = 0, s2 = 0, s3 = 0;
          int64_t k = 0;
          if (csa == 1) {
            for (; k + 4 <= K; k += 4) {
              s0 += U(a[k]) * U(b[k]);
              s1 += U(a[k + 1]) * U(b[k + 1]);
              s2 += U(a[k + 2]) * U(b[k + 2]);
              s3 += U(a[k + 3]) * U(b[k + 3]);
            }
          }
          for (; k < K; ++k) s0 += U(a[k * csa]) * U(b[k]);
          finish(C + i * rsc + j * csc, (s0 + s1) + (s2 + s3));
        }
      }
    }
    return;
  }
  // Row-oriented: acc[j] += A(i,k) * B(k, j) over a block of columns.
  constexpr int64_t kMaxJ = 256;
  U acc[kMaxJ];
  const int64_t jb = std::clamp<int64_t>(
      ((int64_t(1) << 18) / std::max<int64_t>(1, K * int64_t(sizeof(T)))) / 16 * 16, 16, kMaxJ);
  for (int64_t j0 = 0; j0 < N; j0 += jb) {
    const int64_t nb = std::min(jb, N - j0);
    for (int64_t i = 0; i < M; ++i) {
      for (int64_t j = 0; j < nb; ++j) acc[j] = U(0);
      const T* a = A + i * rsa;
      for (int64_t k = 0; k < K; ++k) {
        const U av = U(a[k * csa]);
        const T* b = B + k * rsb + j0 * csb;
        if (csb == 1) {
          for (int64_t j = 0; j < nb; ++j) acc[j] += av * U(b[j]);
        } else {
          for (int64_t j = 0; j < nb; ++j) acc[j] += av * U(b[j * csb]);
        }
      }
      T* c = C + i * rsc + j0 * csc;
      for (int64_t j = 0; j < nb; ++j) finish(c + j * csc, acc[j]);
    }
  }
}

template <class T>
void generic_batched(int64_t batch, int64_t M, int64_t N, int64_t K, T alpha, const T* A,
                     int64_t sa, int64_t rsa, int64_t csa, const T* B, int64_t sb, int64_t rsb,
                     int64_t csb, T beta, T* C, int64_t sc, int64_t rsc, int64_t csc,
                     int max_threads, const GemmEpilogue* ep = nullptr) {
  if (batch <= 0 || M <= 0 || N <= 0) return;
  const int64_t rows = batch * M;
  const int64_t per_row = std::max<int64_t>(1, N * std::max<int64_t>(K, 1));
  auto body = [&](int64_t r0, int64_t r1) {
    while (r0 < r1) {
      const int64_t b = r0 / M, i0 = r0 % M;
      const int64_t i1 = std::min(M, i0 + (r1 - r0));
      generic_serial(i1 - i0, N, K, alpha, A + b * sa + i0 * rsa, rsa, csa, B + b * sb, rsb, csb,
                     beta, C + b * sc + i0 * rsc, rsc, csc);
      if (ep) (*ep)(C + b * sc + i0 * rsc, i1 - i0, N, rsc);
      r0 += i1 - i0;
    }
  };
  if (max_threads <= 1 || rows * per_row < 2 * kMinWorkPerThread) {
    body(0, rows);
    return;
  }
  const int64_t grain = std::max<int64_t>(1, kMinWorkPerThread / per_row);
  parallel_for(0, rows, grain, body);
}

// ---------------------------------------------------------------------------------------
// Packed (SIMD) path.

template <class T>
struct Blocking {
  int64_t kc, nc;
};

GemmBlocking g_blocking_f32[3];

template <class T>
Blocking<T> blocking_for(int isa, const GemmKernelSet<T>& ks) {
  Blocking<T> b{ks.kc, ks.nc};
  if constexpr (std::is_same_v<T, float>) {
    const GemmBlocking& o = g_blocking_f32[isa];
    if (o.kc > 0) b.kc = o.kc;
    if (o.nc > 0) b.nc = o.nc;
  }
  return b;
}

template <class T>
const GemmKernelSet<T>* kernels_for(int isa) {
  if constexpr (std::is_same_v<T, float>) {
    if (isa >= kIsaAvx512) return gemm_kernels_avx512_f32();
    if (isa >= kIsaAvx2) return gemm_kernels_avx2_f32();
#if defined(__wasm_simd128__)
    // A wasm module has no x86 kernels and SIMD128 as its baseline: the scalar level runs it.
    return gemm_kernels_simd128_f32();
#endif
  } else {
    if (isa >= kIsaAvx512) return gemm_kernels_avx512_f64();
    if (isa >= kIsaAvx2) return gemm_kernels_avx2_f64();
  }
  return nullptr;
}

// Single-threaded blocked product of one C tile.
//   for each KC slice of K:
//     for each MC block of rows: pack its A micro-panels (MR x KC each)
//       for each NC block of columns: pack the KC x NC block of B (L2 resident)
//         for each A micro-panel (L1 resident): for each B micro-panel: micro-kernel.
template <class T>
void packed_serial(const GemmKernelSet<T>& ks, Blocking<T> bl, int64_t M, int64_t N, int64_t K,
                   T alpha, const T* A, int64_t rsa, int64_t csa, const T* B, int64_t rsb,
                   int64_t csb, T beta, T* C, int64_t rsc, int64_t csc,
                   const GemmEpilogue* ep = nullptr) {
  const int MR = ks.mr, NR = ks.nr;
  const int64_t nkb = ceil_div(K, bl.kc);
  const int64_t kc_max = round_up(ceil_div(K, nkb), 4);
  const int64_t nnb = ceil_div(N, bl.nc);
  const int64_t nc_max = round_up(ceil_div(N, nnb), NR);
  const int64_t nmb = ceil_div(M, kMaxMC);
  const int64_t mc_max = round_up(ceil_div(M, nmb), MR);
  // Read B in place (no packing) when it has unit column stride and its KC x N slice is
  // small enough to stay in L2, or (few rows of A, so packing would not be amortised) in
  // L3 / the TLB's reach.
  const int64_t b_slice = kc_max * N * int64_t(sizeof(T));
  const bool direct_b =
      csb == 1 && (b_slice <= kDirectBBytes || (M <= 2 * MR && b_slice <= kDirectBSmallMBytes));
  T* bp = direct_b ? nullptr : t_pack_b.get<T>(kc_max * nc_max);
  T* ap = t_pack_a.get<T>(kc_max * mc_max + MR * NR);
  T* tile = ap + kc_max * mc_max;  // for C with non-unit column stride
  const bool c_unit = csc == 1;

  for (int64_t pc = 0; pc < K; pc += kc_max) {
    const int64_t kc = std::min(kc_max, K - pc);
    const T beta_eff = pc == 0 ? beta : T(1);
    const GemmEpilogue* last = pc + kc >= K ? ep : nullptr;  // the blocks are final after this slice
    for (int64_t ic = 0; ic < M; ic += mc_max) {
      const int64_t mc = std::min(mc_max, M - ic);
      for (int64_t ir = 0; ir < mc; ir += MR) {
        const int m = static_cast<int>(std::min<int64_t>(MR, mc - ir));
        ks.pack_a(A + (ic + ir) * rsa + pc * csa, rsa, csa, m, kc, ap + ir * kc);
      }
      for (int64_t jc = 0; jc < N; jc += nc_max) {
        const int64_t nc = std::min(nc_max, N - jc);
        const T* bsrc = B + pc * rsb + jc * csb;
        if (!direct_b) ks.pack_b(bsrc, rsb, csb, kc, nc, bp);
        auto tile_op = [&](int64_t ir, int64_t jr) {
          const int m = static_cast<int>(std::min<int64_t>(MR, mc - ir));
          const int n = static_cast<int>(std::min<int64_t>(NR, nc - jr));
          const T* am = ap + ir * kc;
          const T* bm = direct_b ? bsrc + jr : bp + (jr / NR) * kc * NR;
          const int64_t ldb = direct_b ? rsb : NR;
          T* cp = C + (ic + ir) * rsc + (jc + jr) * csc;
          if (c_unit) {
            ks.kernel(kc, am, bm, ldb, cp, rsc, alpha, beta_eff, m, n);
            return;
          }
          ks.kernel(kc, am, bm, ldb, tile, NR, alpha, T(0), m, n);
          for (int i = 0; i < m; ++i) {
            T* c = cp + i * rsc;
            const T* t = tile + i * NR;
            if (beta_eff == T(0)) {
              for (int j = 0; j < n; ++j) c[j * csc] = t[j];
            } else {
              for (int j = 0; j < n; ++j) c[j * csc] = t[j] + beta_eff * c[j * csc];
            }
          }
        };
        if (direct_b) {
          // Each unpacked B micro-panel is reused from L2 by all A micro-panels.
          for (int64_t jr = 0; jr < nc; jr += NR)
            for (int64_t ir = 0; ir < mc; ir += MR) tile_op(ir, jr);
          if (last) (*last)(C + ic * rsc + jc, mc, nc, rsc);
        } else {
          // Each A micro-panel stays in L1 while the packed B block streams past it; with an
          // epilogue, each finished MR-row strip is handed back while it is in L1/L2.
          for (int64_t ir = 0; ir < mc; ir += MR) {
            for (int64_t jr = 0; jr < nc; jr += NR) tile_op(ir, jr);
            if (last) (*last)(C + (ic + ir) * rsc + jc, std::min<int64_t>(MR, mc - ir), nc, rsc);
          }
        }
      }
    }
  }
}

template <class T>
int threads_for(int64_t work, int max_threads) {
  if (max_threads <= 1 || ThreadPool::in_parallel_region()) return 1;
  const int64_t t = std::min<int64_t>({static_cast<int64_t>(max_threads),
                                       static_cast<int64_t>(ThreadPool::global().size()),
                                       work / kMinWorkPerThread});
  return static_cast<int>(std::max<int64_t>(1, t));
}

// Runs task(t) for every t in [0, ntasks) on up to nt threads. Tasks are claimed dynamically,
// so a thread that was slow to start (or shares its core) simply does fewer of them; nothing
// ever waits for another task, so running everything on one thread is always correct.
template <class F>
void run_tasks(int64_t ntasks, int nt, const F& task) {
  if (nt <= 1 || ntasks <= 1) {
    for (int64_t t = 0; t < ntasks; ++t) task(t);
    return;
  }
  std::atomic<int64_t> next{0};
  parallel_for(0, std::min<int64_t>(nt, ntasks), 1, [&](int64_t, int64_t) {
    for (int64_t t; (t = next.fetch_add(1, std::memory_order_relaxed)) < ntasks;) task(t);
  });
}

template <class T>
void packed_threaded(const GemmKernelSet<T>& ks, Blocking<T> bl, int64_t M, int64_t N,
                     int64_t K, T alpha, const T* A, int64_t rsa, int64_t csa, const T* B,
                     int64_t rsb, int64_t csb, T beta, T* C, int64_t rsc, int64_t csc,
                     int max_threads, const GemmEpilogue* ep) {
  const int nt = threads_for<T>(M * N * K, max_threads);
  if (nt <= 1) {
    packed_serial(ks, bl, M, N, K, alpha, A, rsa, csa, B, rsb, csb, beta, C, rsc, csc, ep);
    return;
  }
  // Split C into a tm x tn grid of independent tasks (each packs its own panels). Estimated
  // cost of a task in cycles: multiply-adds / vector width plus packing (or streaming) of its
  // A rows and B columns. Pick the grid with the smallest estimated makespan
  // and, among grids within 3% of it, the one with the most tasks (finer dynamic balance).
  const int MR = ks.mr, NR = ks.nr;
  const int64_t mu = ceil_div(M, MR), nu = ceil_div(N, NR);
  const double lanes = double(NR) / 2.0;
  const double bpack = csb == 1 ? 0.5 : 1.0, apack = csa == 1 ? 1.0 : 0.5;
  struct Cand {
    int64_t tm, tn;
    double makespan;
  };
  std::vector<Cand> cands;
  const int64_t max_split = 8 * int64_t(nt);
  for (int64_t tm = 1; tm <= std::min(mu, max_split); ++tm) {
    for (int64_t tn = 1; tn <= std::min(nu, max_split / tm); ++tn) {
      const int64_t tasks = tm * tn;
      if (tasks < nt) continue;
      const double mt = double(ceil_div(mu, tm) * MR), ntl = double(ceil_div(nu, tn) * NR);
      // B costs about the same whether it is packed or streamed in place.
      const double cost =
          mt * ntl * double(K) / lanes + apack * mt * double(K) + bpack * double(K) * ntl;
      cands.push_back({tm, tn, double(ceil_div(tasks, nt)) * cost});
    }
  }
  if (cands.empty()) {
    packed_serial(ks, bl, M, N, K, alpha, A, rsa, csa, B, rsb, csb, beta, C, rsc, csc, ep);
    return;
  }
  double best = 1e300;
  for (const Cand& c : cands) best = std::min(best, c.makespan);
  Cand pick{1, 1, 0};
  for (const Cand& c : cands)
    if (c.makespan <= best * 1.03 && c.tm * c.tn > pick.tm * pick.tn) pick = c;
  const int64_t tm = pick.tm, tn = pick.tn;
  run_tasks(tm * tn, nt, [&](int64_t t) {
    const int64_t ti = t / tn, tj = t % tn;
    const int64_t m0 = std::min(M, (mu * ti / tm) * MR), m1 = std::min(M, (mu * (ti + 1) / tm) * MR);
    const int64_t n0 = std::min(N, (nu * tj / tn) * NR), n1 = std::min(N, (nu * (tj + 1) / tn) * NR);
    if (m1 <= m0 || n1 <= n0) return;
    packed_serial(ks, bl, m1 - m0, n1 - n0, K, alpha, A + m0 * rsa, rsa, csa, B + n0 * csb, rsb,
                  csb, beta, C + m0 * rsc + n0 * csc, rsc, csc, ep);
  });
}

// y[j] = alpha * sum_k x[k*incx] * P[k*rs + j*cs] + beta * y[j*incy], j < n. rs or cs is 1.
template <class T>
void gemv_driver(const GemmKernelSet<T>& ks, int64_t n, int64_t k, T alpha, const T* x,
                 int64_t incx, const T* P, int64_t rs, int64_t cs, T beta, T* y, int64_t incy,
                 int max_threads) {
  std::vector<T> xbuf, ybuf;
  if (incx != 1) {
    xbuf.resize(static_cast<size_t>(k));
    for (int64_t i = 0; i < k; ++i) xbuf[static_cast<size_t>(i)] = x[i * incx];
    x = xbuf.data();
  }
  T* yy = y;
  T beta_k = beta;
  if (incy != 1) {
    ybuf.resize(static_cast<size_t>(n));
    yy = ybuf.data();
    beta_k = T(0);
  }
  const int nt = threads_for<T>(n * k, max_threads);
  if (nt <= 1) {
    ks.gemv(n, k, alpha, x, P, rs, cs, beta_k, yy);
  } else {
    // Column blocks claimed dynamically; rows of P (axpy form) are streamed in long runs.
    const int64_t min_blk = cs == 1 ? 256 : 64;
    const int64_t blk = std::max<int64_t>(min_blk, round_up(ceil_div(n, 2 * int64_t(nt)), 64));
    const int64_t ntasks = ceil_div(n, blk);
    run_tasks(ntasks, nt, [&](int64_t t) {
      const int64_t j0 = t * blk, j1 = std::min(n, j0 + blk);
      ks.gemv(j1 - j0, k, alpha, x, P + j0 * cs, rs, cs, beta_k, yy + j0);
    });
  }
  if (incy != 1) {
    for (int64_t j = 0; j < n; ++j)
      y[j * incy] = beta == T(0) ? yy[j] : yy[j] + beta * y[j * incy];
  }
}

template <class T>
void gemm_dispatch(int isa, int64_t M, int64_t N, int64_t K, T alpha, const T* A, int64_t rsa,
                   int64_t csa, const T* B, int64_t rsb, int64_t csb, T beta, T* C, int64_t rsc,
                   int64_t csc, int max_threads, const GemmEpilogue* ep = nullptr) {
  if (M <= 0 || N <= 0) return;
  EMBER_CHECK(!ep || csc == 1, "gemm: an epilogue needs C with unit column stride (got ", csc, ")");
  // the paths without blocks of their own hand C back whole
  auto whole = [&] {
    if (ep) (*ep)(C, M, N, rsc);
  };
  if (K <= 0 || alpha == T(0)) {
    scale_c(M, N, beta, C, rsc, csc);
    whole();
    return;
  }
  const GemmKernelSet<T>* ks = kernels_for<T>(isa);
  if (!ks) {
    generic_batched<T>(1, M, N, K, alpha, A, 0, rsa, csa, B, 0, rsb, csb, beta, C, 0, rsc, csc,
                       max_threads, ep);
    return;
  }
  // Work on a row-major C: a column-major C is handled as C^T = B^T A^T.
  if (csc != 1 && rsc == 1) {
    std::swap(M, N);
    std::swap(A, B);
    const int64_t nrsa = csb, ncsa = rsb, nrsb = csa, ncsb = rsa;
    rsa = nrsa;
    csa = ncsa;
    rsb = nrsb;
    csb = ncsb;
    std::swap(rsc, csc);
  }
  if (M == 1 && (csb == 1 || rsb == 1)) {
    gemv_driver(*ks, N, K, alpha, A, csa, B, rsb, csb, beta, C, csc, max_threads);
    whole();
    return;
  }
  if (N == 1 && (rsa == 1 || csa == 1)) {
    gemv_driver(*ks, M, K, alpha, B, rsb, A, csa, rsa, beta, C, rsc, max_threads);
    whole();
    return;
  }
  packed_threaded(*ks, blocking_for<T>(isa, *ks), M, N, K, alpha, A, rsa, csa, B, rsb, csb, beta,
                  C, rsc, csc, max_threads, ep);
}

template <class T>
void batched_dispatch(int isa, int64_t batch, int64_t M, int64_t N, int64_t K, T alpha,
                      const T* A, int64_t sa, int64_t rsa, int64_t csa, const T* B, int64_t sb,
                      int64_t rsb, int64_t csb, T beta, T* C, int64_t sc, int64_t rsc,
                      int64_t csc, const GemmEpilogue* ep) {
  if (batch <= 0 || M <= 0 || N <= 0) return;
  const int nth = ThreadPool::in_parallel_region() ? 1 : ThreadPool::global().size();
  if (batch == 1 || nth == 1) {
    for (int64_t b = 0; b < batch; ++b)
      gemm_dispatch<T>(isa, M, N, K, alpha, A + b * sa, rsa, csa, B + b * sb, rsb, csb, beta,
                       C + b * sc, rsc, csc, nth, ep);
    return;
  }
  const int64_t work = M * N * std::max<int64_t>(K, 1);
  // Large products that do not divide evenly over the threads: parallelise inside each.
  const bool inside = work >= 64 * kMinWorkPerThread && batch % nth != 0 && batch < 4 * nth;
  if (inside) {
    for (int64_t b = 0; b < batch; ++b)
      gemm_dispatch<T>(isa, M, N, K, alpha, A + b * sa, rsa, csa, B + b * sb, rsb, csb, beta,
                       C + b * sc, rsc, csc, nth, ep);
    return;
  }
  // Many small products: one task per group of products (each product single-threaded).
  const int64_t group = std::max<int64_t>(1, kMinWorkPerThread / work);
  const int64_t ntasks = ceil_div(batch, group);
  run_tasks(ntasks, static_cast<int>(std::min<int64_t>(nth, ntasks)), [&](int64_t t) {
    for (int64_t b = t * group; b < std::min(batch, (t + 1) * group); ++b)
      gemm_dispatch<T>(isa, M, N, K, alpha, A + b * sa, rsa, csa, B + b * sb, rsb, csb, beta,
                       C + b * sc, rsc, csc, 1, ep);
  });
}

int clamp_isa(int isa) { return std::clamp(isa, 0, gemm_best_isa()); }

}  // namespace

int gemm_best_isa() {
  static const int isa = [] {
    const CpuFeatures& f = features();
    return f.avx512 ? kIsaAvx512 : f.avx2 ? kIsaAvx2 : kIsaScalar;
  }();
  return isa;
}

void gemm_set_blocking_f32(int isa, GemmBlocking b) {
  if (isa >= 0 && isa <= 2) g_blocking_f32[isa] = b;
}

void gemm_f32_isa(int isa, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                  int64_t rsa, int64_t csa, const float* B, int64_t rsb, int64_t csb, float beta,
                  float* C, int64_t rsc, int64_t csc) {
  gemm_dispatch<float>(clamp_isa(isa), M, N, K, alpha, A, rsa, csa, B, rsb, csb, beta, C, rsc,
                       csc, ThreadPool::global().size());
}

void gemm_f64_isa(int isa, int64_t M, int64_t N, int64_t K, double alpha, const double* A,
                  int64_t rsa, int64_t csa, const double* B, int64_t rsb, int64_t csb,
                  double beta, double* C, int64_t rsc, int64_t csc) {
  gemm_dispatch<double>(clamp_isa(isa), M, N, K, alpha, A, rsa, csa, B, rsb, csb, beta, C, rsc,
                        csc, ThreadPool::global().size());
}

void gemm_batched_f32_isa(int isa, int64_t batch, int64_t M, int64_t N, int64_t K, float alpha,
                          const float* A, int64_t sa, int64_t rsa, int64_t csa, const float* B,
                          int64_t sb, int64_t rsb, int64_t csb, float beta, float* C,
                          int64_t sc, int64_t rsc, int64_t csc, const GemmEpilogue* ep) {
  batched_dispatch<float>(clamp_isa(isa), batch, M, N, K, alpha, A, sa, rsa, csa, B, sb, rsb, csb,
                          beta, C, sc, rsc, csc, ep);
}

void gemm_batched_f64_isa(int isa, int64_t batch, int64_t M, int64_t N, int64_t K,
                          double alpha, const double* A, int64_t sa, int64_t rsa, int64_t csa,
                          const double* B, int64_t sb, int64_t rsb, int64_t csb, double beta,
                          double* C, int64_t sc, int64_t rsc, int64_t csc,
                          const GemmEpilogue* ep) {
  batched_dispatch<double>(clamp_isa(isa), batch, M, N, K, alpha, A, sa, rsa, csa, B, sb, rsb,
                           csb, beta, C, sc, rsc, csc, ep);
}

}  // namespace detail

void gemm_f32(int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t rsa,
              int64_t csa, const float* B, int64_t rsb, int64_t csb, float beta, float* C,
              int64_t rsc, int64_t csc) {
  detail::gemm_f32_isa(detail::gemm_best_isa(), M, N, K, alpha, A, rsa, csa, B, rsb, csb, beta,
                       C, rsc, csc);
}

void gemm_f64(int64_t M, int64_t N, int64_t K, double alpha, const double* A, int64_t rsa,
              int64_t csa, const double* B, int64_t rsb, int64_t csb, double beta, double* C,
              int64_t rsc, int64_t csc) {
  detail::gemm_f64_isa(detail::gemm_best_isa(), M, N, K, alpha, A, rsa, csa, B, rsb, csb, beta,
                       C, rsc, csc);
}

void gemm_batched_f32(int64_t batch, int64_t M, int64_t N, int64_t K, float alpha,
                      const float* A, int64_t sa, int64_t rsa, int64_t csa, const float* B,
                      int64_t sb, int64_t rsb, int64_t csb, float beta, float* C, int64_t sc,
                      int64_t rsc, int64_t csc, const GemmEpilogue* ep) {
  detail::gemm_batched_f32_isa(detail::gemm_best_isa(), batch, M, N, K, alpha, A, sa, rsa, csa,
                               B, sb, rsb, csb, beta, C, sc, rsc, csc, ep);
}

void gemm_batched_f64(int64_t batch, int64_t M, int64_t N, int64_t K, double alpha,
                      const double* A, int64_t sa, int64_t rsa, int64_t csa, const double* B,
                      int64_t sb, int64_t rsb, int64_t csb, double beta, double* C, int64_t sc,
                      int64_t rsc, int64_t csc, const GemmEpilogue* ep) {
  detail::gemm_batched_f64_isa(detail::gemm_best_isa(), batch, M, N, K, alpha, A, sa, rsa, csa,
                               B, sb, rsb, csb, beta, C, sc, rsc, csc, ep);
}

template <class T>
void gemm_batched_generic(int64_t batch, int64_t M, int64_t N, int64_t K, T alpha, const T* A,
                          int64_t sa, int64_t rsa, int64_t csa, const T* B, int64_t sb,
                          int64_t rsb, int64_t csb, T beta, T* C, int64_t sc, int64_t rsc,
                          int64_t csc) {
  detail::generic_batched<T>(batch, M, N, K, alpha, A, sa, rsa, csa, B, sb, rsb, csb, beta, C, sc,
                             rsc, csc, ThreadPool::global().size());
}

#define EMBER_GEMM_GENERIC_INST(T)                                                              \
  template void gemm_batched_generic<T>(int64_t, int64_t, int64_t, int64_t, T, const T*,         \
                                        int64_t, int64_t, int64_t, const T*, int64_t, int64_t,   \
                                        int64_t, T, T*, int64_t, int64_t, int64_t);
EMBER_GEMM_GENERIC_INST(int64_t)
EMBER_GEMM_GENERIC_INST(int32_t)
EMBER_GEMM_GENERIC_INST(int16_t)
EMBER_GEMM_GENERIC_INST(int8_t)
EMBER_GEMM_GENERIC_INST(uint8_t)
EMBER_GEMM_GENERIC_INST(float)
EMBER_GEMM_GENERIC_INST(double)
#undef EMBER_GEMM_GENERIC_INST

}  // namespace ember::cpu
