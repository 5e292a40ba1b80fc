// sort (stable; DimAttrs.flag = descending) and topk (DimAttrs.k; flag = largest; sorted), as
// the CPU backend (src/backends/cpu/sort.cpp): every value maps to an unsigned key whose
// integer order is torch's order (NaN above +inf, -0.0 equal to 0.0); descending / largest use
// the complemented key, and ties are broken by the original index. So sorting the unique
// (key, index) pairs ascending with any algorithm gives the stable result. With 32-bit keys
// (all dtypes but f64/i64) a pair packs into one 64-bit integer.
//
// The input is made contiguous and seen as [outer, D, inner] (rows = outer * inner, element l
// of row (o, j) at (o * D + l) * inner + j):
//   * rows of 2049..4096 elements with 32-bit keys: an LSD radix sort in shared memory, a row a
//     block (radix_tile);
//   * other rows up to TILE (4096 packed / 2048 wide pairs): a bitonic sort in shared memory,
//     several short rows per block (each padded to a power of two with sentinels above every pair);
//   * longer rows with 32-bit keys: an LSD radix sort through global memory (radix_init,
//     radix_hist / radix_scan / radix_scatter per 8-bit digit, radix_emit);
//   * longer rows with 64-bit keys: a bitonic sort in global memory over rows padded to a power
//     of two, where every run of steps with a distance below TILE happens in shared memory, one
//     tile per block, and the longer steps are single global passes.
// topk with k <= KSEL (16) selects instead of sorting (topk_select): every thread keeps the KSEL
// smallest pairs it has seen, sorted, in registers, and the lists of a warp, then of a block, merge
// into one; few long rows split over several blocks each (topk_part, topk_merge), and a dim of
// 2^31 elements or more takes pairs with 64-bit indices. A larger k sorts the whole row and keeps
// the first k pairs.
#include <algorithm>
#include <cstdlib>

#include "cuda_backend.hpp"
#include "reduce_sources.hpp"

namespace ember::cuda {

namespace {

constexpr int64_t kSelectMax = 16;  // KSEL of topk_select
constexpr int kSelectThreads = 256;
constexpr int64_t kPartMin = int64_t(1) << 15;  // elements of a topk_part block at least (H200, [4, 1M]
                                                // k = 10: 53.6 us; 2^13: 65.8 us; a block a row: 523 us)

bool wide_keys(DType dt) { return dt == DType::f64 || dt == DType::i64; }
int tile_of(DType dt) { return wide_keys(dt) ? 2048 : 4096; }

std::string key_code(DType dt) {
  std::string s;
  switch (dt) {
    case DType::f64:
      s = R"CUDA(
__device__ __forceinline__ unsigned long long key_of(T v) {
  unsigned long long b = (unsigned long long)__double_as_longlong(v);
  b = v != v ? 0x7ff8000000000000ull : b;
  b = v == 0 ? 0ull : b;
  return b ^ ((unsigned long long)((long long)b >> 63) | (1ull << 63));
}
)CUDA";
      break;
    case DType::f32:
    case DType::f16:
    case DType::bf16:
      s = R"CUDA(
__device__ __forceinline__ unsigned key_of(T v) {
  float f = float(v);
  unsigned b = __float_as_uint(f);
  b = f != f ? 0x7fc00000u : b;
  b = f == 0.0f ? 0u : b;
  return b ^ ((unsigned)((int)b >> 31) | 0x80000000u);
}
)CUDA";
      break;
    case DType::i64:
      s = "__device__ __forceinline__ unsigned long long key_of(T v) { return (unsigned long long)v ^ (1ull << 63); }\n";
      break;
    case DType::i32:
    case DType::i16:
    case DType::i8:
      s = "__device__ __forceinline__ unsigned key_of(T v) { return (unsigned)(int)v ^ 0x80000000u; }\n";
      break;
    case DType::u8:
    case DType::boolean:
      s = "__device__ __forceinline__ unsigned key_of(T v) { return (unsigned)v; }\n";
      break;
  }
  return s;
}

const char* kPacked = R"CUDA(
// (key << 32 | index)
typedef unsigned long long E;
__device__ __forceinline__ E e_make(T v, int64_t l, int flip) {
  unsigned k = key_of(v);
  if (flip) k = ~k;
  return ((unsigned long long)k << 32) | (unsigned long long)(unsigned)l;
}
__device__ __forceinline__ E e_sentinel() { return ~0ull; }
__device__ __forceinline__ bool e_less(const E& a, const E& b) { return a < b; }
__device__ __forceinline__ int64_t e_index(const E& e) { return int64_t(e & 0xffffffffull); }
__device__ __forceinline__ E e_shfl_xor(const E& e, int m) { return __shfl_xor_sync(0xffffffffu, e, m); }
)CUDA";

// (key, index) with a 64-bit key (the key of a 32-bit dtype widened); EIDX, the index type, is
// unsigned (sort and topk of 64-bit dtypes) or unsigned long long (topk along a dim of 2^31
// elements or more, every dtype: the selection kernels only).
const char* kWide = R"CUDA(
struct E { unsigned long long k; EIDX i; };
__device__ __forceinline__ E e_make(T v, int64_t l, int flip) {
  E e;
  e.k = (unsigned long long)key_of(v);
  if (flip) e.k = ~e.k;
  e.i = (EIDX)l;
  return e;
}
__device__ __forceinline__ E e_sentinel() { E e; e.k = ~0ull; e.i = (EIDX)~0ull; return e; }
__device__ __forceinline__ bool e_less(const E& a, const E& b) { return a.k < b.k || (a.k == b.k && a.i < b.i); }
__device__ __forceinline__ int64_t e_index(const E& e) { return int64_t(e.i); }
__device__ __forceinline__ E e_shfl_xor(const E& e, int m) {
  E r;
  r.k = __shfl_xor_sync(0xffffffffu, e.k, m);
  r.i = __shfl_xor_sync(0xffffffffu, e.i, m);
  return r;
}
)CUDA";

