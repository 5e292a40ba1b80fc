// Scaled dot-product attention, backward (the forward and the shared conventions are in
// attention.cpp).
//
// attention_backward (q, k, v, out, dout, mask -> dq, dk, dv): first cuDNN's fused backward
// where it applies (attention_cudnn.cpp: f16 / bf16 without a mask, given the forward's lse, no
// EMBER_CUDA_ATTN_BWD set); else for f16 / bf16 with E == Ev in {32, 64, 128} a flash-attention-2 style backward on tensor cores (three kernels,
// see kBackwardTcKernel; by default 8 warps and 128 keys a block, 128-row prep blocks, mask
// arithmetic only where needed and vector dq reductions; EMBER_CUDA_ATTN_BWD=v1 selects the
// 4-warp, 64-key kernel, =generic the materialised path; EMBER_CUDA_ATTN_BWD_BLOCKS=n sets the
// register budget, EMBER_CUDA_ATTN_BWD_BM=64 the query rows per step for D = 64, default 32;
// all read per call); otherwise the
// scores are materialised per chunk of the batch like the forward's fallback, with a small
// kernel for dS = P (dP - rowsum(P dP)).
#include <cmath>
#include <cstdlib>

#include "attention_internal.hpp"
#include "attention_sources.hpp"
#include "cuda_backend.hpp"
#include "matmul.hpp"

