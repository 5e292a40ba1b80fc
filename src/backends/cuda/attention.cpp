// Scaled dot-product attention (forward):
//
//   out = softmax(q k^T * scale + mask, over S) v        (causal: key j > query i masked)
//
// with the CPU backend's conventions: the causal mask is aligned at the top left (query i sees
// keys 0..i whatever L and S), a bool mask keeps where true, a float mask is added, a row whose
// every key is masked gives NaN, S = 0 gives zeros.
//
// cuDNN path (f16 / bf16 without a mask, E == Ev, where cuDNN has an engine; attention_cudnn.cpp):
// cuDNN's fused attention, tried first. Every problem it declines takes the paths below.
//
// Fused path (f32, f16, bf16 with E, Ev <= 256): a flash-attention kernel. For f16 / bf16 it
// has three versions, chosen per call by EMBER_CUDA_ATTN_FWD (for A/B runs and the tests): the
// default, v3, runs v2's source with 128 query rows over 8 warps a block, warps skipping key
// tiles above their rows and mask arithmetic only on tiles that need it
// (EMBER_CUDA_ATTN_FWD_BLOCKS=1 / 2 sets its register budget); v2 has 64 rows over 4 warps, K
// and V double-buffered with cp.async and fragments loaded with ldmatrix; v1 uses plain
// shared-memory loads. v2 and v3 hand out (row tile, batch entry) pairs tile-major, so
// under causality every entry's longest rows start before any shorter ones (a list schedule
// with the long jobs first: the short ones fill the tail; 130 -> 87 us on the benchmark with
// the exponentials on ex2.approx). A block owns 64 or 128 query rows of one batch entry; it
// streams the keys and values through shared memory in tiles, keeps a running max and sum per
// row (online softmax, in the log2 domain) and accumulates the output in fp32 registers, so the
// scores never reach global memory. f16 / bf16 multiply on tensor cores (mma.sync m16n8k16, fp32
// accumulation; the probabilities are rounded to the input type for the second product, as
// flash attention does); f32 uses exact fp32 FMAs. The head dims are padded with zeros to 32,
// 64, 128 or 256 inside the kernel. Operands are read through their strides (batch dims
// collapsed), the mask through broadcast strides. Every path also writes the op's second
// output, each row's log-sum-exp (natural log, f32) from its running max and sum, which the
// flash backward takes instead of recomputing the scores for it.
//
// Fallback (f64, or head dims above 256): the scores are materialised with cuBLASLt (in f32 for
// the half types, f64 for f64), a row-softmax kernel applies scale, mask and causality, and a
// second product multiplies by v.
//
// The backward (attention_backward) is in attention_backward.cpp.
#include <cmath>
#include <cstdlib>
#include <mutex>
#include <set>

#include "attention_internal.hpp"
#include "attention_sources.hpp"
#include "cuda_backend.hpp"
#include "matmul.hpp"

namespace ember::cuda {

namespace {

constexpr int kMaxFusedDim = 256;

int pad_dim(int64_t e) {
  for (int d : {32, 64, 128, 256})
    if (e <= d) return d;
  return -1;
}

// ---------------------------------------------------------------------------------------
// Scalar fp32 kernel (f32; also valid for the half types).
//
// 256 threads as 16 x 16: thread (ty, tx) owns query rows ty + 16i (i < 4) of the block, the
// score columns tx + 16j of each key tile and the output columns tx + 16t. The 16 threads of a
// row are one half-warp, so row reductions are 4 xor-shuffles.

const char* kScalarKernel = R"CUDA(
#define BM 64
#define NT 256
#define RM 4
#define CN (BN / 16)
#define CV (DV / 16)
#define QS (D + 1)
#define KS (D + 1)
#define PS (BN + 1)
#define LOG2E 1.4426950408889634f

extern "C" __global__ void __launch_bounds__(NT) flash_attn(
    T* __restrict__ out, float* __restrict__ lse, const T* __restrict__ q, const T* __restrict__ k,
    const T* __restrict__ v, const void* __restrict__ mask, int64_t nbatch, int64_t L, int64_t S, int64_t E, int64_t Ev,
    int64_t q_rs, int64_t q_cs, int64_t k_rs, int64_t k_cs, int64_t v_rs, int64_t v_cs, int64_t m_rs, int64_t m_cs,
    Shape bsh, Strides qb, Strides kb, Strides vb, Strides mb, float scale_log2, int32_t mask_kind, int32_t causal,
    int32_t vec) {
  extern __shared__ float smem[];
  float* Qs = smem;            // [BM][QS]
  float* Ks = Qs + BM * QS;    // [BN][KS]
  float* Vs = Ks + BN * KS;    // [BN][DV]
  float* Ps = Vs + BN * DV;    // [BM][PS]
  (void)vec;
  const int tid = threadIdx.x, tx = tid & 15, ty = tid >> 4;
  const float ninf = -ember_inf();
  const int64_t ntiles = (L + BM - 1) / BM;
  for (int64_t b = blockIdx.y; b < nbatch; b += gridDim.y) {
    const T* qp = q + offset_of(b, bsh, qb);
    const T* kp = k + offset_of(b, bsh, kb);
    const T* vp = v + offset_of(b, bsh, vb);
    const int64_t moff = mask_kind ? offset_of(b, bsh, mb) : 0;
    for (int64_t ti = blockIdx.x; ti < ntiles; ti += gridDim.x) {
      const int64_t m0 = (causal ? ntiles - 1 - ti : ti) * BM;  // causal: longest rows first
      __syncthreads();  // the previous tile is done with the shared buffers
      for (int idx = tid; idx < BM * D; idx += NT) {
        int r = idx / D, e = idx - r * D;
        int64_t row = m0 + r;
        Qs[r * QS + e] = (row < L && e < E) ? float(qp[row * q_rs + e * q_cs]) : 0.f;
      }
      float acc[RM][CV], mrow[RM], lrow[RM];
#pragma unroll
      for (int i = 0; i < RM; ++i) {
        mrow[i] = ninf;
        lrow[i] = 0.f;
#pragma unroll
        for (int t = 0; t < CV; ++t) acc[i][t] = 0.f;
      }
      const int64_t kv_end = causal ? min(S, m0 + BM) : S;
      for (int64_t n0 = 0; n0 < kv_end; n0 += BN) {
        __syncthreads();  // Qs is written; the previous key tile is consumed
        for (int idx = tid; idx < BN * D; idx += NT) {
          int j = idx / D, e = idx - j * D;
          int64_t col = n0 + j;
          Ks[j * KS + e] = (col < S && e < E) ? float(kp[col * k_rs + e * k_cs]) : 0.f;
        }
        for (int idx = tid; idx < BN * DV; idx += NT) {
          int j = idx / DV, c = idx - j * DV;
          int64_t col = n0 + j;
          Vs[j * DV + c] = (col < S && c < Ev) ? float(vp[col * v_rs + c * v_cs]) : 0.f;
        }
        __syncthreads();
        float s[RM][CN];
#pragma unroll
        for (int i = 0; i < RM; ++i)
#pragma unroll
          for (int j = 0; j < CN; ++j) s[i][j] = 0.f;
#pragma unroll 8
        for (int e = 0; e < D; ++e) {
          float qv[RM], kv[CN];
#pragma unroll
          for (int i = 0; i < RM; ++i) qv[i] = Qs[(ty + 16 * i) * QS + e];
#pragma unroll
          for (int j = 0; j < CN; ++j) kv[j] = Ks[(tx + 16 * j) * KS + e];
#pragma unroll
          for (int i = 0; i < RM; ++i)
#pragma unroll
            for (int j = 0; j < CN; ++j) s[i][j] = fmaf(qv[i], kv[j], s[i][j]);
        }
        // scale, masks, online softmax (log2 domain)
#pragma unroll
        for (int i = 0; i < RM; ++i) {
          const int64_t row = m0 + ty + 16 * i;
          float mx = ninf;
#pragma unroll
          for (int j = 0; j < CN; ++j) {
            const int64_t col = n0 + tx + 16 * j;
            float t = s[i][j] * scale_log2;
            bool keep = row < L && col < S && !(causal && col > row);
            if (keep && mask_kind == 1) {
              keep = ((const bool*)mask)[moff + row * m_rs + col * m_cs];
            } else if (keep && mask_kind == 2) {
              t += float(((const T*)mask)[moff + row * m_rs + col * m_cs]) * LOG2E;
            }
            s[i][j] = keep ? t : ninf;
            mx = fmaxf(mx, s[i][j]);
          }
#pragma unroll
          for (int off = 8; off > 0; off >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, off));
          const float m_new = fmaxf(mrow[i], mx);
          const float alpha = m_new == mrow[i] ? 1.f : exp2f(mrow[i] - m_new);
          float sum = 0.f;
#pragma unroll
          for (int j = 0; j < CN; ++j) {
            float p = s[i][j] == ninf ? 0.f : exp2f(s[i][j] - m_new);
            Ps[(ty + 16 * i) * PS + tx + 16 * j] = p;
            sum += p;
          }
#pragma unroll
          for (int off = 8; off > 0; off >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, off);
          lrow[i] = lrow[i] * alpha + sum;
          mrow[i] = m_new;
#pragma unroll
          for (int t = 0; t < CV; ++t) acc[i][t] *= alpha;
        }
        __syncthreads();
#pragma unroll 4
        for (int j = 0; j < BN; ++j) {
          float pv[RM], vv[CV];
#pragma unroll
          for (int i = 0; i < RM; ++i) pv[i] = Ps[(ty + 16 * i) * PS + j];
#pragma unroll
          for (int t = 0; t < CV; ++t) vv[t] = Vs[j * DV + tx + 16 * t];
#pragma unroll
          for (int i = 0; i < RM; ++i)
#pragma unroll
            for (int t = 0; t < CV; ++t) acc[i][t] = fmaf(pv[i], vv[t], acc[i][t]);
        }
      }
      // out = acc / l (a fully masked row has l = 0 and acc = 0: NaN)
#pragma unroll
      for (int i = 0; i < RM; ++i) {
        const int64_t row = m0 + ty + 16 * i;
        if (row >= L) continue;
        if (tx == 0) lse[b * L + row] = row_lse(mrow[i], lrow[i]);
        const float inv = 1.f / lrow[i];
        T* o = out + (b * L + row) * Ev;
#pragma unroll
        for (int t = 0; t < CV; ++t) {
          const int c = tx + 16 * t;
          if (c < Ev) o[c] = T(acc[i][t] * inv);
        }
      }
    }
  }
}
)CUDA";

