// Quantized GEMM / GEMV drivers (qgemm.hpp): dispatch, packing, tiling, threading, and the
// portable kernels that every SIMD path must match.
//
// qgemm_u8i8: both operands are packed whole (in parallel) into the micro-kernel's layout, then
// threads claim MC x NC tiles of C and run the micro-kernel over KC-deep slices of K. The VNNI
// path packs A' = a (+128 when a is i8) as u8 and B' = b (-128 when b is u8) as i8, so that
//   sum_k (a - za_i)(b - zb_j) = sum_k (A' - alpha_i)(B' - beta_j)
//     = sum_k A'B' - beta_j rowsum_i(A') - alpha_i colsum_j(B') + K alpha_i beta_j,
// with alpha_i = za_i (+128 for i8 a) and beta_j = zb_j (-128 for u8 b); the sums of the packed
// bytes come out of the packing. Every sum wraps modulo 2^32 (unsigned arithmetic), so the
// result is exact modulo 2^32 on every path.
#include "qgemm.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <functional>
#include <type_traits>
#include <cstring>
#include <vector>

#include "conv_integer.hpp"
#include "cpu_features.hpp"
#include "gemm.hpp"
#include "qlinear.hpp"
#include "thread_pool.hpp"

namespace ember::cpu {
namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The operands of one integer product.
struct Problem {
  int64_t M, N, K;
  const uint8_t* a;
  int64_t lda;
  bool a_signed;
  const uint8_t* b;
  int64_t ldb;
  bool b_signed;
  const int32_t* za;
  const int32_t* zb;
  int32_t* c;
  int64_t ldc;
  int32_t a_at(int64_t i, int64_t k) const {
    const uint8_t v = a[i * lda + k];
    return a_signed ? int32_t(int8_t(v)) : int32_t(v);
  }
  int32_t b_at(int64_t k, int64_t j) const {
    const uint8_t v = b[k * ldb + j];
    return b_signed ? int32_t(int8_t(v)) : int32_t(v);
  }
};

// The portable kernel: rows of C over the threads, each a row of unsigned (wrapping) sums.
void qgemm_scalar(const Problem& p) {
  parallel_for(0, p.M, std::max<int64_t>(1, (int64_t(1) << 16) / std::max<int64_t>(p.N * p.K, 1)),
               [&](int64_t i0, int64_t i1) {
                 std::vector<uint32_t> acc(size_t(p.N));
                 for (int64_t i = i0; i < i1; ++i) {
                   std::fill(acc.begin(), acc.end(), 0u);
                   for (int64_t k = 0; k < p.K; ++k) {
                     const uint32_t av = uint32_t(p.a_at(i, k) - p.za[i]);
                     if (av == 0) continue;
                     for (int64_t j = 0; j < p.N; ++j) acc[size_t(j)] += av * uint32_t(p.b_at(k, j) - p.zb[j]);
                   }
                   for (int64_t j = 0; j < p.N; ++j) p.c[i * p.ldc + j] = int32_t(acc[size_t(j)]);
                 }
               });
}

// The two packed paths: element types, tile sizes, K grouping, what is packed, the micro-kernel.
struct VnniPath {
  using AE = uint8_t;
  using BE = int8_t;
  static constexpr int MR = detail::kVnniMR, NR = detail::kVnniNR, G = 4;
  static constexpr bool corrected = true;
  static AE a_value(const Problem& p, int64_t i, int64_t k) {
    return uint8_t(p.a[i * p.lda + k] ^ (p.a_signed ? 0x80 : 0));
  }
  static BE b_value(const Problem& p, int64_t k, int64_t j) {
    return int8_t(p.b[k * p.ldb + j] ^ (p.b_signed ? 0 : 0x80));
  }
  static void kernel(int64_t groups, const AE* ap, const BE* bp, int32_t* c, int64_t ldc, int m, int n, bool acc) {
    detail::qgemm_kernel_vnni(groups, ap, bp, c, ldc, m, n, acc);
  }
};
struct Avx2Path {
  using AE = int16_t;
  using BE = int16_t;
  static constexpr int MR = detail::kAvx2MR, NR = detail::kAvx2NR, G = 2;
  static constexpr bool corrected = false;
  static AE a_value(const Problem& p, int64_t i, int64_t k) { return int16_t(p.a_at(i, k) - p.za[i]); }
  static BE b_value(const Problem& p, int64_t k, int64_t j) { return int16_t(p.b_at(k, j) - p.zb[j]); }
  static void kernel(int64_t groups, const AE* ap, const BE* bp, int32_t* c, int64_t ldc, int m, int n, bool acc) {
    detail::qgemm_kernel_avx2(groups, ap, bp, c, ldc, m, n, acc);
  }
};

// 64-byte aligned scratch of T (value-initialised: the zero padding of the packed panels).
template <class T>
struct Aligned {
  std::vector<T> v;
  T* p;
  explicit Aligned(int64_t n) : v(size_t(n) + 64 / sizeof(T), T(0)) {
    auto addr = reinterpret_cast<uintptr_t>(v.data());
    p = reinterpret_cast<T*>((addr + 63) & ~uintptr_t(63));
  }
};

template <class Path>
void qgemm_packed(const Problem& p) {
  using AE = typename Path::AE;
  using BE = typename Path::BE;
  constexpr int MR = Path::MR, NR = Path::NR, G = Path::G;
  const int64_t KG = ceil_div(p.K, G), mp = ceil_div(p.M, MR), np = ceil_div(p.N, NR);
  Aligned<AE> ap(mp * KG * MR * G);
  Aligned<BE> bp(np * KG * NR * G);
  std::vector<uint32_t> rowsum(Path::corrected ? size_t(p.M) : 0), colsum(Path::corrected ? size_t(p.N) : 0);
  if constexpr (std::is_same_v<Path, VnniPath>) {
    // the SIMD packers of qlinear.hpp / conv_integer.hpp (the layouts and shifts of VnniPath)
    parallel_for(0, mp, std::max<int64_t>(1, 4096 / std::max<int64_t>(p.K, 1)), [&](int64_t q0, int64_t q1) {
      const int64_t r0 = q0 * MR, r1 = std::min(p.M, q1 * MR);
      pack_a_vnni(p.a + r0 * p.lda, p.lda, r1 - r0, p.K, p.a_signed, ap.p + q0 * KG * MR * G, rowsum.data() + r0);
    });
    parallel_for(0, np, std::max<int64_t>(1, 4096 / std::max<int64_t>(p.K, 1)), [&](int64_t q0, int64_t q1) {
      int32_t sums[NR];
      for (int64_t q = q0; q < q1; ++q) {
        const int cols = int(std::min<int64_t>(NR, p.N - q * NR));
        detail::conv_integer_pack_columns_vnni(p.b, p.ldb, p.K, q * NR, cols, p.b_signed, bp.p + q * KG * NR * G, sums);
        for (int c = 0; c < cols; ++c) colsum[size_t(q * NR + c)] = uint32_t(sums[c]);
      }
    });
  } else {
    // A: panel q holds rows [q MR, q MR + MR): per group, each row's G values
    parallel_for(0, mp, std::max<int64_t>(1, 4096 / std::max<int64_t>(p.K, 1)), [&](int64_t q0, int64_t q1) {
      for (int64_t q = q0; q < q1; ++q) {
        AE* dst = ap.p + q * KG * MR * G;
        for (int r = 0; r < MR && q * MR + r < p.M; ++r) {
          const int64_t i = q * MR + r;
          uint32_t s = 0;
          for (int64_t k = 0; k < p.K; ++k) {
            const AE v = Path::a_value(p, i, k);
            dst[(k / G) * MR * G + r * G + k % G] = v;
            s += uint32_t(int32_t(v));
          }
          if (Path::corrected) rowsum[size_t(i)] = s;
        }
      }
    });
    // B: panel q holds columns [q NR, q NR + NR): per group, each column's G values
    parallel_for(0, np, std::max<int64_t>(1, 4096 / std::max<int64_t>(p.K, 1)), [&](int64_t q0, int64_t q1) {
      for (int64_t q = q0; q < q1; ++q) {
        BE* dst = bp.p + q * KG * NR * G;
        const int cols = int(std::min<int64_t>(NR, p.N - q * NR));
        uint32_t sums[NR] = {};
        for (int64_t k = 0; k < p.K; ++k) {
          BE* d = dst + (k / G) * NR * G + k % G;
          for (int c = 0; c < cols; ++c) {
            const BE v = Path::b_value(p, k, q * NR + c);
            d[c * G] = v;
            sums[c] += uint32_t(int32_t(v));
          }
        }
        if (Path::corrected)
          for (int c = 0; c < cols; ++c) colsum[size_t(q * NR + c)] = sums[c];
      }
    });
  }
  // tiles of C: MC x NC, K in KC-deep slices
  constexpr int64_t kPanelsM = 8, kPanelsN = 8, kSliceGroups = 1024 / G;
  const int64_t tm = ceil_div(mp, kPanelsM), tn = ceil_div(np, kPanelsN);
  uint32_t alpha_shift = Path::corrected && p.a_signed ? 128u : 0u;
  uint32_t beta_shift = Path::corrected && !p.b_signed ? uint32_t(-128) : 0u;
  parallel_for(0, tm * tn, 1, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t pm0 = (t / tn) * kPanelsM, pm1 = std::min(mp, pm0 + kPanelsM);
      const int64_t pn0 = (t % tn) * kPanelsN, pn1 = std::min(np, pn0 + kPanelsN);
      for (int64_t g0 = 0; g0 < KG; g0 += kSliceGroups) {
        const int64_t gs = std::min(kSliceGroups, KG - g0);
        for (int64_t qn = pn0; qn < pn1; ++qn) {
          const BE* b = bp.p + (qn * KG + g0) * NR * G;
          const int n = int(std::min<int64_t>(NR, p.N - qn * NR));
          for (int64_t qm = pm0; qm < pm1; ++qm) {
            const int m = int(std::min<int64_t>(MR, p.M - qm * MR));
            Path::kernel(gs, ap.p + (qm * KG + g0) * MR * G, b, p.c + qm * MR * p.ldc + qn * NR, p.ldc, m, n,
                         g0 > 0);
          }
        }
      }
      if constexpr (Path::corrected) {
        const int64_t i1 = std::min(p.M, pm1 * MR), j0 = pn0 * NR, j1 = std::min(p.N, pn1 * NR);
        const uint32_t k = uint32_t(p.K);
        for (int64_t i = pm0 * MR; i < i1; ++i) {
          const uint32_t alpha = uint32_t(p.za[i]) + alpha_shift, ra = rowsum[size_t(i)];
          uint32_t* ci = reinterpret_cast<uint32_t*>(p.c + i * p.ldc);
          for (int64_t j = j0; j < j1; ++j) {
            const uint32_t beta = uint32_t(p.zb[j]) + beta_shift;
            ci[j] += k * alpha * beta - beta * ra - alpha * colsum[size_t(j)];
          }
        }
      }
    }
  });
}