namespace ember::cuda {

namespace {

// ---------------------------------------------------------------------------------------
// Backward, tensor-core path (f16 / bf16, E == Ev == D in {32, 64, 128}; q, k, v, out, dout
// contiguous [B, rows, D]). With P = softmax(scale q k^T + mask) and g = dout:
//   dv = P^T g,  dS = P * (g v^T - Dsum),  Dsum_i = sum_c g_ic out_ic,  dq = scale dS k,  dk = scale dS^T q.
// (TF32: Dsum takes g rounded to TF32, as the product g v^T does, so that P (g v^T - Dsum)
// cancels where it should, e.g. dS = 0 exactly for a row that sees a single key.)
// attn_bwd_dsum, when the forward's lse is an input (as autodiff passes it): Dsum_i and lse_i
//   in the log2 domain, a warp per row. Without it, attn_bwd_prep (one block per PM = 16 NW
//   query rows, the forward's score loop without the P V product, key tiles up to the diagonal
//   only when causal): lse_i = log2 sum_j exp2(s_ij) of the log2-domain scores s (-inf for a
//   fully masked row) and Dsum_i, both fp32. (Taking lse from the forward: 429 -> 364 us for
//   attention_bf16 forward + backward on an H200.)
// attn_bwd_kv (one block per BN = 16 NW keys, NW = 4 or 8 warps; warp w owns keys 16w..16w+15;
//   the first key blocks, with the most query blocks under causality, start first): K_j and V_j stay in
//   shared memory while the block walks the query blocks of BM rows that can see them (causal:
//   from the block holding query n0 on). Per query block, in registers (keys x queries):
//   S^T = K Q^T, P^T = exp2(s - lse), dV += P^T dO, dP^T = V dO^T, dS^T = P^T (dP^T - Dsum),
//   dK += dS^T Q; dS^T goes through shared memory to give dQ_i += dS K (each warp 16 queries x
//   D / (NW / (BM / 16)) dims: one atomic per element per block), added to an fp32 accumulator
//   with atomics (v2: red.global.add.v2.f32, a row's 4 lanes on 32 contiguous bytes). P and dS are rounded to
//   the input type for the products, as flash attention does.
// attn_bwd_dq: dq = scale * accumulator in the input type.
// Shared tiles are row-major with row stride D + 8 (or BM + 8) halves: 16-byte aligned rows whose
// 8-row ldmatrix phases fall in distinct bank groups. Fragments (see the forward kernel's layout
// note) come from ldmatrix: plain for operands whose pairs run along a stored row (K, V as A;
// Q, dO as B of a product over the head dim), .trans for those whose pairs run down a column
// (Q, dO, K as B of a product over queries or keys; dS as A from the stored dS^T).

const char* kBackwardTcKernel = R"CUDA(
#define ST (D + SPAD)
#define SST (BM + SPAD)
#define LOG2E 1.4426950408889634f

// Rows [row0, row0 + NROWS) of a contiguous [rows][D] matrix into shared memory (row stride
// ST), zeros from row `rows` on. Asynchronous: commit and wait before use.
template <int NROWS>
__device__ __forceinline__ void load_rows(SE* dst, const T* src, int64_t row0, int64_t rows) {
  const uint32_t base = smem_addr(dst);
  for (int idx = threadIdx.x; idx < NROWS * (D / SVEC); idx += NT) {
    const int r = idx / (D / SVEC), c = (idx - r * (D / SVEC)) * SVEC;
    const int64_t row = row0 + r;
    const bool ok = row < rows;
    cp_async16(base + uint32_t(r * ST + c) * SEB, ok ? (const void*)(src + row * D + c) : (const void*)src, ok);
  }
}

// Whether query `row` keeps key `col` (causality, the bool mask); adds the additive mask (log2
// domain) to `t`. MASK_KIND (0 none, 1 bool, 2 additive) and CAUSAL are fixed per variant.
__device__ __forceinline__ bool keep_score(float& t, int64_t row, int64_t col, const void* mask, int64_t moff,
                                           int64_t m_rs, int64_t m_cs) {
  if (CAUSAL && col > row) return false;
  if (MASK_KIND == 1) return ((const bool*)mask)[moff + row * m_rs + col * m_cs];
  if (MASK_KIND == 2) t += float(((const T*)mask)[moff + row * m_rs + col * m_cs]) * LOG2E;
  return true;
}

extern "C" __global__ void __launch_bounds__(NT) attn_bwd_prep(
    float* __restrict__ lse, float* __restrict__ dsum, const T* __restrict__ q, const T* __restrict__ k,
    const T* __restrict__ out, const T* __restrict__ dout, const void* __restrict__ mask, int64_t nbatch, int64_t L,
    int64_t S, int64_t m_rs, int64_t m_cs, Shape bsh, Strides mb, float scale_log2) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  SE* Qs = (SE*)smem_raw;  // [PM][ST]
  SE* Ks = Qs + PM * ST;   // 2 x [BN][ST] (double-buffered)
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, tg = lane & 3;
  const float ninf = -ember_inf();
  const int64_t ntiles = (L + PM - 1) / PM;
  // per-lane fragment offsets (elements): A = the warp's 16 Q rows; B = K [key][dim]
  const uint32_t q_lane = lane_a(warp * 16, ST), k_lane = lane_b(ST);
  const uint32_t q_base = smem_addr(Qs), k_base = smem_addr(Ks);
  // (tile, batch entry) pairs tile-major over a 1-D grid: the longest causal rows of every
  // entry start first
  for (int64_t idx = blockIdx.x; idx < ntiles * nbatch; idx += gridDim.x) {
    const int64_t ti = idx / nbatch, b = idx - ti * nbatch;
    const T* qp = q + b * L * D;
    const T* kp = k + b * S * D;
    const int64_t moff = MASK_KIND ? offset_of(b, bsh, mb) : 0;
    const int64_t m0 = (CAUSAL ? ntiles - 1 - ti : ti) * PM;  // causal: longest rows first
    const int64_t kv_end = CAUSAL ? min(S, m0 + PM) : S;  // causal: no key tile past the diagonal
    const int64_t nkv = (kv_end + BN - 1) / BN;
    __syncthreads();  // the previous tile is done with Qs and Ks
    load_rows<PM>(Qs, qp, m0, L);
    load_rows<BN>(Ks, kp, 0, S);
    cp_async_commit();
    // Dsum of the warp's 16 rows (lanes across the dims)
    for (int rr = 0; rr < 16; ++rr) {
      const int64_t row = m0 + warp * 16 + rr;
      if (row >= L) break;
      const T* o = out + (b * L + row) * D;
      const T* d = dout + (b * L + row) * D;
      float s = 0.f;
      for (int c = lane; c < D; c += 32) s += float(o[c]) * mma_round(float(d[c]));
#pragma unroll
      for (int off = 16; off > 0; off >>= 1) s += __shfl_xor_sync(0xffffffffu, s, off);
      if (lane == 0) dsum[b * L + row] = s;
    }
    float mrow[2] = {ninf, ninf}, lrow[2] = {0.f, 0.f};  // rows g and g + 8 of the warp
    const int64_t row0 = m0 + warp * 16 + g, row1 = row0 + 8;
    for (int64_t it = 0; it < nkv; ++it) {
      const int64_t n0 = it * BN;
      const int cur = int(it & 1);
      if (it + 1 < nkv) {  // prefetch the next key tile into the other buffer
        load_rows<BN>(Ks + (cur ^ 1) * BN * ST, kp, n0 + BN, S);
        cp_async_commit();
        cp_async_wait<1>();
      } else {
        cp_async_wait<0>();
      }
      __syncthreads();
      const uint32_t kcur = k_base + uint32_t(cur * BN * ST) * SEB;
      float sacc[BN / 8][4];
      warp_product_abt<BN, D, ST>(sacc, q_base, q_lane, kcur, k_lane);  // S = Q K^T
      // element e of tile nt: row (e < 2 ? row0 : row1), key n0 + nt * 8 + 2 tg + (e & 1).
      // FAST_TILES: no per-element checks where the warp's rows need no masking in this tile
      // (rows past L are never stored)
      bool full = false;
#if FAST_TILES
      full = MASK_KIND == 0 && n0 + BN <= S && (!CAUSAL || n0 + BN - 1 <= m0 + warp * 16);
#endif
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
#pragma unroll
        for (int nt = 0; nt < BN / 8; ++nt) {
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const int64_t row = e < 2 ? row0 : row1;
            const int64_t col = n0 + nt * 8 + tg * 2 + (e & 1);
            float t = sacc[nt][e] * scale_log2;
            const bool keep = row < L && col < S && keep_score(t, row, col, mask, moff, m_rs, m_cs);
            sacc[nt][e] = keep ? t : ninf;
            mx[e >> 1] = fmaxf(mx[e >> 1], sacc[nt][e]);
          }
        }
      }
      float alpha[2], msub[2];
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xffffffffu, mx[h], 1));
        mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xffffffffu, mx[h], 2));
        const float m_new = fmaxf(mrow[h], mx[h]);
        msub[h] = m_new == ninf ? 0.f : m_new;  // nothing kept yet: exp2(-inf - 0) = 0
        alpha[h] = fast_exp2(mrow[h] - msub[h]);
        mrow[h] = m_new;
      }
      float sum[2] = {0.f, 0.f};