const char* kElemAt = R"CUDA(
// Element l of row r of an [outer, n, inner] tensor (no division when inner == 1).
__device__ __forceinline__ int64_t elem_at(int64_t r, int64_t l, int64_t n, int64_t inner) {
  if (inner == 1) return r * n + l;
  const int64_t o = r / inner;
  return (o * n + l) * inner + (r - o * inner);
}
)CUDA";

const char* kSortKernels = R"CUDA(
// One compare-exchange of the bitonic network: positions i < i + j; `l` = i's index within its
// (padded) row, whose bit k gives the direction.
__device__ __forceinline__ void cmp_swap(E* s, int64_t i, int64_t j, int64_t l, int64_t k) {
  E a = s[i], b = s[i + j];
  const bool asc = (l & k) == 0;
  if (e_less(b, a) == asc) {
    s[i] = b;
    s[i + j] = a;
  }
}

// Short rows (P = padded row length <= TILE): a block holds rpb rows of P entries each.
extern "C" __global__ void sort_block(T* __restrict__ vals, int64_t* __restrict__ idxs, const T* __restrict__ x,
                                      int64_t rows, int64_t D, int64_t inner, int64_t K, int P, int rpb, int flip) {
  __shared__ E sh[TILE];
  const int n = P * rpb;
  for (int64_t r0 = int64_t(blockIdx.x) * rpb; r0 < rows; r0 += int64_t(gridDim.x) * rpb) {
    for (int e = threadIdx.x; e < n; e += blockDim.x) {
      const int64_t r = r0 + e / P, l = e % P;
      sh[e] = r < rows && l < D ? e_make(x[elem_at(r, l, D, inner)], l, flip) : e_sentinel();
    }
    __syncthreads();
    for (int k = 2; k <= P; k <<= 1) {
      for (int j = k >> 1; j >= 1; j >>= 1) {
        for (int t = threadIdx.x; t < n / 2; t += blockDim.x) {
          const int i = 2 * t - (t & (j - 1));
          cmp_swap(sh, i, j, i & (P - 1), k);
        }
        __syncthreads();
      }
    }
    for (int e = threadIdx.x; e < n; e += blockDim.x) {
      const int64_t r = r0 + e / P, l = e % P;
      if (r < rows && l < K) {
        const int64_t src = e_index(sh[e]);
        vals[elem_at(r, l, K, inner)] = x[elem_at(r, src, D, inner)];
        idxs[elem_at(r, l, K, inner)] = src;
      }
    }
    __syncthreads();
  }
}

// Full tiles (TILE = rpb rows of P entries) on 256 threads, each holding R = TILE / 256 entries
// in registers: the compare-exchanges of a step whose distance bit is one of the thread's
// register bits need no shared memory. In layout s (window [s, s + RB)), entry m of thread t is
// at tile index (t >> s) << (s + RB) | m << s | (t & (2^s - 1)); each run of steps
// takes the window whose top bit is the run's first (bit 0 ends every stage: layout 0), and
// moving between layouts is one pass through shared memory. Padded (one slot after every 8) to
// spread the 8-byte entries of a warp's accesses over the banks.
#define RB (TILE == 4096 ? 4 : 3)
#define R (1 << RB)
#define PAD(i) ((i) + ((i) >> 3))
// idx(t, m, s) = base(t, s) | m << s
__device__ __forceinline__ int tile_base(int t, int s) { return ((t >> s) << (s + RB)) | (t & ((1 << s) - 1)); }
// One step at register bit JB of layout s in stage k: the pair (m, m | 2^JB) ends descending where
// its tile index i has i & mask != 0, mask = (P - 1) & k (one bit, or none in the last stage).
template <int JB>
__device__ __forceinline__ void reg_step(E (&v)[R], int base, int s, int mask) {
  const bool desc_base = (base & mask) != 0;
  const int mask_m = mask >> s;  // mask's bit among m's bits, if there
#pragma unroll
  for (int m = 0; m < R; ++m) {
    if (m & (1 << JB)) continue;
    const bool desc = desc_base || (m & mask_m) != 0;
    E a = v[m], b = v[m | (1 << JB)];
    if (e_less(b, a) != desc) {
      v[m] = b;
      v[m | (1 << JB)] = a;
    }
  }
}
__device__ __forceinline__ void relayout(E (&v)[R], E* sh, int t, int from, int to) {
  __syncthreads();
  const int bf = tile_base(t, from), bt = tile_base(t, to);
#pragma unroll
  for (int m = 0; m < R; ++m) sh[PAD(bf | (m << from))] = v[m];
  __syncthreads();
#pragma unroll
  for (int m = 0; m < R; ++m) v[m] = sh[PAD(bt | (m << to))];
}