// ---------------------------------------------------------------------------------------
// Tensor-core kernel (f16 / bf16): 4 warps, each owning 16 of the block's 64 query rows.
// S = Q K^T and O += P V with mma.sync.m16n8k16 (fp32 accumulators). Q and K live in shared
// memory as [row][dim] (row stride D + 8 halves: conflict-free fragment loads), V transposed
// as [dim][key]. Fragment layouts (PTX ISA, m16n8k16): g = lane / 4, tg = lane % 4;
//   A (16x16): a0 = (g, 2tg..+1), a1 = (g+8, 2tg..+1), a2 = (g, 2tg+8..+9), a3 = (g+8, 2tg+8..+9)
//   B (16x8):  b0 = (k 2tg..+1, n g), b1 = (k 2tg+8..+9, n g)
//   C (16x8):  c0,c1 = (g, 2tg..+1), c2,c3 = (g+8, 2tg..+1)
// so the score accumulators of two adjacent 8-key tiles are, packed, the A fragment of P.

const char* kTensorCoreKernel = R"CUDA(
#define BM 64
#define NT 128
#define QST (D + 8)
#define KST (D + 8)
#define VST (BN + 8)
#define LOG2E 1.4426950408889634f

__device__ __forceinline__ uint32_t lds32(const uint16_t* p) { return *(const uint32_t*)p; }

extern "C" __global__ void __launch_bounds__(NT) flash_attn(
    T* __restrict__ out, float* __restrict__ lse, const T* __restrict__ q, const T* __restrict__ k,
    const T* __restrict__ v, const void* __restrict__ mask, int64_t nbatch, int64_t L, int64_t S, int64_t E, int64_t Ev,
    int64_t q_rs, int64_t q_cs, int64_t k_rs, int64_t k_cs, int64_t v_rs, int64_t v_cs, int64_t m_rs, int64_t m_cs,
    Shape bsh, Strides qb, Strides kb, Strides vb, Strides mb, float scale_log2, int32_t mask_kind, int32_t causal,
    int32_t vec) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  uint16_t* Qs = (uint16_t*)smem_raw;  // [BM][QST]
  uint16_t* Ks = Qs + BM * QST;        // [BN][KST]
  uint16_t* Vt = Ks + BN * KST;        // [DV][VST]
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, tg = lane & 3;
  const float ninf = -ember_inf();
  const int64_t ntiles = (L + BM - 1) / BM;
  for (int64_t b = blockIdx.y; b < nbatch; b += gridDim.y) {
    const T* qp = q + offset_of(b, bsh, qb);
    const T* kp = k + offset_of(b, bsh, kb);
    const T* vp = v + offset_of(b, bsh, vb);
    const int64_t moff = mask_kind ? offset_of(b, bsh, mb) : 0;
    for (int64_t ti = blockIdx.x; ti < ntiles; ti += gridDim.x) {
      const int64_t m0 = (causal ? ntiles - 1 - ti : ti) * BM;
      __syncthreads();
      if (vec) {  // 16-byte loads: unit column strides, E % 8 == 0, aligned rows
        for (int idx = tid; idx < BM * (D / 8); idx += NT) {
          int r = idx / (D / 8), e = (idx - r * (D / 8)) * 8;
          int64_t row = m0 + r;
          uint4 val = make_uint4(0, 0, 0, 0);
          if (row < L && e < E) val = *(const uint4*)(qp + row * q_rs + e);
          *(uint4*)(Qs + r * QST + e) = val;
        }
      } else {
        for (int idx = tid; idx < BM * D; idx += NT) {
          int r = idx / D, e = idx - r * D;
          int64_t row = m0 + r;
          Qs[r * QST + e] = (row < L && e < E) ? qp[row * q_rs + e * q_cs].bits : (uint16_t)0;
        }
      }
      float oacc[DV / 8][4];
#pragma unroll
      for (int t = 0; t < DV / 8; ++t) oacc[t][0] = oacc[t][1] = oacc[t][2] = oacc[t][3] = 0.f;
      float mrow[2] = {ninf, ninf}, lrow[2] = {0.f, 0.f};  // rows g and g + 8 of the warp
      const int64_t row0 = m0 + warp * 16 + g, row1 = row0 + 8;
      const int64_t kv_end = causal ? min(S, m0 + BM) : S;
      for (int64_t n0 = 0; n0 < kv_end; n0 += BN) {
        __syncthreads();
        if (vec) {
          for (int idx = tid; idx < BN * (D / 8); idx += NT) {
            int j = idx / (D / 8), e = (idx - j * (D / 8)) * 8;
            int64_t col = n0 + j;
            uint4 val = make_uint4(0, 0, 0, 0);
            if (col < S && e < E) val = *(const uint4*)(kp + col * k_rs + e);
            *(uint4*)(Ks + j * KST + e) = val;
          }
          for (int idx = tid; idx < BN * (DV / 8); idx += NT) {
            int j = idx % BN, c = (idx / BN) * 8;  // consecutive threads: consecutive keys
            int64_t col = n0 + j;
            uint4 val = make_uint4(0, 0, 0, 0);
            if (col < S && c < Ev) val = *(const uint4*)(vp + col * v_rs + c);
            const uint16_t* h = (const uint16_t*)&val;
#pragma unroll
            for (int u = 0; u < 8; ++u) Vt[(c + u) * VST + j] = h[u];
          }
        } else {
          for (int idx = tid; idx < BN * D; idx += NT) {
            int j = idx / D, e = idx - j * D;
            int64_t col = n0 + j;
            Ks[j * KST + e] = (col < S && e < E) ? kp[col * k_rs + e * k_cs].bits : (uint16_t)0;
          }
          for (int idx = tid; idx < BN * DV; idx += NT) {
            int j = idx / DV, c = idx - j * DV;
            int64_t col = n0 + j;
            Vt[c * VST + j] = (col < S && c < Ev) ? vp[col * v_rs + c * v_cs].bits : (uint16_t)0;
          }
        }
        __syncthreads();
        // S = Q K^T for the warp's 16 rows x BN keys
        float sacc[BN / 8][4];
#pragma unroll
        for (int nt = 0; nt < BN / 8; ++nt) sacc[nt][0] = sacc[nt][1] = sacc[nt][2] = sacc[nt][3] = 0.f;
#pragma unroll
        for (int kk = 0; kk < D / 16; ++kk) {
          const uint16_t* qa = Qs + (warp * 16 + g) * QST + kk * 16 + tg * 2;
          uint32_t a[4] = {lds32(qa), lds32(qa + 8 * QST), lds32(qa + 8), lds32(qa + 8 * QST + 8)};
#pragma unroll
          for (int nt = 0; nt < BN / 8; ++nt) {
            const uint16_t* kb2 = Ks + (nt * 8 + g) * KST + kk * 16 + tg * 2;
            uint32_t bb[2] = {lds32(kb2), lds32(kb2 + 8)};
            mma16816(sacc[nt], a, bb);
          }
        }
        // scale, masks, online softmax; element e of tile nt: row (e < 2 ? row0 : row1),
        // key n0 + nt * 8 + 2 tg + (e & 1)
        float mx[2] = {ninf, ninf};
#pragma unroll
        for (int nt = 0; nt < BN / 8; ++nt) {
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const int64_t row = e < 2 ? row0 : row1;
            const int64_t col = n0 + nt * 8 + tg * 2 + (e & 1);
            float t = sacc[nt][e] * scale_log2;
            bool keep = row < L && col < S && !(causal && col > row);
            if (keep && mask_kind == 1) {
              keep = ((const bool*)mask)[moff + row * m_rs + col * m_cs];
            } else if (keep && mask_kind == 2) {
              t += float(((const T*)mask)[moff + row * m_rs + col * m_cs]) * LOG2E;
            }
            sacc[nt][e] = keep ? t : ninf;
            mx[e >> 1] = fmaxf(mx[e >> 1], sacc[nt][e]);
          }
        }
        float alpha[2];
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xffffffffu, mx[h], 1));
          mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xffffffffu, mx[h], 2));
          const float m_new = fmaxf(mrow[h], mx[h]);
          alpha[h] = m_new == mrow[h] ? 1.f : exp2f(mrow[h] - m_new);
          mrow[h] = m_new;
        }
        float sum[2] = {0.f, 0.f};