#pragma unroll
      for (int nt = 0; nt < BN / 8; ++nt) {
#pragma unroll
        for (int e = 0; e < 4; ++e) sum[e >> 1] += fast_exp2(sacc[nt][e] - msub[e >> 1]);
      }
      lrow[0] = lrow[0] * alpha[0] + sum[0];  // per-thread partial sums (reduced at the end)
      lrow[1] = lrow[1] * alpha[1] + sum[1];
      __syncthreads();  // every warp is done with buffer `cur` before it is refilled
    }
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      lrow[h] += __shfl_xor_sync(0xffffffffu, lrow[h], 1);
      lrow[h] += __shfl_xor_sync(0xffffffffu, lrow[h], 2);
      const int64_t row = h ? row1 : row0;
      if (row < L && tg == 0) lse[b * L + row] = mrow[h] == ninf ? ninf : mrow[h] + log2f(lrow[h]);
    }
  }
}

extern "C" __global__ void __launch_bounds__(NT, KV_MIN_BLOCKS) attn_bwd_kv(
    T* __restrict__ dk, T* __restrict__ dv, float* __restrict__ dq_acc, const T* __restrict__ q,
    const T* __restrict__ k, const T* __restrict__ v, const T* __restrict__ dout, const float* __restrict__ lse,
    const float* __restrict__ dsum, const void* __restrict__ mask, int64_t nbatch, int64_t L, int64_t S, int64_t m_rs,
    int64_t m_cs, Shape bsh, Strides mb, float scale_log2, float scale) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  SE* Ks = (SE*)smem_raw;                    // [BN][ST]
  SE* Vs = Ks + BN * ST;                     // [BN][ST]
  SE* Qs = Vs + BN * ST;                     // 2 x [BM][ST] (double-buffered)
  SE* Os = Qs + 2 * BM * ST;                 // 2 x [BM][ST] (dout, double-buffered)
  SE* Ss = Os + 2 * BM * ST;                 // [BN][SST] (dS^T)
  float* lse_s = (float*)(Ss + BN * SST);    // [BM]
  float* dsum_s = lse_s + BM;                // [BM]
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, tg = lane & 3;
  const float ninf = -ember_inf();
  // dQ split: QG groups of 16 queries x DG groups of DW dims over the NW warps
  const int QG = BM / 16, DG = NW / QG, DW = D / DG;
  const int qm = (warp % QG) * 16, dc0 = (warp / QG) * DW;
  // per-lane fragment offsets (elements)
  //   a_lane:  A of a row-major tile, the warp's 16 keys (K, V)
  //   b_lane:  B of a row-major [n][k] tile (Q, dO as B over the head dim)
  //   bt_lane: B of a row-major [k][n] tile (Q, dO, K)
  //   at_lane: A from the stored transpose [k][m] (dS from dS^T)
  const uint32_t a_lane = lane_a(warp * 16, ST), b_lane = lane_b(ST), bt_lane = lane_bt(ST), at_lane = lane_at(SST);
  const uint32_t k_base = smem_addr(Ks), v_base = smem_addr(Vs), q_base0 = smem_addr(Qs), o_base0 = smem_addr(Os),
                 s_base = smem_addr(Ss);
  const int64_t nkb = (S + BN - 1) / BN;
  // (key block, batch entry) pairs block-major over a 1-D grid: every entry's first key block
  // (causal: the one most queries see) starts before any entry's second
  for (int64_t idx = blockIdx.x; idx < nkb * nbatch; idx += gridDim.x) {
    const int64_t kb = idx / nbatch, b = idx - kb * nbatch;
    const T* qp = q + b * L * D;
    const T* kp = k + b * S * D;
    const T* vp = v + b * S * D;
    const T* op = dout + b * L * D;
    const int64_t moff = MASK_KIND ? offset_of(b, bsh, mb) : 0;
    const int n0 = int(kb * BN);  // (32-bit row and key indices: fewer live registers; L, S < 2^30)
    __syncthreads();  // the previous key block is done with the shared tiles
    load_rows<BN>(Ks, kp, n0, S);
    load_rows<BN>(Vs, vp, n0, S);
    cp_async_commit();
    float dkacc[D / 8][4], dvacc[D / 8][4];
#pragma unroll
    for (int t = 0; t < D / 8; ++t)
#pragma unroll
      for (int e = 0; e < 4; ++e) dkacc[t][e] = dvacc[t][e] = 0.f;
    const int key0 = n0 + warp * 16 + g, key1 = key0 + 8;  // keys of accumulator rows g, g + 8
    // causal: queries below n0 see none of these keys. Q and dO of query block m0 are in
    // buffer `buf`; the next block's are copied into the other one meanwhile.
    const int m_first = CAUSAL ? (n0 / BM) * BM : 0;
    if (m_first < L) {
      load_rows<BM>(Qs, qp, m_first, L);
      load_rows<BM>(Os, op, m_first, L);
      cp_async_commit();
    }
    int buf = 0;
    for (int m0 = m_first; m0 < L; m0 += BM, buf ^= 1) {
      // (the trailing barrier of the previous block freed the other buffer and the statistics)
      for (int i = tid; i < BM; i += NT) {
        const int64_t row = m0 + i;
        lse_s[i] = row < L ? lse[b * L + row] : 0.f;
        dsum_s[i] = row < L ? dsum[b * L + row] : 0.f;
      }
      if (m0 + BM < L) {
        load_rows<BM>(Qs + (buf ^ 1) * BM * ST, qp, m0 + BM, L);
        load_rows<BM>(Os + (buf ^ 1) * BM * ST, op, m0 + BM, L);
        cp_async_commit();
        cp_async_wait<1>();  // K, V and this block's Q, dO have landed
      } else {
        cp_async_wait<0>();
      }
      __syncthreads();
      const uint32_t q_base = q_base0 + uint32_t(buf * BM * ST) * SEB, o_base = o_base0 + uint32_t(buf * BM * ST) * SEB;
      // S^T = K Q^T: element e of tile nt is (key e < 2 ? key0 : key1, query m0 + nt * 8 + 2 tg + (e & 1))
      float sacc[BM / 8][4];
      warp_product_abt<BM, D, ST>(sacc, k_base, a_lane, q_base, b_lane);
      // P^T = exp2(s - lse); a fully masked row (lse = -inf) gives NaN over all its keys.
      // FAST_TILES: a warp whose 16 keys x BM queries need no masking (no mask, no tails,
      // causal: every key at or before the first query; then no row is fully masked) skips
      // the per-element checks.
      bool full = false;
#if FAST_TILES
      full = MASK_KIND == 0 && m0 + BM <= L && n0 + warp * 16 + 16 <= S && (!CAUSAL || n0 + warp * 16 + 15 <= m0);
#endif
      if (full) {
#pragma unroll
        for (int nt = 0; nt < BM / 8; ++nt)
#pragma unroll
          for (int e = 0; e < 4; ++e)
            sacc[nt][e] = fast_exp2(fmaf(sacc[nt][e], scale_log2, -lse_s[nt * 8 + tg * 2 + (e & 1)]));
      } else {
#pragma unroll
        for (int nt = 0; nt < BM / 8; ++nt) {
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const int ql = nt * 8 + tg * 2 + (e & 1);
            const int row = m0 + ql, col = e < 2 ? key0 : key1;
            const float l2 = lse_s[ql];
            float t = sacc[nt][e] * scale_log2;
            const bool valid = row < L && col < S;
            const bool keep = valid && keep_score(t, row, col, mask, moff, m_rs, m_cs);
            sacc[nt][e] = keep ? fast_exp2(t - l2) : (valid && l2 == ninf ? ember_nan() : 0.f);
          }
        }
      }
      // dV += P^T dO (A: P^T from the accumulators, k over queries; B: dO [query][dim], .trans)
      warp_product_pb<BM, D, ST>(dvacc, sacc, o_base, bt_lane);
      // dP^T = V dO^T (A: V rows of the warp; B: dO [query][dim] over the dims)
      float pacc[BM / 8][4];
      warp_product_abt<BM, D, ST>(pacc, v_base, a_lane, o_base, b_lane);
      // dS^T = P^T (dP^T - Dsum), into sacc
#pragma unroll
      for (int nt = 0; nt < BM / 8; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) sacc[nt][e] *= pacc[nt][e] - dsum_s[nt * 8 + tg * 2 + (e & 1)];
      // dK += dS^T Q (B: Q [query][dim], .trans)
      warp_product_pb<BM, D, ST>(dkacc, sacc, q_base, bt_lane);
      // dS^T to shared memory: rows = keys of the block, columns = queries
#pragma unroll
      for (int nt = 0; nt < BM / 8; ++nt) {
        const int r = warp * 16 + g, c = nt * 8 + tg * 2;
        store2s(Ss + r * SST + c, sacc[nt][0], sacc[nt][1]);
        store2s(Ss + (r + 8) * SST + c, sacc[nt][2], sacc[nt][3]);
      }
      __syncthreads();
      // dQ (queries qm..qm+15, dims dc0..dc0+DW) += dS K (A: dS from dS^T, .trans; B: K [key][dim], .trans)
      {
        float qacc[D / 8 / (NW / (BM / 16))][4];
#pragma unroll
        for (int t = 0; t < DW / 8; ++t) qacc[t][0] = qacc[t][1] = qacc[t][2] = qacc[t][3] = 0.f;
        warp_product_atb<BN, DW, SST, ST>(qacc, s_base, at_lane + qm, k_base, bt_lane + dc0);
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int64_t row = m0 + qm + g + 8 * h;
          if (row >= L) continue;
          float* dst = dq_acc + (b * L + row) * D + dc0;
#pragma unroll
          for (int t = 0; t < DW / 8; ++t) {
#if DQ_VEC
            // one 8-byte reduction per lane: the 4 lanes of a row cover 32 contiguous bytes
            asm volatile("red.global.add.v2.f32 [%0], {%1, %2};\n" ::"l"(dst + t * 8 + tg * 2),
                         "f"(qacc[t][2 * h]), "f"(qacc[t][2 * h + 1])
                         : "memory");
#else
            atomicAdd(dst + t * 8 + tg * 2, qacc[t][2 * h]);
            atomicAdd(dst + t * 8 + tg * 2 + 1, qacc[t][2 * h + 1]);
#endif
          }
        }
      }
      __syncthreads();  // this buffer, Ss and the statistics are free for the next query blocks
    }
    cp_async_wait<0>();  // no copy into Ks / Vs is left in flight (no query block ran)
    // A query row whose log-sum-exp is not finite (every key masked, or NaN scores) has NaN
    // probabilities for every key, so every key's dk and dv are NaN, as in the composed
    // formula, also the keys the causal mask hid from that row (and whose blocks it skipped).
    int bad = 0;
    for (int64_t i = tid; i < L; i += NT) bad |= !(fabsf(lse[b * L + i]) < ember_inf());
    const bool poisoned = __syncthreads_or(bad) != 0;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int64_t key = h ? key1 : key0;
      if (key >= S) continue;
      T* dkp = dk + (b * S + key) * D;
      T* dvp = dv + (b * S + key) * D;