extern "C" __global__ void __launch_bounds__(256) sort_tile(T* __restrict__ vals, int64_t* __restrict__ idxs,
    const T* __restrict__ x, int64_t rows, int64_t D, int64_t inner, int64_t K, int P, int rpb, int flip) {
  __shared__ E sh[PAD(TILE)];
  const int t = threadIdx.x;
  int logp = 0;
  while ((1 << logp) < P) ++logp;
  for (int64_t r0 = int64_t(blockIdx.x) * rpb; r0 < rows; r0 += int64_t(gridDim.x) * rpb) {
    __syncthreads();
    for (int e = t; e < TILE; e += blockDim.x) {
      const int64_t r = r0 + (e >> logp);
      const int l = e & (P - 1);
      sh[PAD(e)] = r < rows && l < D ? e_make(x[elem_at(r, l, D, inner)], l, flip) : e_sentinel();
    }
    __syncthreads();
    E v[R];
#pragma unroll
    for (int m = 0; m < R; ++m) v[m] = sh[PAD(t * R + m)];  // layout 0
    int s = 0, base = t * R;
    for (int kb = 1; kb <= logp; ++kb) {
      const int mask = (P - 1) & (1 << kb);
      for (int b = kb - 1; b >= 0;) {
        const int ns = b >= RB ? b - (RB - 1) : 0;
        if (ns != s) {
          relayout(v, sh, t, s, ns);
          s = ns;
          base = tile_base(t, s);
        }
        for (; b >= ns; --b) {
          switch (b - ns) {
            case 0: reg_step<0>(v, base, s, mask); break;
            case 1: reg_step<1>(v, base, s, mask); break;
            case 2: reg_step<2>(v, base, s, mask); break;
            default: reg_step<RB - 1>(v, base, s, mask); break;  // 3 (TILE 4096)
          }
        }
      }
    }
    __syncthreads();
#pragma unroll
    for (int m = 0; m < R; ++m) sh[PAD(t * R + m)] = v[m];
    __syncthreads();
    for (int e = t; e < TILE; e += blockDim.x) {
      const int64_t r = r0 + (e >> logp);
      const int l = e & (P - 1);
      if (r < rows && l < K) {
        const int64_t src = e_index(sh[PAD(e)]);
        vals[elem_at(r, l, K, inner)] = x[elem_at(r, src, D, inner)];
        idxs[elem_at(r, l, K, inner)] = src;
      }
    }
  }
}
#undef PAD
#undef R
#undef RB

// ---- long rows: buf holds rows * P entries ----
extern "C" __global__ void gsort_init(E* __restrict__ buf, const T* __restrict__ x, int64_t rows, int64_t D,
                                      int64_t inner, int64_t P, int flip) {
  const int64_t n = rows * P;
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < n; e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = e / P, l = e - r * P;
    buf[e] = l < D ? e_make(x[elem_at(r, l, D, inner)], l, flip) : e_sentinel();
  }
}

// Stages k in [k_lo, k_hi] (powers of two), each with the steps j < TILE, one TILE of buf per
// block (P is a multiple of TILE).
extern "C" __global__ void gsort_local(E* __restrict__ buf, int64_t n, int64_t P, int64_t k_lo, int64_t k_hi) {
  __shared__ E sh[TILE];
  for (int64_t base = int64_t(blockIdx.x) * TILE; base < n; base += int64_t(gridDim.x) * TILE) {
    for (int e = threadIdx.x; e < TILE; e += blockDim.x) sh[e] = buf[base + e];
    __syncthreads();
    const int64_t lbase = base % P;  // index of the tile's first entry within its row
    for (int64_t k = k_lo; k <= k_hi; k <<= 1) {
      for (int j = int(k / 2 < TILE / 2 ? k / 2 : TILE / 2); j >= 1; j >>= 1) {
        for (int t = threadIdx.x; t < TILE / 2; t += blockDim.x) {
          const int i = 2 * t - (t & (j - 1));
          cmp_swap(sh, i, j, lbase + i, k);
        }
        __syncthreads();
      }
    }
    for (int e = threadIdx.x; e < TILE; e += blockDim.x) buf[base + e] = sh[e];
    __syncthreads();
  }
}

// One step (k, j >= TILE) in global memory: a thread per compare-exchange.
extern "C" __global__ void gsort_global(E* __restrict__ buf, int64_t n, int64_t P, int64_t k, int64_t j) {
  for (int64_t t = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; t < n / 2; t += int64_t(gridDim.x) * blockDim.x) {
    const int64_t i = 2 * t - (t & (j - 1));
    cmp_swap(buf, i, j, i & (P - 1), k);
  }
}

extern "C" __global__ void gsort_emit(T* __restrict__ vals, int64_t* __restrict__ idxs, const E* __restrict__ buf,
                                      const T* __restrict__ x, int64_t rows, int64_t D, int64_t inner, int64_t P,
                                      int64_t K) {
  const int64_t n = rows * K;
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < n; e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = e / K, l = e - r * K;
    const int64_t src = e_index(buf[r * P + l]);
    vals[elem_at(r, l, K, inner)] = x[elem_at(r, src, D, inner)];
    idxs[elem_at(r, l, K, inner)] = src;
  }
}
)CUDA";

// Rows of exactly one tile (TILE = 4096 packed pairs, one row a block) with 32-bit keys: an LSD
// radix sort in shared memory, 4 passes of 8 bits, with 12-bit indices carried along. Warp w
// holds positions [512 w, 512 w + 512): entry m of lane l is position 512 w + 32 m + l. A pass
// ranks each entry among those with its digit: entries of smaller digits, of the same digit in
// earlier warps, then earlier in its own warp (the warp's running count per digit, read before
// the lanes of one step that share the digit, found by 8 ballots, add theirs). Equal digits keep
// their order, so equal keys stay in index order: stable, as the bitonic kernels.
const char* kRadixKernel = R"CUDA(
// The lanes of the warp whose digit is d (8 ballots; __match_any_sync measured 1003 us against
// 777 us in radix_tile).
__device__ __forceinline__ unsigned digit_peers(unsigned d) {
  unsigned peers = 0xffffffffu;
#pragma unroll
  for (int b = 0; b < 8; ++b) {
    const unsigned bal = __ballot_sync(0xffffffffu, (d >> b) & 1u);
    peers &= (d >> b) & 1u ? bal : ~bal;
  }
  return peers;
}
// Ranks of a 4096-element tile held 16 a thread (element w * 512 + m * 32 + lane in k[m]) among
// the same digit's elements of their warp; hist[w][d] ends as warp w's count of digit d.
__device__ __forceinline__ unsigned warp_rank(unsigned d, unsigned* cnt);
__device__ __forceinline__ void rank_tile(const unsigned (&k)[16], unsigned (&rank)[16], unsigned (*hist)[256], int sh) {
  for (int e = threadIdx.x; e < 8 * 256; e += 256) (&hist[0][0])[e] = 0u;
  __syncthreads();
  const int w = threadIdx.x >> 5;
#pragma unroll
  for (int m = 0; m < 16; ++m) rank[m] = warp_rank((k[m] >> sh) & 255u, hist[w]);
  __syncthreads();
}
// The exclusive prefix of v over the block's 256 threads in thread order, and (total) their sum;
// every thread calls it (it synchronises the block), wsum: 8 words of shared memory.
__device__ __forceinline__ unsigned block_exclusive_scan(unsigned v, unsigned* wsum, unsigned* total = nullptr) {
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  unsigned incl = v;
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const unsigned y = __shfl_up_sync(0xffffffffu, incl, o);
    if (lane >= o) incl += y;
  }
  if (lane == 31) wsum[w] = incl;
  __syncthreads();
  unsigned before = 0, all = 0;