#pragma unroll
        for (int nt = 0; nt < BN / 8; ++nt) {
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const float s = sacc[nt][e];
            const float p = s == ninf ? 0.f : exp2f(s - mrow[e >> 1]);
            sacc[nt][e] = p;
            sum[e >> 1] += p;
          }
        }
        lrow[0] = lrow[0] * alpha[0] + sum[0];  // per-thread partial sums (reduced at the end)
        lrow[1] = lrow[1] * alpha[1] + sum[1];
#pragma unroll
        for (int t = 0; t < DV / 8; ++t) {
          oacc[t][0] *= alpha[0];
          oacc[t][1] *= alpha[0];
          oacc[t][2] *= alpha[1];
          oacc[t][3] *= alpha[1];
        }
        // O += P V
#pragma unroll
        for (int kk = 0; kk < BN / 16; ++kk) {
          uint32_t a[4] = {pack2(sacc[2 * kk][0], sacc[2 * kk][1]), pack2(sacc[2 * kk][2], sacc[2 * kk][3]),
                           pack2(sacc[2 * kk + 1][0], sacc[2 * kk + 1][1]),
                           pack2(sacc[2 * kk + 1][2], sacc[2 * kk + 1][3])};
#pragma unroll
          for (int t = 0; t < DV / 8; ++t) {
            const uint16_t* vb2 = Vt + (t * 8 + g) * VST + kk * 16 + tg * 2;
            uint32_t bb[2] = {lds32(vb2), lds32(vb2 + 8)};
            mma16816(oacc[t], a, bb);
          }
        }
      }
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        lrow[h] += __shfl_xor_sync(0xffffffffu, lrow[h], 1);
        lrow[h] += __shfl_xor_sync(0xffffffffu, lrow[h], 2);
      }
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int64_t row = h ? row1 : row0;
        if (row >= L) continue;
        if (tg == 0) lse[b * L + row] = row_lse(mrow[h], lrow[h]);
        const float inv = 1.f / lrow[h];
        T* o = out + (b * L + row) * Ev;
#pragma unroll
        for (int t = 0; t < DV / 8; ++t) {
          const int c = t * 8 + tg * 2;
          if (c < Ev) o[c] = T(oacc[t][2 * h] * inv);
          if (c + 1 < Ev) o[c + 1] = T(oacc[t][2 * h + 1] * inv);
        }
      }
    }
  }
}
)CUDA";

// ---------------------------------------------------------------------------------------
// Tensor-core kernel, version 2 (EMBER_CUDA_ATTN_FWD=v2; its source with other parameters is
// the default v3, see flash_attention_source; v1 is the one above): 4 warps, each owning 16 of the block's 64 query rows.
// S = Q K^T and O += P V with mma.sync.m16n8k16 (fp32 accumulators). Q, K and V live in shared
// memory row-major ([row][dim], row stride dim + 8 halves, so the 8 rows of every 8x8 ldmatrix
// load fall in distinct bank groups); K and V are double-buffered and, when the operands allow
// 16-byte copies, filled with cp.async while the previous key tile is being multiplied.
// Fragments come from ldmatrix (.trans for V, whose fragments need key pairs of one dim).
// Fragment layouts (PTX ISA, m16n8k16): g = lane / 4, tg = lane % 4;
//   A (16x16): a0 = (g, 2tg..+1), a1 = (g+8, 2tg..+1), a2 = (g, 2tg+8..+9), a3 = (g+8, 2tg+8..+9)
//   B (16x8):  b0 = (k 2tg..+1, n g), b1 = (k 2tg+8..+9, n g)
//   C (16x8):  c0,c1 = (g, 2tg..+1), c2,c3 = (g+8, 2tg..+1)
// so the score accumulators of two adjacent 8-key tiles are, packed, the A fragment of P.

const char* kTensorCoreKernelV2 = R"CUDA(
#define QST (D + SPAD)
#define KST (D + SPAD)
#define VST (DV + SPAD)
#define LOG2E 1.4426950408889634f

// rows [0, nrows) x dims [0, ncols) of a strided matrix into shared memory (row stride ST
// elements), zeros outside [0, rows_valid) x [0, cols_valid). vec: 16-byte async copies (unit
// column stride, cols_valid % SVEC == 0, aligned rows); else element loads.
template <int NROWS, int NCOLS, int ST>
__device__ __forceinline__ void load_tile(SE* dst, const T* src, int64_t row0, int64_t rows_valid,
                                          int64_t cols_valid, int64_t rs, int64_t cs, bool vec) {
  const int tid = threadIdx.x;
  if (vec) {
    const uint32_t base = smem_addr(dst);
    for (int idx = tid; idx < NROWS * (NCOLS / SVEC); idx += NT) {
      const int r = idx / (NCOLS / SVEC), c = (idx - r * (NCOLS / SVEC)) * SVEC;
      const int64_t row = row0 + r;
      const bool ok = row < rows_valid && c < cols_valid;
      cp_async16(base + uint32_t(r * ST + c) * SEB, ok ? (const void*)(src + row * rs + c) : (const void*)src, ok);
    }
  } else {
    for (int idx = tid; idx < NROWS * NCOLS; idx += NT) {
      const int r = idx / NCOLS, c = idx - r * NCOLS;
      const int64_t row = row0 + r;
      dst[r * ST + c] = (row < rows_valid && c < cols_valid) ? se_of(src[row * rs + c * cs]) : (SE)0;
    }
  }
}