void qgemm_dispatch(int isa, const Problem& p) {
  if (p.M == 0 || p.N == 0) return;
  if (p.K == 0) {
    for (int64_t i = 0; i < p.M; ++i) std::fill(p.c + i * p.ldc, p.c + i * p.ldc + p.N, 0);
    return;
  }
  isa = std::min(isa, detail::qgemm_best_isa());
  if (isa >= detail::kIsaAvx512 && features().avx512vnni) return qgemm_packed<VnniPath>(p);
  if (isa >= detail::kIsaAvx2) return qgemm_packed<Avx2Path>(p);
  qgemm_scalar(p);
}

// ---- matmul_wq ----

// Rows [n0, n1) of y for m rows of x, without SIMD (the reference of the GEMV kernels):
// per block, the sum of q x in f32, scaled once, minus the zero point's share.
void wq_gemv_scalar(const QuantWeight& w, int64_t m, const float* x, const float* xsum, int64_t n0, int64_t n1,
                    float* y, int64_t ldy) {
  const int64_t K = w.K, nb = K / w.block;
  const bool sym4 = w.bits == 4 && !w.zp;
  for (int64_t n = n0; n < n1; ++n)
    for (int64_t j = 0; j < m; ++j) {
      const float* xj = x + j * K;
      float acc = 0, corr = 0;
      for (int64_t b = 0; b < nb; ++b) {
        float blk = 0;
        for (int64_t k = b * w.block; k < (b + 1) * w.block; ++k) {
          int q;
          if (w.bits == 4) {
            const uint8_t byte = w.data[n * (K / 2) + k / 2];
            q = (k & 1) ? byte >> 4 : byte & 0xF;
            if (sym4) q ^= 8;  // two's complement nibble -> q + 8
          } else {
            const uint8_t byte = w.data[n * K + k];
            q = w.zp ? int(byte) : int(int8_t(byte));
          }
          blk += float(q) * xj[k];
        }
        const float s = w.scales[n * nb + b];
        const float z = w.zp ? float(w.zp[n * nb + b]) : sym4 ? 8.f : 0.f;
        acc += s * blk;
        corr += s * z * xsum[j * nb + b];
      }
      y[j * ldy + n] = acc - corr;
    }
}