#pragma unroll
  for (int v2 = 0; v2 < 8; ++v2) {
    before += v2 < w ? wsum[v2] : 0u;
    all += wsum[v2];
  }
  __syncthreads();
  if (total) *total = all;
  return before + incl - v;
}
// This lane's rank among the warp's elements of digit d so far: the warp's earlier count cnt[d]
// (which the lowest lane of the digit then advances) plus the lower lanes with digit d.
__device__ __forceinline__ unsigned warp_rank(unsigned d, unsigned* cnt) {
  const unsigned peers = digit_peers(d), lt = (1u << (threadIdx.x & 31)) - 1;
  const unsigned base = cnt[d];
  __syncwarp();
  if ((peers & lt) == 0) cnt[d] = base + __popc(peers);
  __syncwarp();
  return base + __popc(peers & lt);
}
extern "C" __global__ void __launch_bounds__(256) radix_tile(T* __restrict__ vals, int64_t* __restrict__ idxs,
    const T* __restrict__ x, int64_t rows, int64_t D, int64_t inner, int64_t K, int flip) {
  __shared__ unsigned skey[4096];
  __shared__ unsigned short sidx[4096];
  __shared__ unsigned hist[8][256];
  __shared__ unsigned wsum[8];
  const int t = threadIdx.x, lane = t & 31, w = t >> 5;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    unsigned k[16], ix[16], rank[16];
#pragma unroll
    for (int m = 0; m < 16; ++m) {
      const int i = w * 512 + m * 32 + lane;
      const unsigned key = i < D ? key_of(x[elem_at(r, i, D, inner)]) : 0u;
      k[m] = i < D ? (flip ? ~key : key) : 0xffffffffu;  // (padding: above every key, after every index)
      ix[m] = unsigned(i);
    }
#pragma unroll 1
    for (int sh = 0; sh < 32; sh += 8) {
      rank_tile(k, rank, hist, sh);
      // exclusive prefix over (digit, warp), digit-major: thread t scans digit t's 8 counts
      unsigned c[8], tot = 0;
#pragma unroll
      for (int v = 0; v < 8; ++v) {
        c[v] = hist[v][t];
        tot += c[v];
      }
      unsigned run = block_exclusive_scan(tot, wsum);
#pragma unroll
      for (int v = 0; v < 8; ++v) {
        hist[v][t] = run;
        run += c[v];
      }
      __syncthreads();
#pragma unroll
      for (int m = 0; m < 16; ++m) {
        const unsigned pos = hist[w][(k[m] >> sh) & 255u] + rank[m];
        skey[pos] = k[m];
        sidx[pos] = (unsigned short)ix[m];
      }
      __syncthreads();
#pragma unroll
      for (int m = 0; m < 16; ++m) {
        const int i = w * 512 + m * 32 + lane;
        k[m] = skey[i];
        ix[m] = sidx[i];
      }
    }
#pragma unroll
    for (int m = 0; m < 16; ++m) {
      const int i = w * 512 + m * 32 + lane;
      if (i < K) {
        vals[elem_at(r, i, K, inner)] = x[elem_at(r, ix[m], D, inner)];
        idxs[elem_at(r, i, K, inner)] = int64_t(ix[m]);
      }
    }
  }
}