extern "C" __global__ void __launch_bounds__(NT, FWD_MIN_BLOCKS) flash_attn(
    T* __restrict__ out, float* __restrict__ lse, const T* __restrict__ q, const T* __restrict__ k,
    const T* __restrict__ v, const void* __restrict__ mask, int64_t nbatch, int64_t L, int64_t S, int64_t E, int64_t Ev,
    int64_t q_rs, int64_t q_cs, int64_t k_rs, int64_t k_cs, int64_t v_rs, int64_t v_cs, int64_t m_rs, int64_t m_cs,
    Shape bsh, Strides qb, Strides kb, Strides vb, Strides mb, float scale_log2, int32_t mask_kind, int32_t causal,
    int32_t vec) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  SE* Qs = (SE*)smem_raw;     // [BM][QST]
  SE* Ks = Qs + BM * QST;     // 2 x [BN][KST]
  SE* Vs = Ks + 2 * BN * KST;  // 2 x [BN][VST]
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, tg = lane & 3;
  const float ninf = -ember_inf();
  const bool vec_ok = vec != 0;
  const int64_t ntiles = (L + BM - 1) / BM;
  // per-lane fragment offsets (elements): Q rows of the warp (A), K keys (B), V keys (B of P V)
  const uint32_t q_lane = lane_a(warp * 16, QST), k_lane = lane_b(KST), v_lane = lane_bt(VST);
  const uint32_t q_base = smem_addr(Qs), k_base = smem_addr(Ks), v_base = smem_addr(Vs);
  // Blocks walk (tile, batch entry) pairs tile-major: every entry's first tile (causal: the
  // longest rows) is handed out before any entry's second, so the heavy blocks start first
  // and the short ones fill the tail.
  for (int64_t idx = blockIdx.x; idx < ntiles * nbatch; idx += gridDim.x) {
    const int64_t ti = idx / nbatch, b = idx - ti * nbatch;
    const T* qp = q + offset_of(b, bsh, qb);
    const T* kp = k + offset_of(b, bsh, kb);
    const T* vp = v + offset_of(b, bsh, vb);
    const int64_t moff = mask_kind ? offset_of(b, bsh, mb) : 0;
    // (32-bit row and key indices in the key loop, fewer live registers: L, S < 2^30)
    const int m0 = int((causal ? ntiles - 1 - ti : ti) * BM);  // causal: longest rows first
    const int kv_end = int(causal ? min(S, int64_t(m0) + BM) : S);
    const int nkv = (kv_end + BN - 1) / BN;
    __syncthreads();  // the previous tile is done with the shared buffers
    load_tile<BM, D, QST>(Qs, qp, m0, L, E, q_rs, q_cs, vec_ok);
    load_tile<BN, D, KST>(Ks, kp, 0, S, E, k_rs, k_cs, vec_ok);
    load_tile<BN, DV, VST>(Vs, vp, 0, S, Ev, v_rs, v_cs, vec_ok);
    cp_async_commit();
    float oacc[DV / 8][4];
#pragma unroll
    for (int t = 0; t < DV / 8; ++t) oacc[t][0] = oacc[t][1] = oacc[t][2] = oacc[t][3] = 0.f;
    float mrow[2] = {ninf, ninf}, lrow[2] = {0.f, 0.f};  // rows g and g + 8 of the warp
    const int wrow = m0 + warp * 16;                      // the warp's first row
    for (int it = 0; it < nkv; ++it) {
      const int n0 = it * BN;
      const int cur = it & 1;
      if (it + 1 < nkv) {  // prefetch the next key tile into the other buffer
        load_tile<BN, D, KST>(Ks + (cur ^ 1) * BN * KST, kp, n0 + BN, S, E, k_rs, k_cs, vec_ok);
        load_tile<BN, DV, VST>(Vs + (cur ^ 1) * BN * VST, vp, n0 + BN, S, Ev, v_rs, v_cs, vec_ok);
        cp_async_commit();
        cp_async_wait<1>();
      } else {
        cp_async_wait<0>();
      }
      __syncthreads();
      const uint32_t kcur = k_base + uint32_t(cur * BN * KST) * SEB, vcur = v_base + uint32_t(cur * BN * VST) * SEB;
#if FAST_TILES
      // causal: a warp whose 16 rows all precede the tile's first key skips it (nothing kept);
      // a tile that needs no masking for the warp (no mask, no key tail, causal: every key at
      // or below the warp's first row) skips the per-element mask arithmetic
      const bool skip = causal && n0 > wrow + 15;
      const bool full = mask_kind == 0 && n0 + BN <= S && (!causal || n0 + BN - 1 <= wrow);
#else
      const bool skip = false, full = false;
#endif
      if (!skip) {
        // S = Q K^T for the warp's 16 rows x BN keys
        float sacc[BN / 8][4];
        warp_product_abt<BN, D, KST>(sacc, q_base, q_lane, kcur, k_lane);
        // scale, masks, online softmax; element e of tile nt: row (e < 2 ? g : g + 8) of the
        // warp, key n0 + nt * 8 + 2 tg + (e & 1)
        float mx[2] = {ninf, ninf};
        if (full) {
#pragma unroll
          for (int nt = 0; nt < BN / 8; ++nt) {
#pragma unroll
            for (int e = 0; e < 4; ++e) {
              sacc[nt][e] *= scale_log2;
              mx[e >> 1] = fmaxf(mx[e >> 1], sacc[nt][e]);
            }
          }
        } else {
#if FAST_TILES
          // 32-bit indices relative to the tile (fewer live registers): row r = m0 + rl keeps
          // key c = n0 + cl when rl < rows_left, cl < cols_left and (causal) cl - rl <= diag =
          // m0 - n0, clamped to [-BM, BN] (beyond it the test is decided either way)
          const int rows_left = int(min(L - m0, (int64_t)BM)), cols_left = int(min(S - n0, (int64_t)BN));
          const int diag = causal ? max(min(m0 - n0, BN), -BM) : BN;
          const int64_t mtile = moff + m0 * m_rs + n0 * m_cs;  // the mask at (m0, n0)
#pragma unroll
          for (int nt = 0; nt < BN / 8; ++nt) {
#pragma unroll
            for (int e = 0; e < 4; ++e) {
              const int rl = warp * 16 + g + (e >> 1) * 8, cl = nt * 8 + tg * 2 + (e & 1);
              float t = sacc[nt][e] * scale_log2;
              bool keep = rl < rows_left && cl < cols_left && cl - rl <= diag;
              if (keep && mask_kind == 1) {
                keep = ((const bool*)mask)[mtile + rl * m_rs + cl * m_cs];
              } else if (keep && mask_kind == 2) {
                t += float(((const T*)mask)[mtile + rl * m_rs + cl * m_cs]) * LOG2E;
              }
              sacc[nt][e] = keep ? t : ninf;
              mx[e >> 1] = fmaxf(mx[e >> 1], sacc[nt][e]);
            }
          }
#else
#pragma unroll
          for (int nt = 0; nt < BN / 8; ++nt) {
#pragma unroll
            for (int e = 0; e < 4; ++e) {
              const int64_t row = wrow + g + (e >> 1) * 8;
              const int64_t col = n0 + nt * 8 + tg * 2 + (e & 1);
              float t = sacc[nt][e] * scale_log2;
              bool keep = row < L && col < S && !(causal && col > row);
              if (keep && mask_kind == 1) {
                keep = ((const bool*)mask)[moff + row * m_rs + col * m_cs];
              } else if (keep && mask_kind == 2) {
                t += float(((const T*)mask)[moff + row * m_rs + col * m_cs]) * LOG2E;
              }
              sacc[nt][e] = keep ? t : ninf;
              mx[e >> 1] = fmaxf(mx[e >> 1], sacc[nt][e]);
            }
          }
#endif
        }
        // running max; a row with nothing kept yet subtracts 0 instead (exp2(-inf) = 0 then)
        float msub[2];
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xffffffffu, mx[h], 1));
          mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xffffffffu, mx[h], 2));
          const float m_new = fmaxf(mrow[h], mx[h]);
          msub[h] = m_new == ninf ? 0.f : m_new;
          const float alpha = fast_exp2(mrow[h] - msub[h]);
          mrow[h] = m_new;
          lrow[h] *= alpha;  // per-thread partial sums (reduced at the end)
#pragma unroll
          for (int t = 0; t < DV / 8; ++t) {
            oacc[t][2 * h] *= alpha;
            oacc[t][2 * h + 1] *= alpha;
          }
        }
#pragma unroll
        for (int nt = 0; nt < BN / 8; ++nt) {
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const float p = fast_exp2(sacc[nt][e] - msub[e >> 1]);
            sacc[nt][e] = p;
            lrow[e >> 1] += p;
          }
        }
        // O += P V
        warp_product_pb<BN, DV, VST>(oacc, sacc, vcur, v_lane);
      }  // !skip
      __syncthreads();  // every warp is done with buffer `cur` before it is refilled
    }
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float l = lrow[h];
      l += __shfl_xor_sync(0xffffffffu, l, 1);
      l += __shfl_xor_sync(0xffffffffu, l, 2);
      const int64_t row = wrow + g + 8 * h;
      if (row >= L) continue;
      if (tg == 0) lse[b * L + row] = row_lse(mrow[h], l);
      const float inv = 1.f / l;  // a row with every key masked: 0 * inf, NaN as documented
      T* o = out + (b * L + row) * Ev;
#pragma unroll
      for (int t = 0; t < DV / 8; ++t) {
        const int c = t * 8 + tg * 2;
        if ((Ev & 1) == 0) {  // both elements or neither (c even); one store
          if (c < Ev) store2(o + c, oacc[t][2 * h] * inv, oacc[t][2 * h + 1] * inv);
        } else {
          if (c < Ev) o[c] = T(oacc[t][2 * h] * inv);
          if (c + 1 < Ev) o[c + 1] = T(oacc[t][2 * h + 1] * inv);
        }
      }
    }
  }
}
)CUDA";