#pragma unroll
      for (int t = 0; t < D / 8; ++t) {
        const int c = t * 8 + tg * 2;
        const float nan = ember_nan();  // (c even, D even: aligned pairs)
        store2(dkp + c, poisoned ? nan : dkacc[t][2 * h] * scale, poisoned ? nan : dkacc[t][2 * h + 1] * scale);
        store2(dvp + c, poisoned ? nan : dvacc[t][2 * h], poisoned ? nan : dvacc[t][2 * h + 1]);
      }
    }
  }
}

// With the forward's lse (natural log) at hand, the prep kernel's work without the scores:
// Dsum_i and lse_i in the log2 domain; a warp per row.
extern "C" __global__ void attn_bwd_dsum(float* __restrict__ lse2, float* __restrict__ dsum,
                                         const float* __restrict__ lse, const T* __restrict__ out,
                                         const T* __restrict__ dout, int64_t rows) {
  const int lane = threadIdx.x & 31;
  const int64_t step = (int64_t(gridDim.x) * blockDim.x) >> 5;
  for (int64_t r = (blockIdx.x * int64_t(blockDim.x) + threadIdx.x) >> 5; r < rows; r += step) {
    const T* o = out + r * D;
    const T* d = dout + r * D;
    float s = 0.f;
    for (int c = lane; c < D; c += 32) s += float(o[c]) * mma_round(float(d[c]));
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) s += __shfl_xor_sync(0xffffffffu, s, off);
    if (lane == 0) {
      dsum[r] = s;
      lse2[r] = lse[r] * LOG2E;
    }
  }
}