// ---- long rows, 32-bit keys: an LSD radix sort through global memory, 8 bits a pass ----
// Each row's keys and indices live in [rows, D] u32 buffers; a pass counts each 4096-element
// tile's digits (radix_hist), scans each (row, digit)'s counts over the tiles and totals them
// (radix_scan), and moves every element to its digit's start in the row plus the earlier tiles'
// count of that digit plus its rank among the same digit's earlier elements of its tile
// (radix_scatter: the ranking of radix_tile, then the tile ordered by digit in shared memory so
// that each digit's run is written out by consecutive threads). Each pass is stable.
extern "C" __global__ void radix_init(unsigned* __restrict__ keys, unsigned* __restrict__ idx,
    const T* __restrict__ x, int64_t rows, int64_t D, int64_t inner, int flip) {
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < rows * D; e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = e / D, l = e - r * D;
    const unsigned k = key_of(x[elem_at(r, l, D, inner)]);
    keys[e] = flip ? ~k : k;
    idx[e] = unsigned(l);
  }
}
// counts[(r * 256 + digit) * nb + tile]. A warp counts the lanes that share a digit by 8 ballots
// and its lowest such lane adds them to the warp's own counters (no atomics: shared-memory
// atomics serialise where a tile's keys share a few digits, as the top byte of floats does).
extern "C" __global__ void __launch_bounds__(256) radix_hist(const unsigned* __restrict__ keys,
    unsigned* __restrict__ counts, int64_t D, int sh) {
  __shared__ unsigned h[8][256];
  const int t = threadIdx.x, lane = t & 31, w = t >> 5;
  const unsigned lt = (1u << lane) - 1;
  const int64_t r = blockIdx.y, nb = gridDim.x, t0 = int64_t(blockIdx.x) * 4096;
  for (int e = t; e < 8 * 256; e += 256) (&h[0][0])[e] = 0u;
  const unsigned* kr = keys + r * D;
  unsigned k[16];
#pragma unroll
  for (int m = 0; m < 16; ++m) {
    const int64_t i = t0 + w * 512 + m * 32 + lane;
    k[m] = i < D ? kr[i] : 0u;
  }
  __syncthreads();
#pragma unroll
  for (int m = 0; m < 16; ++m) {
    const bool valid = t0 + w * 512 + m * 32 + lane < D;
    const unsigned d = (k[m] >> sh) & 255u;
    const unsigned peers = __ballot_sync(0xffffffffu, valid) & digit_peers(d);
    if (valid && (peers & lt) == 0) h[w][d] += __popc(peers);
    __syncwarp();
  }
  __syncthreads();
  unsigned c = 0;
#pragma unroll
  for (int v = 0; v < 8; ++v) c += h[v][t];
  counts[(r * 256 + t) * nb + blockIdx.x] = c;
}
// counts of (row blockIdx.y, digit blockIdx.x) over the tiles -> exclusive prefix, in place;
// totals[row * 256 + digit] = their sum
extern "C" __global__ void __launch_bounds__(256) radix_scan(unsigned* __restrict__ counts,
    unsigned* __restrict__ totals, int64_t nb) {
  __shared__ unsigned wsum[8];
  const int t = threadIdx.x;
  unsigned* c = counts + (int64_t(blockIdx.y) * 256 + blockIdx.x) * nb;
  unsigned carry = 0;
  for (int64_t b0 = 0; b0 < nb; b0 += 256) {
    const int64_t b = b0 + t;
    unsigned all = 0;
    const unsigned ex = block_exclusive_scan(b < nb ? c[b] : 0u, wsum, &all);
    if (b < nb) c[b] = carry + ex;
    carry += all;
  }
  if (t == 0) totals[blockIdx.y * 256 + blockIdx.x] = carry;
}
extern "C" __global__ void __launch_bounds__(256) radix_scatter(const unsigned* __restrict__ kin,
    const unsigned* __restrict__ iin, unsigned* __restrict__ kout, unsigned* __restrict__ iout,
    const unsigned* __restrict__ offs, const unsigned* __restrict__ totals, int64_t D, int sh) {
  __shared__ unsigned hist[8][256];
  __shared__ unsigned skey[4096], sidx[4096];
  __shared__ unsigned dstart[256], gbase[256], wsum[8];
  const int t = threadIdx.x, lane = t & 31, w = t >> 5;
  const int64_t r = blockIdx.y, nb = gridDim.x, t0 = int64_t(blockIdx.x) * 4096;
  const int n = int(min(int64_t(4096), D - t0));  // the tile's elements
  const unsigned* kr = kin + r * D;
  const unsigned* ir = iin + r * D;
  unsigned k[16], ix[16], rank[16];
#pragma unroll
  for (int m = 0; m < 16; ++m) {
    const int i = w * 512 + m * 32 + lane;
    k[m] = i < n ? kr[t0 + i] : 0xffffffffu;  // (padding: after every element of the tile)
    ix[m] = i < n ? ir[t0 + i] : 0u;
  }
  rank_tile(k, rank, hist, sh);
  // thread t = digit t: the warps' exclusive prefix within the digit, the digit's count in the
  // tile (padding included: it sorts last), then the digits' starts in the tile and in the row
  unsigned cnt = 0;
#pragma unroll
  for (int v = 0; v < 8; ++v) {
    const unsigned c = hist[v][t];
    hist[v][t] = cnt;
    cnt += c;
  }
  dstart[t] = block_exclusive_scan(cnt, wsum);
  gbase[t] = block_exclusive_scan(totals[r * 256 + t], wsum) + offs[(r * 256 + t) * nb + blockIdx.x];  // row start + earlier tiles
#pragma unroll
  for (int m = 0; m < 16; ++m) {
    const unsigned d = (k[m] >> sh) & 255u;
    const unsigned pos = dstart[d] + hist[w][d] + rank[m];
    skey[pos] = k[m];
    sidx[pos] = ix[m];
  }
  __syncthreads();
  unsigned* ko = kout + r * D;
  unsigned* io = iout + r * D;
  for (int j = t; j < n; j += 256) {  // the tile in digit order: each digit's run is contiguous
    const unsigned key = skey[j], d = (key >> sh) & 255u;
    const unsigned pos = gbase[d] + (unsigned(j) - dstart[d]);
    ko[pos] = key;
    io[pos] = sidx[j];
  }
}
extern "C" __global__ void radix_emit(T* __restrict__ vals, int64_t* __restrict__ idxs, const unsigned* __restrict__ idx,
    const T* __restrict__ x, int64_t rows, int64_t D, int64_t inner, int64_t K) {
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < rows * K; e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = e / K, i = e - r * K;
    const unsigned src = idx[r * D + i];
    vals[elem_at(r, i, K, inner)] = x[elem_at(r, src, D, inner)];
    idxs[elem_at(r, i, K, inner)] = int64_t(src);
  }
}
)CUDA";