// ---------------------------------------------------------------------------------------
// Fallback row softmax over materialised scores x [rows = B * L, S] (contiguous, C = f32 or
// f64; x holds batch entries b0.. of the mask), in place: x = softmax(x * scale + mask) over
// the first n = (causal ? min(S, i + 1) : S) columns, 0 after them, NaN everywhere for a fully
// masked row. One block per row.

const char* kSoftmaxKernel = R"CUDA(
__device__ __forceinline__ float exp_c(float x) { return expf(x); }
__device__ __forceinline__ double exp_c(double x) { return exp(x); }
__device__ __forceinline__ C block_reduce(C v, bool is_max, C* red) {
  for (int off = 16; off > 0; off >>= 1) {
    C o = __shfl_xor_sync(0xffffffffu, v, off);
    v = is_max ? (o > v ? o : v) : v + o;
  }
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, nw = blockDim.x >> 5;
  __syncthreads();  // red is free
  if (lane == 0) red[warp] = v;
  __syncthreads();
  v = red[0];
  for (int w = 1; w < nw; ++w) v = is_max ? (red[w] > v ? red[w] : v) : v + red[w];
  return v;
}

extern "C" __global__ void attn_softmax(C* __restrict__ x, float* __restrict__ lse, const void* __restrict__ mask,
                                        int64_t rows, int64_t b0, int64_t L, int64_t S, Shape bsh, Strides mb,
                                        int64_t m_rs, int64_t m_cs, C scale, int32_t causal) {
  __shared__ C red[32];
  const C ninf = -C(ember_inf());
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const int64_t b = b0 + r / L, i = r % L;  // b0: the first batch entry of x
    C* row = x + r * S;
    const int64_t n = causal ? min(S, i + 1) : S;
    int64_t moff = 0;
    if (HAS_MASK) moff = offset_of(b, bsh, mb) + i * m_rs;
    C mx = ninf;
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
      C t = row[j] * scale;
#if HAS_MASK == 1
      if (!((const bool*)mask)[moff + j * m_cs]) t = ninf;
#elif HAS_MASK == 2
      t += C(((const M*)mask)[moff + j * m_cs]);
#endif
      row[j] = t;
      mx = t > mx ? t : mx;
    }
    mx = block_reduce(mx, true, red);
    if (mx == ninf) {  // every key masked
      for (int64_t j = threadIdx.x; j < S; j += blockDim.x) row[j] = C(ember_nan());
      if (lse && threadIdx.x == 0) lse[b0 * L + r] = -ember_inf();
      continue;
    }
    C sum = 0;
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
      C e = exp_c(row[j] - mx);
      row[j] = e;
      sum += e;
    }
    sum = block_reduce(sum, false, red);
    if (lse && threadIdx.x == 0) lse[b0 * L + r] = float(mx + log(sum));  // (log: float or double)
    const C inv = C(1) / sum;
    for (int64_t j = threadIdx.x; j < S; j += blockDim.x) row[j] = j < n ? row[j] * inv : C(0);
  }
}
)CUDA";

// ---------------------------------------------------------------------------------------


// Keys of the key tile: 64, or 32 when the value dim is large (registers / shared memory).
int flash_block_keys(const FlashConfig& c) {
  if (c.tensor_cores) return c.value_dim > 128 ? 32 : 64;
  return (c.head_dim >= 128 || c.value_dim >= 128) ? 32 : 64;
}

void launch_flash(CudaBackend& be, Op& op, const AttnInputs& in, CudaTensor& out, CudaTensor& lse) {
  const DType dt = in.q->dtype();
  FlashConfig c;
  c.dtype = dt;
  c.head_dim = pad_dim(in.E);
  c.value_dim = pad_dim(in.Ev);
  // f32 runs on TF32 tensor cores where TF32 is allowed (set_allow_tf32, as its products do) and
  // the head dims fit the kernel's shared memory (<= 128); else on exact fp32 FMAs
  c.tensor_cores = use_tensor_cores(dt) || (tf32_attention(dt) && c.head_dim <= 128 && c.value_dim <= 128);
  const AttnMask mask_kind = mask_kind_of(in);
  const int r = in.q->shape().rank();
  const int nb = r - 2;
  const MaskLayout ml = mask_layout(in);
  const int64_t m_rs = ml.rs, m_cs = ml.cs;
  Collapsed cb = collapse(op.name(), in.batch,
                          {lead_strides(in.q->strides, nb), lead_strides(in.k->strides, nb),
                           lead_strides(in.v->strides, nb), ml.batch});
  const int64_t nbatch = in.batch.numel();
  auto rs = [&](const CudaTensor& t) { return t.strides[size_t(r - 2)]; };
  auto cs = [&](const CudaTensor& t) { return t.strides[size_t(r - 1)]; };

  // 16-byte loads need unit column strides, dims and row / batch strides in whole 16-byte
  // groups (8 halves, 4 floats), and 16-byte aligned bases.
  int32_t vec = 0;
  const int64_t ve = 16 / int64_t(dtype_size(dt));
  if (c.tensor_cores && in.E % ve == 0 && in.Ev % ve == 0) {
    bool ok = true;
    for (int o = 0; o < 3 && ok; ++o) {
      const CudaTensor& t = o == 0 ? *in.q : o == 1 ? *in.k : *in.v;
      ok = cs(t) == 1 && rs(t) % ve == 0 && reinterpret_cast<uintptr_t>(t.raw()) % 16 == 0;
      for (int d = 0; d < cb.shape.rank && ok; ++d) ok = cb.strides[size_t(o)].v[d] % ve == 0;
    }
    vec = ok ? 1 : 0;
  }

  // v3 by default (measured on an H200, bf16 [8,12,1024,64] causal; a variant with 4 warps of
  // 32 rows and Q in registers measured 94 us against its 89, at 255 registers);
  // EMBER_CUDA_ATTN_FWD=v1|v2 selects an earlier kernel, read per call (A/B, tests)
  if (c.tensor_cores) c.version = 3;
  if (const char* e = std::getenv("EMBER_CUDA_ATTN_FWD"); e && c.tensor_cores) {
    if (std::string(e) == "v1") c.version = dt == DType::f32 ? 2 : 1;  // (v1 has no TF32 source)
    if (std::string(e) == "v2") c.version = 2;
  }
  if (const char* e = std::getenv("EMBER_CUDA_ATTN_FWD_BLOCKS"))  // v3's register budget (1 or 2 blocks an SM)
    c.min_blocks = std::max(0, std::min(4, std::atoi(e)));
  const std::string key = c.key();
  CUfunction f = be.jit().get(key, "flash_attn", [&] { return flash_attention_source(c); });
  const size_t smem = flash_smem_bytes(c);
  allow_smem(f, smem);
  const int64_t ntiles = (in.L + flash_block_rows(c) - 1) / flash_block_rows(c);
  // tensor-core v2 / v3 walk (tile, batch entry) pairs over a 1-D grid; v1 and fp32 take a 2-D one
  dim3 grid = !c.tensor_cores || c.version == 1
                  ? dim3(unsigned(std::min<int64_t>(ntiles, 0x7fffffff)), unsigned(std::min<int64_t>(nbatch, 65535)))
                  : dim3(unsigned(std::min<int64_t>(ntiles * nbatch, 0x7fffffff)));
  const float scale_log2 = float(in.scale * 1.4426950408889634);
  const void* mask_ptr = in.mask ? in.mask->raw() : nullptr;
  be.launch(f, grid, dim3(unsigned(flash_threads(c))), unsigned(smem), out.raw(), lse.raw(), in.q->raw(), in.k->raw(),
            in.v->raw(), mask_ptr, nbatch, in.L, in.S, in.E, in.Ev, rs(*in.q), cs(*in.q), rs(*in.k), cs(*in.k),
            rs(*in.v), cs(*in.v), m_rs, m_cs, cb.shape, cb.strides[0], cb.strides[1], cb.strides[2], cb.strides[3],
            scale_log2, int32_t(mask_kind), int32_t(in.causal ? 1 : 0), vec);
}

}  // namespace

void gemm_or_zero(CudaBackend& be, const GemmArgs& g, std::string_view op) {
  if (g.M == 0 || g.N == 0 || g.batch == 0) return;
  if (g.K == 0) {
    EMBER_CUDA_CHECK(
        cudaMemsetAsync(g.C, 0, size_t(g.batch * g.M * g.N) * dtype_size(g.dtype), be.stream()));
    return;
  }
  gemm_lt(be, g, op);
}