// n4 groups of 4 (n = 4 n4: D is a multiple of 32): one 16-byte load, one 8-byte store each.
extern "C" __global__ void attn_bwd_dq(T* __restrict__ dq, const float* __restrict__ acc, int64_t n4, float scale) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n4; i += int64_t(gridDim.x) * blockDim.x) {
    const float4 a = ((const float4*)acc)[i];
    store4(dq + 4 * i, make_float4(a.x * scale, a.y * scale, a.z * scale, a.w * scale));
  }
}
)CUDA";

// Backward, materialised path: dS = P * (dP - rowsum(P * dP)) * scale over rows of S columns,
// in place in dp (C = f32 or f64, contiguous). A NaN row of P stays NaN. One block per row.
const char* kBackwardDsKernel = R"CUDA(
__device__ __forceinline__ C block_sum(C v, C* red) {
  for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, nw = blockDim.x >> 5;
  __syncthreads();  // red is free
  if (lane == 0) red[warp] = v;
  __syncthreads();
  v = red[0];
  for (int w = 1; w < nw; ++w) v += red[w];
  return v;
}

extern "C" __global__ void attn_bwd_ds(C* __restrict__ dp, const C* __restrict__ p, int64_t rows, int64_t S,
                                       C scale) {
  __shared__ C red[32];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    C* d = dp + r * S;
    const C* pr = p + r * S;
    C s = 0;
    for (int64_t j = threadIdx.x; j < S; j += blockDim.x) s += pr[j] * d[j];
    s = block_sum(s, red);
    for (int64_t j = threadIdx.x; j < S; j += blockDim.x) d[j] = pr[j] * (d[j] - s) * scale;
  }
}
)CUDA";

// ---------------------------------------------------------------------------------------
// attention_backward

// Queries per step of the backward's key-block loop: fewer for D = 128 (registers).
// v2 with D = 64 takes 32 by default too (with 2 blocks an SM: 128 registers, 40 bytes of spill;
// 64 rows need ~244 registers, one 8-warp block an SM); query_rows = 64 asks for 64. (D = 32
// keeps 64: the dq split needs D / (NW / (BM / 16)) >= 16.)
int backward_block_queries(const FlashBackwardConfig& c) {
  if (c.head_dim > 64) return 32;
  if (c.version == 2 && c.head_dim == 64 && c.query_rows != 64) return 32;
  return 64;
}

// A contiguous tensor with the values of `t` whose data starts 16-byte aligned (for cp.async).
CudaTensorPtr dense_aligned(CudaBackend& be, const CudaTensorPtr& t) {
  auto c = contiguous(be, t);
  if (reinterpret_cast<uintptr_t>(c->raw()) % 16 == 0) return c;
  auto out = alloc(be, {t->shape(), t->dtype()});
  copy_view(be, view_of(*out), view_of(*t));
  return out;
}

// The flash backward: f16 / bf16, E == Ev in {32, 64, 128}, a bool mask or one of q's dtype.
bool flash_backward_applies(const AttnInputs& in) {
  const DType dt = in.q->dtype();
  if (!(use_tensor_cores(dt) || tf32_attention(dt)) || in.E != in.Ev || (in.E != 32 && in.E != 64 && in.E != 128))
    return false;
  if (in.mask && in.mask->dtype() != DType::boolean && in.mask->dtype() != dt) return false;
  if (in.L >= (int64_t(1) << 30) || in.S >= (int64_t(1) << 30)) return false;  // (32-bit row / key indices)
  const char* e = std::getenv("EMBER_CUDA_ATTN_BWD");  // "generic": the materialised path (A/B tests)
  return !(e && std::string(e) == "generic");
}