const char* kSelectKernel = R"CUDA(
// ---- topk, k <= KSEL: selection ----
#define KSEL 16
__device__ __forceinline__ void e_swap_if_less(E& a, E& b) {  // a, b = min, max
  if (e_less(b, a)) { E t = a; a = b; b = t; }
}
// Adds e to L (the KSEL smallest so far, ascending) when it is smaller than L's largest.
__device__ __forceinline__ void sel_push(E (&L)[KSEL], E e) {
  if (!e_less(e, L[KSEL - 1])) return;
#pragma unroll
  for (int i = 0; i < KSEL; ++i) e_swap_if_less(L[i], e);
}
// Pushes elements l, l + step, ... (< end) of the row at xr (element l at xr[l * inner]) into L,
// 8 loads in flight before any of them is compared.
__device__ __forceinline__ void sel_scan(E (&L)[KSEL], const T* __restrict__ xr, int64_t inner, int64_t l,
                                         int64_t end, int64_t step, int flip) {
  for (; l + 7 * step < end; l += 8 * step) {
    T v[8];
#pragma unroll
    for (int u = 0; u < 8; ++u) v[u] = xr[(l + u * step) * inner];
#pragma unroll
    for (int u = 0; u < 8; ++u) sel_push(L, e_make(v[u], l + u * step, flip));
  }
  for (; l < end; l += step) sel_push(L, e_make(xr[l * inner], l, flip));
}
// L becomes the KSEL smallest of L and of lane (lane ^ m)'s list, ascending: the elementwise
// min of one ascending list and the other reversed holds them and is bitonic, so a bitonic
// merge (distances KSEL/2 .. 1) sorts it.
__device__ __forceinline__ void sel_merge_lanes(E (&L)[KSEL], int m) {
  E R[KSEL];
#pragma unroll
  for (int i = 0; i < KSEL; ++i) R[i] = e_shfl_xor(L[KSEL - 1 - i], m);
#pragma unroll
  for (int i = 0; i < KSEL; ++i)
    if (e_less(R[i], L[i])) L[i] = R[i];
#pragma unroll
  for (int d = KSEL / 2; d >= 1; d >>= 1) {
#pragma unroll
    for (int i = 0; i < KSEL; ++i)
      if ((i & d) == 0) e_swap_if_less(L[i], L[i + d]);
  }
}

// The block's lists (each warp's merged already) merged into warp 0's through shared memory
// `sh` (KSEL entries a warp).
__device__ __forceinline__ void block_merge(E (&L)[KSEL], E* sh) {
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = blockDim.x >> 5;
  if (lane == 0) {
#pragma unroll
    for (int i = 0; i < KSEL; ++i) sh[w * KSEL + i] = L[i];
  }
  __syncthreads();
  if (w != 0) return;
#pragma unroll
  for (int i = 0; i < KSEL; ++i) L[i] = lane < nw ? sh[lane * KSEL + i] : e_sentinel();
#pragma unroll 1
  for (int m = 1; m < nw; m <<= 1) sel_merge_lanes(L, m);
}

// tpr threads per row: 32 (a warp per row, blockDim / 32 rows per block) or blockDim (a block
// per row, whose warps merge their lists through shared memory). The first K <= KSEL pairs
// of the row's merged list are its outputs.
extern "C" __global__ void __launch_bounds__(256) topk_select(T* __restrict__ vals, int64_t* __restrict__ idxs,
    const T* __restrict__ x, int64_t rows, int64_t D, int64_t inner, int64_t K, int tpr, int flip) {
  __shared__ E sh[(256 / 32) * KSEL];
  const int lane = threadIdx.x & 31;
  const int64_t r = int64_t(blockIdx.x) * (blockDim.x / tpr) + threadIdx.x / tpr;
  E L[KSEL];
#pragma unroll
  for (int i = 0; i < KSEL; ++i) L[i] = e_sentinel();
  const T* xr = x + elem_at(r, 0, D, inner);  // element l at xr[l * inner]
  if (r < rows) sel_scan(L, xr, inner, threadIdx.x % tpr, D, tpr, flip);
#pragma unroll 1
  for (int m = 1; m < 32; m <<= 1) sel_merge_lanes(L, m);
  if (tpr > 32) {
    block_merge(L, sh);
    if (threadIdx.x >= 32) return;
  }
  if (r < rows && lane == 0) {
#pragma unroll
    for (int i = 0; i < KSEL; ++i) {
      if (i < K) {
        const int64_t src = e_index(L[i]);
        vals[elem_at(r, i, K, inner)] = xr[src * inner];
        idxs[elem_at(r, i, K, inner)] = src;
      }
    }
  }
}

// Few long rows: row blockIdx.y splits into gridDim.x parts of `chunk` elements; each block
// writes its part's KSEL best entries to parts[(row * gridDim.x + part) * KSEL + i], and
// topk_merge takes a row's parts (a block per row).
extern "C" __global__ void __launch_bounds__(256) topk_part(E* __restrict__ parts, const T* __restrict__ x,
    int64_t rows, int64_t D, int64_t inner, int64_t chunk, int flip) {
  __shared__ E sh[(256 / 32) * KSEL];
  const int64_t r = blockIdx.y, c0 = int64_t(blockIdx.x) * chunk, c1 = min(D, c0 + chunk);
  E L[KSEL];
#pragma unroll
  for (int i = 0; i < KSEL; ++i) L[i] = e_sentinel();
  const T* xr = x + elem_at(r, 0, D, inner);
  sel_scan(L, xr, inner, c0 + threadIdx.x, c1, blockDim.x, flip);
#pragma unroll 1
  for (int m = 1; m < 32; m <<= 1) sel_merge_lanes(L, m);
  block_merge(L, sh);
  if (threadIdx.x == 0) {
    E* out = parts + (r * gridDim.x + blockIdx.x) * KSEL;
#pragma unroll
    for (int i = 0; i < KSEL; ++i) out[i] = L[i];
  }
}
extern "C" __global__ void __launch_bounds__(256) topk_merge(T* __restrict__ vals, int64_t* __restrict__ idxs,
    const E* __restrict__ parts, const T* __restrict__ x, int64_t rows, int64_t D, int64_t inner, int64_t K,
    int64_t nparts) {
  __shared__ E sh[(256 / 32) * KSEL];
  const int64_t r = blockIdx.x;
  E L[KSEL];
#pragma unroll
  for (int i = 0; i < KSEL; ++i) L[i] = e_sentinel();
  const E* pr = parts + r * nparts * KSEL;
  for (int64_t j = threadIdx.x; j < nparts * KSEL; j += blockDim.x) sel_push(L, pr[j]);
#pragma unroll 1
  for (int m = 1; m < 32; m <<= 1) sel_merge_lanes(L, m);
  block_merge(L, sh);
  if (threadIdx.x == 0) {
    const T* xr = x + elem_at(r, 0, D, inner);
#pragma unroll
    for (int i = 0; i < KSEL; ++i) {
      if (i < K) {
        const int64_t src = e_index(L[i]);
        vals[elem_at(r, i, K, inner)] = xr[src * inner];
        idxs[elem_at(r, i, K, inner)] = src;
      }
    }
  }
}
)CUDA";