// Rows [n0, n0 + rows) of W as f32, row-major (rows x K).
void wq_dequantize(const QuantWeight& w, int64_t n0, int64_t rows, float* out) {
  const int64_t K = w.K, nb = K / w.block;
  const bool sym4 = w.bits == 4 && !w.zp;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t n = n0 + r;
    float* o = out + r * K;
    for (int64_t b = 0; b < nb; ++b) {
      const float s = w.scales[n * nb + b];
      const int z = w.zp ? int(w.zp[n * nb + b]) : 0;
      const int64_t k0 = b * w.block;
      if (w.bits == 4) {
        const uint8_t* d = w.data + n * (K / 2) + k0 / 2;
        for (int64_t i = 0; i < w.block / 2; ++i) {
          int lo = d[i] & 0xF, hi = d[i] >> 4;
          if (sym4) lo = (lo ^ 8) - 8, hi = (hi ^ 8) - 8;
          o[k0 + 2 * i] = s * float(lo - z);
          o[k0 + 2 * i + 1] = s * float(hi - z);
        }
      } else {
        const uint8_t* d = w.data + n * K + k0;
        for (int64_t i = 0; i < w.block; ++i) o[k0 + i] = s * float((w.zp ? int(d[i]) : int(int8_t(d[i]))) - z);
      }
    }
  }
}