void flash_backward(CudaBackend& be, Op& op, const AttnInputs& in, const CudaTensorPtr& out_t,
                    const CudaTensorPtr& dout_t, const CudaTensorPtr& fwd_lse, CudaTensor& dq, CudaTensor& dk,
                    CudaTensor& dv) {
  FlashBackwardConfig c;
  c.dtype = in.q->dtype();
  c.head_dim = int(in.E);
  c.mask = mask_kind_of(in);
  c.causal = in.causal;
  if (const char* e = std::getenv("EMBER_CUDA_ATTN_BWD_BLOCKS"))  // A/B the register budget (1, 2, 3)
    c.min_blocks = std::max(0, std::min(4, std::atoi(e)));
  // v2 (8 warps, 128 keys a block) by default; EMBER_CUDA_ATTN_BWD=v1 the 4-warp kernel (per call)
  c.version = 2;
  if (const char* e = std::getenv("EMBER_CUDA_ATTN_BWD"); e && std::string(e) == "v1") c.version = 1;
  if (const char* e = std::getenv("EMBER_CUDA_ATTN_BWD_BM"))  // v2, D = 64: 64 query rows a step (default 32)
    c.query_rows = std::atoi(e);
  auto q = dense_aligned(be, in.q), k = dense_aligned(be, in.k), v = dense_aligned(be, in.v);
  auto out = dense_aligned(be, out_t), dout = dense_aligned(be, dout_t);
  const int64_t B = in.batch.numel(), L = in.L, S = in.S, D = in.E;
  auto lse = alloc(be, {Shape{B * L}, DType::f32});
  auto dsum = alloc(be, {Shape{B * L}, DType::f32});
  auto dq_acc = alloc(be, {Shape{B * L * D}, DType::f32});
  EMBER_CUDA_CHECK(cudaMemsetAsync(dq_acc->raw(), 0, size_t(B * L * D) * sizeof(float), be.stream()));
  const MaskLayout m = mask_layout(in);
  const Collapsed mcb = collapse(op.name(), in.batch, {m.batch});
  const void* mask_ptr = in.mask ? in.mask->raw() : nullptr;
  const float scale_log2 = float(in.scale * 1.4426950408889634);

  const std::string key = c.key();
  auto source = [&] { return flash_backward_source(c); };

  const int64_t bn = flash_backward_block_keys(c);  // also the rows of a prep block
  const unsigned nt = unsigned(32 * c.warps());
  if (fwd_lse) {  // the forward's lse: only Dsum is left to compute
    CUfunction f = be.jit().get(key, "attn_bwd_dsum", source);
    auto l = contiguous(be, fwd_lse);
    be.launch(f, dim3(grid_for(be, B * L * 32, 256)), dim3(256), 0, lse->raw(), dsum->raw(), l->raw(), out->raw(),
              dout->raw(), B * L);
  } else {
    CUfunction prep = be.jit().get(key, "attn_bwd_prep", source);
    const size_t prep_smem = flash_backward_smem_bytes(c, 0);
    allow_smem(prep, prep_smem);
    // both kernels walk (tile, batch entry) pairs over a 1-D grid
    be.launch(prep, dim3(unsigned(std::min<int64_t>((L + bn - 1) / bn * B, 0x7fffffff))), dim3(nt),
              unsigned(prep_smem), lse->raw(), dsum->raw(), q->raw(), k->raw(), out->raw(), dout->raw(), mask_ptr, B,
              L, S, m.rs, m.cs, mcb.shape, mcb.strides[0], scale_log2);
  }

  CUfunction kv = be.jit().get(key, "attn_bwd_kv", source);
  const size_t kv_smem = flash_backward_smem_bytes(c, 1);
  allow_smem(kv, kv_smem);
  be.launch(kv, dim3(unsigned(std::min<int64_t>((S + bn - 1) / bn * B, 0x7fffffff))), dim3(nt), unsigned(kv_smem),
            dk.raw(), dv.raw(), dq_acc->raw(), q->raw(), k->raw(), v->raw(), dout->raw(), lse->raw(), dsum->raw(),
            mask_ptr, B, L, S, m.rs, m.cs, mcb.shape, mcb.strides[0], scale_log2, float(in.scale));

  CUfunction fin = be.jit().get(key, "attn_bwd_dq", source);
  const int64_t n4 = B * L * D / 4;
  be.launch(fin, dim3(grid_for(be, n4, 256)), dim3(256), 0, dq.raw(), dq_acc->raw(), n4, float(in.scale));
}