MaskLayout mask_layout(const AttnInputs& in) {
  const int r = in.q->shape().rank();
  MaskLayout m;
  m.batch.assign(size_t(r - 2), 0);
  if (in.mask) {
    Shape full = in.q->shape();
    full[-1] = in.S;
    const auto st = broadcast_strides(*in.mask, full);
    m.batch = lead_strides(st, r - 2);
    m.rs = st[size_t(r - 2)];
    m.cs = st[size_t(r - 1)];
  }
  return m;
}

void attention_softmax(CudaBackend& be, Op& op, const AttnInputs& in, DType ct, void* P, float* lse, int64_t rows,
                       int64_t b0) {
  const AttnMask mk = mask_kind_of(in);
  const DType mdt = in.mask ? in.mask->dtype() : DType::boolean;
  const MaskLayout ml = mask_layout(in);
  const Collapsed cb = collapse(op.name(), in.batch, {ml.batch});
  const std::string key = "attention/softmax/" + std::string(dtype_name(ct)) + "/" +
                          (mk == AttnMask::none ? std::string("none") : std::string(dtype_name(mdt)));
  CUfunction f = be.jit().get(key, "attn_softmax", [&] { return attention_softmax_source(ct, mk, mdt); });
  const dim3 grid(unsigned(std::min<int64_t>(rows, int64_t(be.sm_count()) * 16)));
  const void* mask_ptr = in.mask ? in.mask->raw() : nullptr;
  const int32_t causal = in.causal ? 1 : 0;
  if (ct == DType::f64)
    be.launch(f, grid, dim3(256), 0, P, lse, mask_ptr, rows, b0, in.L, in.S, cb.shape, cb.strides[0], ml.rs, ml.cs,
              in.scale, causal);
  else
    be.launch(f, grid, dim3(256), 0, P, lse, mask_ptr, rows, b0, in.L, in.S, cb.shape, cb.strides[0], ml.rs, ml.cs,
              float(in.scale), causal);
}

namespace {

// Materialised scores: P = softmax(q k^T * scale + mask), then out = P v (in f32 for the half
// types, f64 for f64).
void attention_fallback(CudaBackend& be, Op& op, const AttnInputs& in, CudaTensorPtr& out, CudaTensor& lse) {
  const DType dt = in.q->dtype();
  const DType ct = dt == DType::f64 ? DType::f64 : DType::f32;
  auto q = contiguous_as(be, in.q, ct), k = contiguous_as(be, in.k, ct), v = contiguous_as(be, in.v, ct);
  const int64_t B = in.batch.numel(), L = in.L, S = in.S, E = in.E, Ev = in.Ev;
  Shape ss = in.batch;
  ss.dims().push_back(L);
  ss.dims().push_back(S);
  auto scores = alloc(be, {ss, ct});
  gemm_or_zero(be,
               {.dtype = ct, .M = L, .N = S, .K = E, .A = q->raw(), .lda = E, .stride_a = L * E, .B = k->raw(),
                .ldb = E, .stride_b = S * E, .tb = true, .C = scores->raw(), .ldc = S, .stride_c = L * S, .batch = B},
               op.name());
  // masked, scaled softmax over each row
  attention_softmax(be, op, in, ct, scores->raw(), static_cast<float*>(lse.raw()), B * L, 0);
  // out = P v
  if (Ev == 0) return;  // (the scores were only needed for lse)
  CudaTensorPtr res = ct == dt ? out : alloc(be, {out->shape(), ct});
  gemm_lt(be,
          {.dtype = ct, .M = L, .N = Ev, .K = S, .A = scores->raw(), .lda = S, .stride_a = L * S, .B = v->raw(),
           .ldb = Ev, .stride_b = S * Ev, .C = res->raw(), .ldc = Ev, .stride_c = L * Ev, .batch = B},
          op.name());
  if (res != out) copy_view(be, view_of(*out), view_of(*res));
}

// Outputs out and lse (f32, one per query row).
std::vector<PrimitivePtr> attention_kernel(CudaBackend& be, Op& op) {
  const AttnInputs in = attn_inputs(op, 3);
  auto out = alloc(be, op.outputs[0]), lse = alloc(be, op.outputs[1]);
  if (lse->numel() == 0) return {out, lse};
  if (in.S == 0) {  // softmax over nothing: an empty sum, whose log is -inf
    if (out->numel() > 0)
      EMBER_CUDA_CHECK(cudaMemsetAsync(out->raw(), 0, size_t(out->numel()) * dtype_size(out->dtype()), be.stream()));
    fill_bits(be, lse->raw(), lse->numel(), sizeof(float), 0xff800000u);
    return {out, lse};
  }
  if (cudnn_attention(be, op, in, *out, *lse)) return {out, lse};
  const DType dt = in.q->dtype();
  if (dt != DType::f64 && in.E <= kMaxFusedDim && in.Ev <= kMaxFusedDim && in.L < (int64_t(1) << 30) &&
      in.S < (int64_t(1) << 30))  // (the flash kernels index rows and keys in 32 bits)
    launch_flash(be, op, in, *out, *lse);
  else
    attention_fallback(be, op, in, out, *lse);
  return {out, lse};
}

}  // namespace

std::string FlashConfig::key() const {
  return "attention/flash/" + std::string(dtype_name(dtype)) + "/d" + std::to_string(head_dim) + "/dv" +
         std::to_string(value_dim) +
         (!tensor_cores ? "/fma" : "/mma" + (version == 1 ? std::string() : std::to_string(version))) +
         (tensor_cores && version == 3 ? "/b" + std::to_string(flash_min_blocks(*this)) : "");
}

// Version 3 of the tensor-core kernel: 128 query rows (8 warps of 16) per block, so each K / V
// tile in shared memory feeds twice the rows.
int flash_block_rows(const FlashConfig& c) { return c.tensor_cores && c.version == 3 ? 128 : 64; }
int flash_threads(const FlashConfig& c) { return c.tensor_cores ? flash_block_rows(c) * 2 : 256; }

// Blocks per SM the register allocation of the tensor-core kernel v2 / v3 aims at (v2: 1, no
// bound): v3 with D, DV <= 64 asks for 2 (128 registers; unbounded one 8-warp block would fill
// an SM's registers); with larger dims 2 would spill (D = 128: 112 bytes), so 1.
int flash_min_blocks(const FlashConfig& c) {
  if (c.version != 3) return 1;
  if (c.min_blocks > 0) return c.min_blocks;
  return c.head_dim <= 64 && c.value_dim <= 64 ? 2 : 1;
}

size_t flash_smem_bytes(const FlashConfig& c) {
  const size_t D = size_t(c.head_dim), DV = size_t(c.value_dim), BM = size_t(flash_block_rows(c)),
               BN = size_t(flash_block_keys(c));
  if (c.tensor_cores && c.version == 1) return (BM * (D + 8) + BN * (D + 8) + DV * (BN + 8)) * 2;
  if (c.tensor_cores) {  // K, V double-buffered; TF32: f32 elements, rows padded by 4
    const size_t pad = c.dtype == DType::f32 ? 4 : 8, esz = c.dtype == DType::f32 ? 4 : 2;
    return (BM * (D + pad) + 2 * BN * (D + pad) + 2 * BN * (DV + pad)) * esz;
  }
  return (BM * (D + 1) + BN * (D + 1) + BN * DV + BM * (BN + 1)) * 4;
}

// ---------------------------------------------------------------------------------------
// The device helpers of the tensor-core kernels (forward v1, v2/v3 and the backward), after
// the source's `T` and async_copy_helpers() (jit.hpp), one set per precision behind one
// interface, so the v2/v3 forward and the backward are one source for f16, bf16 and TF32:
//   SE, SPAD, SVEC, SEB   a shared-memory element, the row padding of shared tiles, elements per
//                         16-byte copy, bytes per element
//   mma_round             a value of T as the products see it (TF32: rounded; halves: itself)
//   se_of, store2, store2s, store4   an input element's bits for shared memory; stores of two
//                         (four) fp32 values rounded to T, or to the products' input type in
//                         shared memory
//   lane_a, lane_b, lane_bt, lane_at   per-lane fragment offsets (elements) into row-major
//                         tiles: A rows row0.., B [n][k], B [k][n], A from the stored transpose [k][m]
//   warp_product_abt / _pb / _atb   the warp-level products (below)