std::string key_of(DType dt) { return "sort/" + std::string(dtype_name(dt)); }
// The selection kernels over 64-bit entries (topk along a dim of 2^31 elements or more).
std::string huge_select_source(DType dt) {
  return "typedef " + std::string(device_type(dt)) + " T;\ntypedef unsigned long long EIDX;\n" + key_code(dt) + kWide +
         kElemAt + kSelectKernel;
}


std::vector<PrimitivePtr> sort_common(CudaBackend& be, Op& op, bool topk) {
  const auto& a = op.attr<DimAttrs>();
  auto vals = alloc(be, op.outputs[0]);
  auto idx = alloc(be, op.outputs[1]);
  const Shape& s = op.in(0).shape;
  int64_t outer = 1, D = 1, inner = 1;
  if (s.rank() > 0) {
    for (int d = 0; d < a.dim; ++d) outer *= s[d];
    D = s[a.dim];
    for (int d = a.dim + 1; d < s.rank(); ++d) inner *= s[d];
  }
  // k: outputs per row (a 0-d input always has its one element, like torch)
  const int64_t K = topk && s.rank() > 0 ? a.k : D;
  if (s.numel() == 0 || K == 0 || op.outputs[0].shape.numel() == 0) return {vals, idx};
  const bool huge = D >= (int64_t(1) << 31);  // past the entries' 32-bit indices
  EMBER_CHECK(!huge || (topk && K <= kSelectMax), op.name(), ": rows of ", D,
              " elements are too long for the CUDA backend (topk with k <= ", kSelectMax, " takes them)");
  auto xc = contiguous(be, op.inputs[0]);
  const DType dt = xc->dtype();
  const std::string key = key_of(dt);
  auto fn = [&](const char* entry) {
    if (huge) return be.jit().get(key + "/huge", entry, [&] { return huge_select_source(dt); });
    return be.jit().get(key, entry, [&] { return sort_source(dt); });
  };
  const int64_t rows = outer * inner;
  const int64_t P = pow2_ceil(D);
  const int tile = tile_of(dt);
  const int flip = a.flag ? 1 : 0;
  const void* x = xc->raw();
  void* vp = vals->raw();
  void* ip = idx->raw();
  if (topk && K <= kSelectMax) {
    // few long rows: each row splits over several blocks (parts of at least kPartMin elements,
    // about 4 blocks an SM in all), whose best entries a second kernel merges
    // (EMBER_CUDA_TOPK=rows: a block per row, for A/B runs)
    const int64_t blocks = int64_t(be.sm_count()) * 4;
    const char* alg = std::getenv("EMBER_CUDA_TOPK");
    const bool split_ok = !(alg && std::string(alg) == "rows");
    if (huge || (split_ok && rows < blocks && D >= 2 * kPartMin && rows <= 65535)) {
      int64_t parts = std::clamp<int64_t>(ceil_div(blocks, rows), 2, std::max<int64_t>(2, D / kPartMin));
      parts = std::min<int64_t>(parts, 65535);
      const int64_t chunk = ceil_div(D, parts);
      parts = ceil_div(D, chunk);
      const size_t entry = huge || wide_keys(dt) ? 16 : 8;
      Buffer buf(be.allocator(), size_t(rows * parts * kSelectMax) * entry);
      be.launch(fn("topk_part"), dim3(unsigned(parts), unsigned(rows)), kSelectThreads, 0, buf.ptr, x, rows, D,
                inner, chunk, flip);
      be.launch(fn("topk_merge"), unsigned(rows), kSelectThreads, 0, vp, ip, buf.ptr, x, rows, D, inner, K, parts);
      return {vals, idx};
    }
    // a warp per row when that fills the GPU, else a block per row
    const int tpr = rows >= int64_t(be.sm_count()) * 32 ? 32 : kSelectThreads;
    const int64_t rpb = kSelectThreads / tpr;
    be.launch(fn("topk_select"), unsigned(ceil_div(rows, rpb)), kSelectThreads, 0, vp, ip, x, rows, D, inner, K,
              tpr, flip);
    return {vals, idx};
  }
  // one row a tile, 32-bit keys: the radix sort (EMBER_CUDA_SORT=bitonic: the bitonic kernel,
  // per call, for A/B runs). H200, f32 [8192, 4096]: 777 us; bitonic in registers 1368 us (PyTorch's
  // segmented radix sort 1054 us)
  const char* alg = std::getenv("EMBER_CUDA_SORT");
  if (P == 4096 && tile == 4096 && !(alg && std::string(alg) == "bitonic")) {
    const unsigned grid = unsigned(std::min<int64_t>(rows, int64_t(be.sm_count()) * 8));
    be.launch(fn("radix_tile"), grid, 256, 0, vp, ip, x, rows, D, inner, K, flip);
    return {vals, idx};
  }
  if (P <= tile && rows * P >= tile) {  // full tiles
    const int rpb = int(tile / P);
    const unsigned grid = unsigned(std::min<int64_t>(ceil_div(rows, rpb), int64_t(be.sm_count()) * 8));
    be.launch(fn("sort_tile"), grid, 256, 0, vp, ip, x, rows, D, inner, K, int(P), rpb, flip);
    return {vals, idx};
  }
  if (P <= tile) {
    const int rpb = int(std::min<int64_t>(tile / P, rows));
    const int n = int(P) * rpb;
    const int threads = int(std::clamp<int64_t>((n / 2 + 31) / 32 * 32, 32, 512));
    const unsigned grid = unsigned(std::min<int64_t>((rows + rpb - 1) / rpb, int64_t(be.sm_count()) * 32));
    be.launch(fn("sort_block"), grid, threads, 0, vp, ip, x, rows, D, inner, K, int(P), rpb, flip);
    return {vals, idx};
  }
  // long rows of 32-bit keys: the global radix sort (4 passes of 3 kernels). H200, [4, 1M] f32:
  // 302 us (PyTorch 416 us); 986 us through the global bitonic network below (EMBER_CUDA_SORT=
  // bitonic), 1061 us with shared-memory atomics in the histogram, an unparallel scan and
  // scattered writes straight from the ranking
  if (!wide_keys(dt) && rows <= 65535 && !(alg && std::string(alg) == "bitonic")) {
    const int64_t n = rows * D, nb = ceil_div(D, int64_t(4096));
    Buffer keys(be.allocator(), size_t(n) * 8), ids(be.allocator(), size_t(n) * 8),
        counts(be.allocator(), size_t(rows * 256 * nb) * 4), totals(be.allocator(), size_t(rows * 256) * 4);
    unsigned* k[2] = {static_cast<unsigned*>(keys.ptr), static_cast<unsigned*>(keys.ptr) + n};
    unsigned* i[2] = {static_cast<unsigned*>(ids.ptr), static_cast<unsigned*>(ids.ptr) + n};
    constexpr int kThreads = 256;
    be.launch(fn("radix_init"), grid_for(be, n, kThreads), kThreads, 0, k[0], i[0], x, rows, D, inner, flip);
    const dim3 tiles{unsigned(nb), unsigned(rows)};
    for (int pass = 0; pass < 4; ++pass) {
      const int sh = 8 * pass, a = pass & 1;
      be.launch(fn("radix_hist"), tiles, 256, 0, k[a], counts.ptr, D, sh);
      be.launch(fn("radix_scan"), dim3(256, unsigned(rows)), 256, 0, counts.ptr, totals.ptr, nb);
      be.launch(fn("radix_scatter"), tiles, 256, 0, k[a], i[a], k[1 - a], i[1 - a], counts.ptr, totals.ptr, D, sh);
    }
    be.launch(fn("radix_emit"), grid_for(be, rows * K, kThreads), kThreads, 0, vp, ip, i[0], x, rows, D, inner, K);
    return {vals, idx};
  }
  const size_t esz = wide_keys(dt) ? 16 : 8;
  const int64_t n = rows * P;
  Buffer buf(be.allocator(), size_t(n) * esz);
  constexpr int kThreads = 256;
  be.launch(fn("gsort_init"), grid_for(be, n, kThreads), kThreads, 0, buf.ptr, x, rows, D, inner, P, flip);
  const unsigned lgrid = unsigned(std::min<int64_t>(n / tile, int64_t(be.sm_count()) * 32));
  be.launch(fn("gsort_local"), lgrid, 512, 0, buf.ptr, n, P, int64_t(2), int64_t(tile));
  for (int64_t k = int64_t(tile) * 2; k <= P; k *= 2) {
    for (int64_t j = k / 2; j >= tile; j /= 2)
      be.launch(fn("gsort_global"), grid_for(be, n / 2, kThreads), kThreads, 0, buf.ptr, n, P, k, j);
    be.launch(fn("gsort_local"), lgrid, 512, 0, buf.ptr, n, P, k, k);
  }
  be.launch(fn("gsort_emit"), grid_for(be, rows * K, kThreads), kThreads, 0, vp, ip, buf.ptr, x, rows, D, inner, P,
            K);
  return {vals, idx};
}