// Materialised backward (f32 for the half types, f64 for f64), over chunks of the batch so
// that P and dP (each chunk x L x S) stay within a budget:
//   P = softmax(q k^T scale + mask), dv = P^T g, dP = g v^T, dS = P (dP - rowsum(P dP)) scale,
//   dq = dS k, dk = dS^T q.
void attention_backward_fallback(CudaBackend& be, Op& op, const AttnInputs& in, const CudaTensorPtr& dout,
                                 std::vector<CudaTensorPtr>& grads) {
  const DType dt = in.q->dtype();
  const DType ct = dt == DType::f64 ? DType::f64 : DType::f32;
  auto q = contiguous_as(be, in.q, ct), k = contiguous_as(be, in.k, ct), v = contiguous_as(be, in.v, ct);
  auto g = contiguous_as(be, dout, ct);
  std::vector<CudaTensorPtr> res(3);
  for (size_t i = 0; i < 3; ++i) res[i] = ct == dt ? grads[i] : alloc(be, {grads[i]->shape(), ct});
  const int64_t B = in.batch.numel(), L = in.L, S = in.S, E = in.E, Ev = in.Ev;
  const int64_t esz = int64_t(dtype_size(ct));
  const int64_t budget = int64_t(256) << 20;  // bytes of P (and of dP) per chunk
  const int64_t chunk = std::max<int64_t>(1, std::min<int64_t>(B, budget / std::max<int64_t>(1, L * S * esz)));
  auto P = alloc(be, {Shape{chunk, L, S}, ct}), dP = alloc(be, {Shape{chunk, L, S}, ct});

  const std::string ds_key = "attention_backward/ds/" + std::string(dtype_name(ct));
  CUfunction ds = be.jit().get(ds_key, "attn_bwd_ds", [&] { return attention_backward_ds_source(ct); });
  auto at = [&](const CudaTensorPtr& t, int64_t elems) { return static_cast<char*>(t->raw()) + elems * esz; };

  const std::string_view name = op.name();
  for (int64_t b0 = 0; b0 < B; b0 += chunk) {
    const int64_t n = std::min(chunk, B - b0), rows = n * L;
    char *qb = at(q, b0 * L * E), *kb = at(k, b0 * S * E), *vb = at(v, b0 * S * Ev), *gb = at(g, b0 * L * Ev);
    // P = softmax(q k^T scale + mask)
    gemm_or_zero(be,
                 {.dtype = ct, .M = L, .N = S, .K = E, .A = qb, .lda = E, .stride_a = L * E, .B = kb, .ldb = E,
                  .stride_b = S * E, .tb = true, .C = P->raw(), .ldc = S, .stride_c = L * S, .batch = n},
                 name);
    attention_softmax(be, op, in, ct, P->raw(), nullptr, rows, b0);
    // dv = P^T g
    gemm_or_zero(be,
                 {.dtype = ct, .M = S, .N = Ev, .K = L, .A = P->raw(), .lda = S, .stride_a = L * S, .ta = true,
                  .B = gb, .ldb = Ev, .stride_b = L * Ev, .C = at(res[2], b0 * S * Ev), .ldc = Ev,
                  .stride_c = S * Ev, .batch = n},
                 name);
    // dP = g v^T, then dS in place
    gemm_or_zero(be,
                 {.dtype = ct, .M = L, .N = S, .K = Ev, .A = gb, .lda = Ev, .stride_a = L * Ev, .B = vb, .ldb = Ev,
                  .stride_b = S * Ev, .tb = true, .C = dP->raw(), .ldc = S, .stride_c = L * S, .batch = n},
                 name);
    const dim3 grid(unsigned(std::min<int64_t>(rows, int64_t(be.sm_count()) * 16)));
    if (ct == DType::f64)
      be.launch(ds, grid, dim3(256), 0, dP->raw(), P->raw(), rows, S, in.scale);
    else
      be.launch(ds, grid, dim3(256), 0, dP->raw(), P->raw(), rows, S, float(in.scale));
    // dq = dS k, dk = dS^T q
    gemm_or_zero(be,
                 {.dtype = ct, .M = L, .N = E, .K = S, .A = dP->raw(), .lda = S, .stride_a = L * S, .B = kb,
                  .ldb = E, .stride_b = S * E, .C = at(res[0], b0 * L * E), .ldc = E, .stride_c = L * E, .batch = n},
                 name);
    gemm_or_zero(be,
                 {.dtype = ct, .M = S, .N = E, .K = L, .A = dP->raw(), .lda = S, .stride_a = L * S, .ta = true,
                  .B = qb, .ldb = E, .stride_b = L * E, .C = at(res[1], b0 * S * E), .ldc = E, .stride_c = S * E,
                  .batch = n},
                 name);
  }
  for (size_t i = 0; i < 3; ++i)
    if (res[i] != grads[i]) copy_view(be, view_of(*grads[i]), view_of(*res[i]));
}

// Inputs q, k, v, out, dout, mask (optional), the forward's lse (optional: the flash path then
// skips recomputing it); outputs dq, dk, dv like q, k, v.
}  // namespace

std::vector<PrimitivePtr> attention_backward_kernel(CudaBackend& be, Op& op) {
  const AttnInputs in = attn_inputs(op, 5);
  auto out = as_cuda_ptr(op.inputs[3]), dout = as_cuda_ptr(op.inputs[4]);
  CudaTensorPtr fwd_lse = op.inputs.size() > 6 && op.inputs[6] ? as_cuda_ptr(op.inputs[6]) : nullptr;
  std::vector<CudaTensorPtr> grads{alloc(be, op.outputs[0]), alloc(be, op.outputs[1]), alloc(be, op.outputs[2])};
  if (in.L == 0 || in.S == 0 || in.batch.numel() == 0) {  // no scores: zero gradients
    for (auto& t : grads)
      if (t->numel() > 0)
        EMBER_CUDA_CHECK(cudaMemsetAsync(t->raw(), 0, size_t(t->numel()) * dtype_size(t->dtype()), be.stream()));
    return {grads[0], grads[1], grads[2]};
  }
  if (fwd_lse && cudnn_attention_backward(be, op, in, *out, dout, *fwd_lse, *grads[0], *grads[1], *grads[2]))
    return {grads[0], grads[1], grads[2]};
  if (flash_backward_applies(in))
    flash_backward(be, op, in, out, dout, fwd_lse, *grads[0], *grads[1], *grads[2]);
  else
    attention_backward_fallback(be, op, in, dout, grads);
  return {grads[0], grads[1], grads[2]};
}