// x rounded to int8 per 32 along K (quantize_x; ggml's Q8_0): q = round_half_even(x * 127 / amax),
// scale amax / 127 (0 and q = 0 for a 32 of zeros). Every path rounds x here, the same way.
void quantize_x_rows(const float* x, int64_t m, int64_t K, int8_t* q, float* s) {
  for (int64_t j = 0; j < m; ++j)
    for (int64_t k0 = 0; k0 < K; k0 += 32) {
      const float* xb = x + j * K + k0;
      float amax = 0;
      for (int i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(xb[i]));
      const float id = amax > 0 ? 127.f / amax : 0.f;
      s[(j * K + k0) / 32] = amax / 127.f;
      for (int i = 0; i < 32; ++i) q[j * K + k0 + i] = int8_t(std::nearbyint(xb[i] * id));
    }
}

// The GEMV rows with x rounded to int8, without SIMD (the reference of wq_gemv_vnni): per 32,
// the integer sum of (q - zp) xq, scaled by the block's scale times x's scale of the 32.
void wq_gemv_q8_scalar(const QuantWeight& w, int64_t m, const int8_t* xq, const float* sx, int64_t n0, int64_t n1,
                       float* y, int64_t ldy) {
  const int64_t K = w.K, nb = K / w.block;
  for (int64_t n = n0; n < n1; ++n)
    for (int64_t j = 0; j < m; ++j) {
      float acc = 0;
      for (int64_t k0 = 0; k0 < K; k0 += 32) {
        const int64_t b = k0 / w.block;
        const int z = w.zp ? int(w.zp[n * nb + b]) : 0;
        int32_t isum = 0;
        for (int64_t k = k0; k < k0 + 32; ++k) {
          int q;
          if (w.bits == 4) {
            const uint8_t byte = w.data[n * (K / 2) + k / 2];
            q = (k & 1) ? byte >> 4 : byte & 0xF;
            if (!w.zp) q = (q ^ 8) - 8;
          } else {
            const uint8_t byte = w.data[n * K + k];
            q = w.zp ? int(byte) : int(int8_t(byte));
          }
          isum += (q - z) * int32_t(xq[j * K + k]);
        }
        acc += w.scales[n * nb + b] * sx[(j * K + k0) / 32] * float(isum);
      }
      y[j * ldy + n] = acc;
    }
}