namespace {

const char* const kMmaCommon = R"CUDA(
// zeroes a warp's accumulator tiles (C fragments)
template <int TILES>
__device__ __forceinline__ void zero_acc(float (&acc)[TILES][4]) {
#pragma unroll
  for (int t = 0; t < TILES; ++t) acc[t][0] = acc[t][1] = acc[t][2] = acc[t][3] = 0.f;
}
// 2^x on the SFU (inputs are scores minus a running max: <= 0, or -inf giving 0)
__device__ __forceinline__ float fast_exp2(float x) {
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
}
)CUDA";

// f16 / bf16 (MMA_TYPE): m16n8k16, fragments from ldmatrix.
const char* const kHalfMma = R"CUDA(
typedef uint16_t SE;  // the input's bits
#define SPAD 8        // 16-byte rows whose 8-row ldmatrix phases fall in distinct bank groups
#define SVEC 8
#define SEB 2u
// c += a b on tensor cores, m16n8k16 (fp32 accumulators; fragment layouts: see the v2 kernel)
__device__ __forceinline__ void mma16816(float* c, uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3, uint32_t b0,
                                         uint32_t b1) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32." MMA_TYPE "." MMA_TYPE ".f32 {%0, %1, %2, %3}, "
               "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}
__device__ __forceinline__ void mma16816(float* c, const uint32_t* a, const uint32_t* b) {
  mma16816(c, a[0], a[1], a[2], a[3], b[0], b[1]);
}
// Two floats rounded to the input type, `lo` in the low half.
__device__ __forceinline__ uint32_t pack2(float lo, float hi) {
  uint32_t r;
  asm("cvt.rn." MMA_TYPE "x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}
__device__ __forceinline__ SE se_of(T x) { return x.bits; }
__device__ __forceinline__ float mma_round(float x) { return x; }  // (T values are exact already)
__device__ __forceinline__ void store2(T* p, float lo, float hi) { *(uint32_t*)p = pack2(lo, hi); }
__device__ __forceinline__ void store2s(SE* p, float lo, float hi) { *(uint32_t*)p = pack2(lo, hi); }
__device__ __forceinline__ void store4(T* p, float4 a) { *(uint2*)p = make_uint2(pack2(a.x, a.y), pack2(a.z, a.w)); }
// ldmatrix x4: lanes 8m..8m+7 give the row addresses of 8x8 matrix m
__device__ __forceinline__ uint32_t lane_a(int row0, int st) {
  const int lane = threadIdx.x & 31;
  return uint32_t((row0 + (lane & 15)) * st + (lane >> 4) * 8);
}
__device__ __forceinline__ uint32_t lane_b(int st) {
  const int lane = threadIdx.x & 31;
  return uint32_t(((lane & 7) + ((lane >> 4) << 3)) * st + ((lane >> 3) & 1) * 8);
}
__device__ __forceinline__ uint32_t lane_bt(int st) {
  const int lane = threadIdx.x & 31;
  return uint32_t(((lane & 7) + ((lane >> 3) & 1) * 8) * st + (lane >> 4) * 8);
}
__device__ __forceinline__ uint32_t lane_at(int st) {
  const int lane = threadIdx.x & 31;
  return uint32_t(((lane & 7) + (lane >> 4) * 8) * st + ((lane >> 3) & 1) * 8);
}
// Four 8x8 b16 matrices; lanes 8m..8m+7 give the row addresses of matrix m (.trans: transposed).
__device__ __forceinline__ void ldsm_x4(uint32_t* r, uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}
__device__ __forceinline__ void ldsm_x4_t(uint32_t* r, uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}

// acc += P B for one warp: P is the warp's 16 x M accumulators (rounded to the input type; two
// adjacent 8-column tiles, packed, are an A fragment), B is a row-major [M][NC] tile (row stride
// ST_ halves) read with ldmatrix .trans (b_lane = lane_bt); acc[t] holds the 16 x 8 block of
// columns 8t..8t+7.
template <int M, int NC, int ST_>
__device__ __forceinline__ void warp_product_pb(float (&acc)[NC / 8][4], const float (&p)[M / 8][4], uint32_t b_base,
                                                uint32_t b_lane) {
#pragma unroll
  for (int kk = 0; kk < M / 16; ++kk) {
    const uint32_t a[4] = {pack2(p[2 * kk][0], p[2 * kk][1]), pack2(p[2 * kk][2], p[2 * kk][3]),
                           pack2(p[2 * kk + 1][0], p[2 * kk + 1][1]), pack2(p[2 * kk + 1][2], p[2 * kk + 1][3])};
#pragma unroll
    for (int t = 0; t < NC / 8; t += 2) {
      uint32_t bb[4];
      ldsm_x4_t(bb, b_base + (b_lane + kk * 16 * ST_ + t * 8) * 2u);
      mma16816(acc[t], a, bb);
      mma16816(acc[t + 1], a, bb + 2);
    }
  }
}

// acc = A B^T over K columns for one warp: A is 16 rows of a row-major [row][K] tile (the
// warp's rows; a_lane = lane_a), B is N rows of another ([n][K], b_lane = lane_b); both with row
// stride ST_ halves; acc[t] holds the 16 x 8 block of B rows 8t..8t+7 (C fragment layout).
template <int N, int K, int ST_>
__device__ __forceinline__ void warp_product_abt(float (&acc)[N / 8][4], uint32_t a_base, uint32_t a_lane,
                                                 uint32_t b_base, uint32_t b_lane) {
  zero_acc(acc);
#pragma unroll
  for (int kk = 0; kk < K / 16; ++kk) {
    uint32_t a[4];
    ldsm_x4(a, a_base + (a_lane + kk * 16) * 2u);
#pragma unroll
    for (int nt = 0; nt < N / 8; nt += 2) {
      uint32_t bb[4];
      ldsm_x4(bb, b_base + (b_lane + nt * 8 * ST_ + kk * 16) * 2u);
      mma16816(acc[nt], a, bb);
      mma16816(acc[nt + 1], a, bb + 2);
    }
  }
}

// acc += A B over KD rows for one warp, A read from its stored transpose (a [KD][..] tile, row
// stride SA; a_off = lane_at(SA) + the first of A's 16 rows), B a row-major [KD][..] tile (row
// stride SB; b_off = lane_bt(SB) + the first of its NC columns).
template <int KD, int NC, int SA, int SB>
__device__ __forceinline__ void warp_product_atb(float (&acc)[NC / 8][4], uint32_t a_base, uint32_t a_off,
                                                 uint32_t b_base, uint32_t b_off) {
#pragma unroll
  for (int kk = 0; kk < KD / 16; ++kk) {
    uint32_t a[4];
    ldsm_x4_t(a, a_base + (a_off + kk * 16 * SA) * 2u);
#pragma unroll
    for (int t = 0; t < NC / 8; t += 2) {
      uint32_t bb[4];
      ldsm_x4_t(bb, b_base + (b_off + kk * 16 * SB + t * 8) * 2u);
      mma16816(acc[t], a, bb);
      mma16816(acc[t + 1], a, bb + 2);
    }
  }
}
)CUDA";

// TF32 (f32 inputs under set_allow_tf32(true)): m16n8k8 on tensor cores, fp32 accumulators.
// Fragment layouts (PTX ISA, m16n8k8 .tf32): g = lane / 4, tg = lane % 4;
//   A (16x8): a0 = (g, tg), a1 = (g+8, tg), a2 = (g, tg+4), a3 = (g+8, tg+4)
//   B (8x8):  b0 = (k tg, n g), b1 = (k tg+4, n g)
//   C (16x8): c0,c1 = (g, 2tg..+1), c2,c3 = (g+8, 2tg..+1)
// A product whose A operand is an accumulator (P, dS^T) or a stored transpose takes its k
// index permuted within each 8: k = tg is column 2tg and k = tg + 4 column 2tg + 1, so the
// accumulators are the A fragment as they are (a = {c0, c2, c1, c3}), and B's rows are read in
// the same order (rows 2tg and 2tg + 1). With row strides = 4 mod 32 words (SPAD 4) every
// fragment load is free of bank conflicts. Shared tiles hold the f32 bits; fragments are
// rounded to TF32 (cvt.rna) as they are loaded.
const char* const kTf32Mma = R"CUDA(
typedef uint32_t SE;  // f32 bits
#define SPAD 4
#define SVEC 4
#define SEB 4u
__device__ __forceinline__ void mma1688(float* c, uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3, uint32_t b0,
                                        uint32_t b1) {
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, "
               "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}
__device__ __forceinline__ uint32_t tf32_of(float x) {
  uint32_t r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
  return r;
}
__device__ __forceinline__ uint32_t lds_tf32(uint32_t addr) {
  float v;
  asm volatile("ld.shared.f32 %0, [%1];\n" : "=f"(v) : "r"(addr));
  return tf32_of(v);
}
__device__ __forceinline__ SE se_of(float x) { return __float_as_uint(x); }
// x as the products see it (rounded to TF32)
__device__ __forceinline__ float mma_round(float x) { return __uint_as_float(tf32_of(x)); }
__device__ __forceinline__ void store2(float* p, float lo, float hi) { *(float2*)p = make_float2(lo, hi); }
__device__ __forceinline__ void store2s(SE* p, float lo, float hi) { *(uint2*)p = make_uint2(tf32_of(lo), tf32_of(hi)); }
__device__ __forceinline__ void store4(float* p, float4 a) { *(float4*)p = a; }
__device__ __forceinline__ uint32_t lane_a(int row0, int st) {
  const int lane = threadIdx.x & 31;
  return uint32_t((row0 + (lane >> 2)) * st + (lane & 3));
}
__device__ __forceinline__ uint32_t lane_b(int st) {
  const int lane = threadIdx.x & 31;
  return uint32_t((lane >> 2) * st + (lane & 3));
}
__device__ __forceinline__ uint32_t lane_bt(int st) {
  const int lane = threadIdx.x & 31;
  return uint32_t(2 * (lane & 3) * st + (lane >> 2));
}
__device__ __forceinline__ uint32_t lane_at(int st) { return lane_bt(st); }

// acc += P B (see the half version): P's k index permuted, B rows 2tg, 2tg + 1 (b_lane = lane_bt).
template <int M, int NC, int ST_>
__device__ __forceinline__ void warp_product_pb(float (&acc)[NC / 8][4], const float (&p)[M / 8][4], uint32_t b_base,
                                                uint32_t b_lane) {
#pragma unroll
  for (int kk = 0; kk < M / 8; ++kk) {
    const uint32_t a0 = tf32_of(p[kk][0]), a1 = tf32_of(p[kk][2]), a2 = tf32_of(p[kk][1]), a3 = tf32_of(p[kk][3]);
#pragma unroll
    for (int t = 0; t < NC / 8; ++t) {
      const uint32_t bp = b_base + (b_lane + kk * 8 * ST_ + t * 8) * 4u;
      mma1688(acc[t], a0, a1, a2, a3, lds_tf32(bp), lds_tf32(bp + ST_ * 4u));
    }
  }
}

// acc = A B^T (see the half version; a_lane = lane_a, b_lane = lane_b, both with row stride ST_).
template <int N, int K, int ST_>
__device__ __forceinline__ void warp_product_abt(float (&acc)[N / 8][4], uint32_t a_base, uint32_t a_lane,
                                                 uint32_t b_base, uint32_t b_lane) {
  zero_acc(acc);
#pragma unroll
  for (int kk = 0; kk < K / 8; ++kk) {
    const uint32_t ap = a_base + (a_lane + kk * 8) * 4u;
    const uint32_t a0 = lds_tf32(ap), a1 = lds_tf32(ap + 8 * ST_ * 4u), a2 = lds_tf32(ap + 16u),
                   a3 = lds_tf32(ap + (8 * ST_ + 4) * 4u);
#pragma unroll
    for (int nt = 0; nt < N / 8; ++nt) {
      const uint32_t bp = b_base + (b_lane + nt * 8 * ST_ + kk * 8) * 4u;
      mma1688(acc[nt], a0, a1, a2, a3, lds_tf32(bp), lds_tf32(bp + 16u));
    }
  }
}

// acc += A B from A's stored transpose (see the half version; a_off = lane_at(SA) + the first
// row, b_off = lane_bt(SB) + the first column; k permuted in both).
template <int KD, int NC, int SA, int SB>
__device__ __forceinline__ void warp_product_atb(float (&acc)[NC / 8][4], uint32_t a_base, uint32_t a_off,
                                                 uint32_t b_base, uint32_t b_off) {
#pragma unroll
  for (int kk = 0; kk < KD / 8; ++kk) {
    const uint32_t ap = a_base + (a_off + kk * 8 * SA) * 4u;
    const uint32_t a0 = lds_tf32(ap), a1 = lds_tf32(ap + 32u), a2 = lds_tf32(ap + SA * 4u),
                   a3 = lds_tf32(ap + (SA + 8) * 4u);
#pragma unroll
    for (int t = 0; t < NC / 8; ++t) {
      const uint32_t bp = b_base + (b_off + kk * 8 * SB + t * 8) * 4u;
      mma1688(acc[t], a0, a1, a2, a3, lds_tf32(bp), lds_tf32(bp + SB * 4u));
    }
  }
}
)CUDA";

}  // namespace