std::vector<PrimitivePtr> sort_kernel(CudaBackend& be, Op& op) { return sort_common(be, op, false); }
std::vector<PrimitivePtr> topk_kernel(CudaBackend& be, Op& op) { return sort_common(be, op, true); }

}  // namespace

std::string sort_source(DType dt) {
  std::string s = "typedef " + std::string(device_type(dt)) + " T;\n";
  s += "#define TILE " + std::to_string(tile_of(dt)) + "\n";
  s += key_code(dt);
  s += wide_keys(dt) ? std::string("typedef unsigned EIDX;\n") + kWide : std::string(kPacked);
  s += kElemAt;
  s += kSortKernels;
  if (!wide_keys(dt)) s += kRadixKernel;
  s += kSelectKernel;
  return s;
}

std::vector<KernelSource> sort_variants() {
  std::vector<KernelSource> v;
  for (DType dt : {DType::f64, DType::f32, DType::f16, DType::bf16, DType::i64, DType::i32, DType::i16, DType::i8,
                   DType::u8, DType::boolean}) {
    v.push_back({key_of(dt), sort_source(dt)});
    v.push_back({key_of(dt) + "/huge", huge_select_source(dt)});
  }
  return v;
}

void register_sort_kernels(KernelTable& t) {
  t[size_t(OpKind::sort)] = sort_kernel;
  t[size_t(OpKind::topk)] = topk_kernel;
}

}  // namespace ember::cuda