// The VNNI kernel's layouts of a rounded x (see wq_gemv_vnni in qgemm.hpp).
struct VnniX {
  std::vector<int8_t> q;
  std::vector<int32_t> sum;
  std::vector<float> scale;
};
VnniX vnni_layout(const QuantWeight& w, int64_t m, const int8_t* xq, const float* sx) {
  const int64_t K = w.K, cw = w.bits == 4 ? 128 : 64, chunks = (K + cw - 1) / cw, per_lane = w.bits == 4 ? 8 : 4;
  VnniX v{std::vector<int8_t>(size_t(m * chunks * (w.bits == 4 ? 128 : 64)), 0),
          std::vector<int32_t>(size_t(m * chunks * 16), 0), std::vector<float>(size_t(m * chunks * 16), 0.f)};
  for (int64_t j = 0; j < m; ++j)
    for (int64_t c = 0; c < chunks; ++c) {
      int8_t* dq = v.q.data() + (j * chunks + c) * (w.bits == 4 ? 128 : 64);
      const int64_t k0 = c * cw;
      for (int64_t k = k0; k < std::min(K, k0 + cw); ++k) {
        const int8_t x = xq[j * K + k];
        const int64_t i = k - k0;
        dq[w.bits == 4 ? (i & 1) * 64 + i / 2 : i] = x;
        const int64_t lane = (j * chunks + c) * 16 + i / per_lane;
        v.sum[size_t(lane)] += x;
        v.scale[size_t(lane)] = sx[(j * K + k) / 32];
      }
    }
  return v;
}

constexpr int64_t kGemvRows = 4;   // the most rows of x a GEMV pass takes
constexpr int64_t kPanelRows = 64;  // rows of W dequantized at a time on the GEMM path

}  // namespace