std::string mma_helpers(DType dt) {
  EMBER_CHECK(use_tensor_cores(dt) || dt == DType::f32, "attention: no tensor-core kernel for ", dt);
  if (dt == DType::f32) return async_copy_helpers() + kMmaCommon + kTf32Mma;
  return std::string("#define MMA_TYPE \"") + (dt == DType::f16 ? "f16" : "bf16") + "\"\n" + async_copy_helpers() +
         kMmaCommon + kHalfMma;
}

// The natural log-sum-exp of a row (the op's second output) from a flash kernel's running max
// m and sum l = sum exp2(s - m) in the log2 domain: -inf for a row with nothing kept (m = -inf,
// l = 0), NaN when the scores were.
const char* kRowLse = R"CUDA(
__device__ __forceinline__ float row_lse(float m, float l) {
  if (m == -ember_inf()) return l == 0.f ? m : ember_nan();
  return (m + log2f(l)) * 0.6931471805599453f;
}
)CUDA";

std::string flash_attention_source(const FlashConfig& c) {
  // tensor cores: f16 / bf16, or TF32 for f32 with head dims up to 128 (v2 / v3 only)
  const bool tc_ok = use_tensor_cores(c.dtype) ||
                     (c.dtype == DType::f32 && c.version != 1 && c.head_dim <= 128 && c.value_dim <= 128);
  EMBER_CHECK(c.tensor_cores ? tc_ok : (c.dtype == DType::f32 || use_tensor_cores(c.dtype)),
              "attention: no flash kernel for ", c.dtype, " (head dims ", c.head_dim, ", ", c.value_dim, ")");
  std::string s = "typedef " + std::string(device_type(c.dtype)) + " T;\n" + kRowLse;
  s += "#define D " + std::to_string(c.head_dim) + "\n#define DV " + std::to_string(c.value_dim) + "\n#define BN " +
       std::to_string(flash_block_keys(c)) + "\n";
  if (c.tensor_cores) {
    s += mma_helpers(c.dtype);
    if (c.version == 1) {
      s += kTensorCoreKernel;
    } else {  // versions 2 and 3 share the source: block rows, threads, diagonal-only masking
      s += "#define BM " + std::to_string(flash_block_rows(c)) + "\n#define NT " + std::to_string(flash_threads(c)) +
           "\n#define FAST_TILES " + std::string(c.version == 3 ? "1" : "0") + "\n#define FWD_MIN_BLOCKS " +
           std::to_string(flash_min_blocks(c)) + "\n";
      s += kTensorCoreKernelV2;
    }
  } else {
    s += kScalarKernel;
  }
  return s;
}

std::vector<FlashConfig> all_flash_configs() {
  std::vector<FlashConfig> r;
  for (DType dt : {DType::f32, DType::f16, DType::bf16})
    for (int d : {32, 64, 128, 256})
      for (int dv : {32, 64, 128, 256})
        for (int version : {1, 2, 3}) {
          FlashConfig c;
          c.dtype = dt;
          c.head_dim = d;
          c.value_dim = dv;
          c.tensor_cores = use_tensor_cores(dt);
          c.version = version;
          if (c.tensor_cores || version == 2) r.push_back(c);
          if (dt == DType::f32 && version != 1 && d <= 128 && dv <= 128) {  // TF32
            c.tensor_cores = true;
            r.push_back(c);
          }
        }
  return r;
}

std::string attention_softmax_source(DType dt, AttnMask mask, DType mask_dtype) {
  std::string s = "typedef " + std::string(device_type(dt)) + " C;\n";
  s += "#define HAS_MASK " + std::to_string(int(mask)) + "\n";
  if (mask == AttnMask::additive) s += "typedef " + std::string(device_type(mask_dtype)) + " M;\n";
  s += kSoftmaxKernel;
  return s;
}

void register_attention_kernels(KernelTable& t) {
  t[size_t(OpKind::attention)] = attention_kernel;
  t[size_t(OpKind::attention_backward)] = attention_backward_kernel;
}

}  // namespace ember::cuda