std::string FlashBackwardConfig::key() const {
  return "attention_backward/flash/" + std::string(dtype_name(dtype)) + "/d" + std::to_string(head_dim) + "/m" +
         std::to_string(int(mask)) + (causal ? "/causal" : "") + "/b" +
         std::to_string(flash_backward_min_blocks(*this)) + (version == 2 ? "/v2" : "") + "/q" +
         std::to_string(backward_block_queries(*this));
}

int flash_backward_block_keys(const FlashBackwardConfig& c) { return 16 * c.warps(); }

// Blocks of attn_bwd_kv per SM the register allocation aims at: 3 for D <= 64 (168 registers,
// a few bytes of spill), else 1 (no limit: about 255 registers, 2 blocks fit).
// Version 2 (256 threads): 2 for D = 64 with 32 query rows a step (128 registers, 40 bytes of
// spill), else 1 (no limit: 64 query rows or D = 128 need ~250 registers; capped at 128 they
// spill 272 / 528 bytes).
int flash_backward_min_blocks(const FlashBackwardConfig& c) {
  if (c.min_blocks > 0) return c.min_blocks;
  if (c.dtype == DType::f32) return 1;  // TF32: f32 tiles, one block an SM fits in shared memory
  if (c.version == 2) return c.head_dim == 64 && backward_block_queries(c) == 32 ? 2 : 1;
  return c.head_dim <= 64 ? 3 : 1;
}

size_t flash_backward_smem_bytes(const FlashBackwardConfig& c, int kernel) {
  const size_t D = size_t(c.head_dim), BM = size_t(backward_block_queries(c)),
               BN = size_t(flash_backward_block_keys(c));
  // elements and row padding: halves padded by 8, TF32's f32 by 4
  const size_t pad = c.dtype == DType::f32 ? 4 : 8, esz = c.dtype == DType::f32 ? 4 : 2;
  if (kernel == 0) return (BN + 2 * BN) * (D + pad) * esz;  // PM = BN query rows, 2 key tiles
  return ((2 * BN + 4 * BM) * (D + pad) + BN * (BM + pad)) * esz + 2 * BM * sizeof(float);
}

std::string flash_backward_source(const FlashBackwardConfig& c) {
  EMBER_CHECK((use_tensor_cores(c.dtype) || c.dtype == DType::f32) &&
                  (c.head_dim == 32 || c.head_dim == 64 || c.head_dim == 128),
              "attention_backward: no flash kernel for ", c.dtype, " with head dim ", c.head_dim);
  std::string s = "typedef " + std::string(device_type(c.dtype)) + " T;\n";
  s += "#define D " + std::to_string(c.head_dim) + "\n#define BM " + std::to_string(backward_block_queries(c)) + "\n";
  s += "#define MASK_KIND " + std::to_string(int(c.mask)) + "\n";
  s += "#define CAUSAL " + std::to_string(c.causal ? 1 : 0) + "\n";
  s += "#define KV_MIN_BLOCKS " + std::to_string(flash_backward_min_blocks(c)) + "\n";
  // NW warps; BN keys per attn_bwd_kv block and PM query rows per attn_bwd_prep block (16 per
  // warp); version 2 also skips the mask arithmetic on tiles without masking (FAST_TILES) and
  // adds dq with 8-byte vector reductions (DQ_VEC, sm_90)
  const int bn = flash_backward_block_keys(c);
  s += "#define NW " + std::to_string(c.warps()) + "\n#define NT " + std::to_string(32 * c.warps()) + "\n#define BN " +
       std::to_string(bn) + "\n#define PM " + std::to_string(bn) + "\n";
  s += std::string("#define FAST_TILES ") + (c.version == 2 ? "1" : "0") + "\n#define DQ_VEC " +
       (c.version == 2 ? "1" : "0") + "\n";
  return s + mma_helpers(c.dtype) + kBackwardTcKernel;
}

std::vector<FlashBackwardConfig> all_flash_backward_configs() {
  std::vector<FlashBackwardConfig> r;
  for (DType dt : {DType::f16, DType::bf16, DType::f32})  // f32: TF32
    for (int d : {32, 64, 128})
      for (AttnMask m : {AttnMask::none, AttnMask::boolean, AttnMask::additive})
        for (bool causal : {false, true})
          for (int version : {1, 2}) {
            FlashBackwardConfig c;
            c.dtype = dt;
            c.head_dim = d;
            c.mask = m;
            c.causal = causal;
            c.version = version;
            r.push_back(c);
          }
  return r;
}

std::string attention_backward_ds_source(DType dt) {
  return "typedef " + std::string(device_type(dt)) + " C;\n" + kBackwardDsKernel;
}

}  // namespace ember::cuda