namespace detail {

int qgemm_best_isa() { return gemm_best_isa(); }

void qgemm_u8i8_isa(int isa, int64_t M, int64_t N, int64_t K, const uint8_t* a, int64_t lda, bool a_signed,
                    const uint8_t* b, int64_t ldb, bool b_signed, const int32_t* za, const int32_t* zb, int32_t* c,
                    int64_t ldc) {
  qgemm_dispatch(isa, Problem{M, N, K, a, lda, a_signed, b, ldb, b_signed, za, zb, c, ldc});
}

void matmul_wq_f32_isa(int isa, const QuantWeight& w, int64_t M, const float* x, float* y, int64_t gemv_rows) {
  isa = std::min(isa, qgemm_best_isa());
  const int64_t K = w.K, N = w.N, nb = K / w.block;
  if (M == 0 || N == 0) return;
  if (gemv_rows < 0) gemv_rows = kGemvRows;
  std::vector<int8_t> xq;
  std::vector<float> sx, xr;
  if (w.quantize_x) {
    xq.resize(size_t(M * K));
    sx.resize(size_t(M * K / 32));
    quantize_x_rows(x, M, K, xq.data(), sx.data());
  }
  if (M > gemv_rows) {
    if (w.quantize_x) {  // the GEMM multiplies the rounded x, as f32
      xr.resize(size_t(M * K));
      for (int64_t i = 0; i < M * K; ++i) xr[size_t(i)] = sx[size_t(i / 32)] * float(xq[size_t(i)]);
      x = xr.data();
    }
    // GEMM: a panel of W rows at a time, dequantized and multiplied on the f32 GEMM (each task's
    // GEMM runs on its own thread: nested parallel_for calls run inline)
    const int64_t panels = ceil_div(N, kPanelRows);
    parallel_for(0, panels, 1, [&](int64_t p0, int64_t p1) {
      std::vector<float> panel(size_t(kPanelRows * K));
      for (int64_t p = p0; p < p1; ++p) {
        const int64_t n0 = p * kPanelRows, rows = std::min(kPanelRows, N - n0);
        wq_dequantize(w, n0, rows, panel.data());
        // y[:, n0 : n0 + rows] = x (M x K) times panel^T (element (k, r) at panel[r K + k])
        detail::gemm_f32_isa(isa, M, rows, K, 1.f, x, K, 1, panel.data(), 1, K, 0.f, y + n0, N, 1);
      }
    });
    return;
  }
  // GEMV: at most kGemvRows rows of x at a time, every weight streamed once per pass
  for (int64_t m0 = 0; m0 < M; m0 += kGemvRows) {
    const int64_t m = std::min(kGemvRows, M - m0);
    const float* xm = x + m0 * K;
    float* ym = y + m0 * N;
    const int64_t bytes_per_row = w.bits == 4 ? K / 2 : K;
    const int64_t grain = std::max<int64_t>(16, (int64_t(1) << 17) / std::max<int64_t>(bytes_per_row, 1));
    if (w.quantize_x) {
      const int8_t* qm = xq.data() + m0 * K;
      const float* sm = sx.data() + m0 * K / 32;
      if (isa >= kIsaAvx512 && features().avx512vnni) {
        const VnniX v = vnni_layout(w, m, qm, sm);
        for_rows_dynamic(N, grain, [&](int64_t n0, int64_t n1) {
          wq_gemv_vnni(w, int(m), v.q.data(), v.sum.data(), v.scale.data(), n0, n1, ym, N);
        });
      } else if (isa >= kIsaAvx2) {
        // xq with each 32 of a 4-bit weight's x as its even values, then its odd ones; per 32 sums
        std::vector<int8_t> xl(size_t(m * K));
        std::vector<int32_t> xs(size_t(m * K / 32), 0);
        for (int64_t i = 0; i < m * K; ++i) {
          const int64_t k0 = i & ~int64_t(31), r = i & 31;
          xl[size_t(w.bits == 4 ? k0 + (r & 1) * 16 + r / 2 : i)] = qm[i];
          xs[size_t(i / 32)] += qm[i];
        }
        for_rows_dynamic(N, grain, [&](int64_t n0, int64_t n1) {
          wq_gemv_q8_avx2(w, int(m), xl.data(), xs.data(), sm, n0, n1, ym, N);
        });
      } else {
        for_rows_dynamic(N, grain, [&](int64_t n0, int64_t n1) { wq_gemv_q8_scalar(w, m, qm, sm, n0, n1, ym, N); });
      }
      continue;
    }
    std::vector<float> xp(size_t(m * K)), xsum(size_t(m * nb));
    for (int64_t j = 0; j < m; ++j) {
      const float* xj = xm + j * K;
      for (int64_t b = 0; b < nb; ++b) {
        float s = 0;
        for (int64_t k = b * w.block; k < (b + 1) * w.block; ++k) s += xj[k];
        xsum[size_t(j * nb + b)] = s;
      }
      float* pj = xp.data() + j * K;
      if (w.bits == 4) {  // each 32: the 16 even elements, then the 16 odd ones
        for (int64_t k = 0; k < K; k += 32)
          for (int i = 0; i < 16; ++i) pj[k + i] = xj[k + 2 * i], pj[k + 16 + i] = xj[k + 2 * i + 1];
      } else {
        std::copy(xj, xj + K, pj);
      }
    }
    for_rows_dynamic(N, grain, [&](int64_t n0, int64_t n1) {
      if (isa >= kIsaAvx512)
        wq_gemv_avx512(w, int(m), xp.data(), xsum.data(), n0, n1, ym, N);
      else if (isa >= kIsaAvx2)
        wq_gemv_avx2(w, int(m), xp.data(), xsum.data(), n0, n1, ym, N);
      else
        wq_gemv_scalar(w, m, xm, xsum.data(), n0, n1, ym, N);
    });
  }
}

}  // namespace detail

void qgemm_u8i8(int64_t M, int64_t N, int64_t K, const uint8_t* a, int64_t lda, bool a_signed, const uint8_t* b,
                int64_t ldb, bool b_signed, const int32_t* za, const int32_t* zb, int32_t* c, int64_t ldc) {
  detail::qgemm_u8i8_isa(detail::kIsaAvx512, M, N, K, a, lda, a_signed, b, ldb, b_signed, za, zb, c, ldc);
}

void matmul_wq_f32(const QuantWeight& w, int64_t M, const float* x, float* y) {
  detail::matmul_wq_f32_isa(detail::kIsaAvx512, w, M, x, y);
}

}  // namespace ember::cpu
