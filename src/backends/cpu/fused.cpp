// The CPU backend's fused elementwise groups (the fusion decorator's kernels on the CPU).
//
// A group runs tile by tile: the domain is cut into runs of kTile elements, and for each tile
// every input is brought into a small buffer (read in place when it is dense, gathered through
// its strides when it is a view or broadcast), every node runs over the tile's buffers, and the
// outputs are stored. A tile's buffers stay in L1/L2 through every op of the group, so a chain
// of n ops reads and writes memory once instead of n times. Tiles are spread over the pool.
//
// A node runs the same code the eager op runs: f32 nodes through the vector kernels of
// elementwise_simd.cpp, every other node through the backend's own kernel on 1-d views of the
// tile buffers. So a fused result is the eager result, bit for bit.
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_map>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "cpu_backend.hpp"
#include "cpu_features.hpp"
#include "elementwise_simd.hpp"
#include "gemm.hpp"
#include "reduce_kernels.hpp"
#include "ember/core/error.hpp"
#include "ember/core/fused_matmul.hpp"
#include "thread_pool.hpp"

namespace ember::cpu {

namespace {

constexpr int64_t kTile = 2048;  // elements per tile: an f32 buffer is 8 KiB
constexpr int64_t kRowTile = 8192;  // row programs: the longest row kept whole (32 KiB of f32)
// row programs over narrow rows: rows of at most half this run several to a tile, up to this
// many elements (and at most kMaxRowsPerTile rows), so that each node runs once per tile and not
// once per row
constexpr int64_t kRowsTile = 4096;
constexpr int64_t kMaxRowsPerTile = 512;
constexpr size_t kAlign = 64;
constexpr int kMaxFusedRank = 64;

size_t round_up(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

// How a node runs, decided once per program signature.
// binary_scalar_f32 / scalar_binary_f32: the second / first operand is a one-value input that
// the eager op would see as a broadcast value (its shape is not the domain's).
// unary_half / binary_half: f16 or bf16 in and out, computed as the eager kernels do: widened
// to float, the float vector kernel, rounded back.
// reduce: a row program's reduction (row_fold_* of reduce.cpp).
enum class NodeRun : uint8_t {
  unary_f32, binary_f32, binary_scalar_f32, scalar_binary_f32, unary_half, binary_half, cast_simd, generic, reduce
};

struct Plan {
  std::vector<NodeRun> runs;
  std::vector<Op> ops;  // each node as an Op (kind and attributes) for the vector-kernel lookups
};

DType arg_dtype(const FusedProgram& p, int32_t x) { return x < 0 ? p.inputs[size_t(~x)].dtype : p.nodes[size_t(x)].dtype; }

// Per-thread float blocks for f16/bf16 nodes (a, b in; y out), at least n each.
struct HalfScratch {
  std::vector<float> v;
  float *a = nullptr, *b = nullptr, *y = nullptr;
};
HalfScratch& half_scratch(int64_t n) {
  thread_local HalfScratch h;
  if (h.v.size() < size_t(3 * n)) {
    h.v.resize(size_t(3 * n));
    h.a = h.v.data();
    h.b = h.a + n;
    h.y = h.b + n;
  }
  return h;
}

// A non-owning storage over a tile buffer (read-only to kernels: never reused in place).
const std::shared_ptr<const void>& borrowed() {
  static const std::shared_ptr<const void> owner = std::make_shared<int>(0);
  return owner;
}

// Copies `run` elements of type T spaced `stride` elements apart (0: one element repeated).
template <class T>
inline void copy_run(const char* src, int64_t stride, char* dst, int64_t run) {
  const T* p = reinterpret_cast<const T*>(src);
  T* q = reinterpret_cast<T*>(dst);
  if (stride == 0) {
    const T v = *p;
    for (int64_t i = 0; i < run; ++i) q[i] = v;
  } else {
    for (int64_t i = 0; i < run; ++i) q[i] = p[i * stride];
  }
}

// dst[0, bytes) = src[0, bytes) with non-temporal stores where dst is aligned: an output is
// written once and not read by this group again, so its lines need not be read into the cache
// first (as the eager kernels' large stores do), which saves a third of the traffic. A store
// as wide as a cache line where the CPU has one: on Zen 4, 16-byte streaming stores ran a
// memory-bound group (x * 0.5 + 1, 16 MiB) 1.3-1.8x slower than 64-byte ones.
#if defined(__x86_64__)
__attribute__((target("avx512f"))) void stream_copy_avx512(char* dst, const char* src, size_t bytes) {
  size_t i = 0;
  if (reinterpret_cast<uintptr_t>(dst) % 64 == 0) {
    for (; i + 64 <= bytes; i += 64)
      _mm512_stream_si512(reinterpret_cast<__m512i*>(dst + i), _mm512_loadu_si512(src + i));
  }
  if (i < bytes) std::memcpy(dst + i, src + i, bytes - i);
}
void stream_copy_sse2(char* dst, const char* src, size_t bytes) {
  size_t i = 0;
  if (reinterpret_cast<uintptr_t>(dst) % 16 == 0) {
    for (; i + 16 <= bytes; i += 16)
      _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i), _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i)));
  }
  if (i < bytes) std::memcpy(dst + i, src + i, bytes - i);
}
void stream_copy(char* dst, const char* src, size_t bytes) {
  static const auto copy = features().avx512 ? stream_copy_avx512 : stream_copy_sse2;
  copy(dst, src, bytes);
}
// Orders the streaming stores before what follows (another thread reading the output).
inline void store_fence() { _mm_sfence(); }
#else
// Targets without streaming stores (wasm): a plain copy, and nothing to order.
void stream_copy(char* dst, const char* src, size_t bytes) { std::memcpy(dst, src, bytes); }
inline void store_fence() {}
#endif

// The next tile's dense inputs, brought into L2 while this tile computes. The nodes of a tile
// run one after another over the whole tile, so the hardware prefetcher, which follows a stream
// only a few lines ahead, would leave each tile's first read waiting on DRAM; and asking for a
// whole tile at once stalls on the core's few outstanding misses. So the lines are asked for a
// share at a time, one share before each node. Measured on Zen 4 (2026-12-06): the GELU of plain
// ops over [4, 512, 2048] on one thread 3.9 -> 3.0 ms; softmax of primitives over [8192, 4096]
// (a row program: the next row is fetched) 13.5-14.7 -> 10.9-13.5 ms on two.
struct Prefetch {
  static constexpr int kMaxRanges = 8;
  const char* begin[kMaxRanges];
  const char* end[kMaxRanges];
  int ranges = 0, at = 0;
  const char* p = nullptr;
  int64_t lines = 0, issued = 0;

  void reset() { ranges = at = 0, lines = issued = 0, p = nullptr; }
  void add(const char* base, size_t es, int64_t from, int64_t to) {
    if (from >= to || ranges == kMaxRanges) return;
    begin[ranges] = base + from * int64_t(es);
    end[ranges] = base + to * int64_t(es);
    lines += (end[ranges] - begin[ranges] + 63) / 64;
    if (ranges++ == 0) p = begin[0];
  }
  // Issues lines until `share` / `shares` of them have been asked for.
  void issue(size_t share, size_t shares) {
    const int64_t upto = shares == 0 ? lines : lines * int64_t(share) / int64_t(shares);
    for (; issued < upto && at < ranges; ++issued) {
      __builtin_prefetch(p, 0, 2);  // to L2 (_MM_HINT_T1 on x86)
      p += 64;
      if (p >= end[at] && ++at < ranges) p = begin[at];
    }
  }
};

// Walks the flat index range [begin, begin + n) of `shape` and copies the input's elements
// (strides in elements, 0 on broadcast dims) into dst.
void gather(const Shape& shape, const std::vector<int64_t>& strides, const char* src, size_t es, int64_t begin,
            int64_t n, char* dst) {
  const int r = shape.rank();
  if (r == 0) {
    std::memcpy(dst, src, es);
    return;
  }
  int64_t idx[kMaxFusedRank];
  int64_t rem = begin;
  for (int d = r - 1; d >= 0; --d) {
    idx[d] = rem % shape[d];
    rem /= shape[d];
  }
  int64_t off = 0;
  for (int d = 0; d < r; ++d) off += idx[d] * strides[d];
  const int64_t inner = shape[r - 1], st = strides[r - 1];
  int64_t done = 0;
  while (done < n) {
    int64_t run = std::min(n - done, inner - idx[r - 1]);
    EMBER_CHECK(run > 0, "fused group: index walk of ", shape, " stopped at element ", begin + done, " of [", begin,
                ", ", begin + n, ")");
    const char* p = src + off * int64_t(es);
    char* q = dst + done * int64_t(es);
    if (st == 1) {
      std::memcpy(q, p, size_t(run) * es);
    } else {
      switch (es) {
        case 4: copy_run<uint32_t>(p, st, q, run); break;
        case 8: copy_run<uint64_t>(p, st, q, run); break;
        case 2: copy_run<uint16_t>(p, st, q, run); break;
        default: copy_run<uint8_t>(p, st, q, run); break;
      }
    }
    done += run;
    // advance the multi-index by `run` (to the start of the next innermost row)
    off += run * st;
    idx[r - 1] += run;
    for (int d = r - 1; d > 0 && idx[d] == shape[d]; --d) {
      off -= idx[d] * strides[d];
      idx[d] = 0;
      ++idx[d - 1];
      off += strides[d - 1];
    }
  }
}

// How a kernel reads one input of a group over `shape`: in place (dense: contiguous, the
// domain's shape, and its buffer not taken by an output), as one value, or gathered through its
// broadcast strides (computed when `strided` is wanted).
struct In {
  const char* base;
  size_t es;
  bool dense, scalar;
  std::vector<int64_t> strides, rstrides;  // against the domain / (row programs) the reduced shape

  static In of(const CpuTensor& t, const Shape& shape, bool reused, bool strided) {
    In in;
    in.base = static_cast<const char*>(t.raw());
    in.es = dtype_size(t.dtype());
    in.scalar = t.numel() == 1;
    in.dense = !in.scalar && !reused && t.shape() == shape && t.is_contiguous();
    if (strided && !in.dense && !in.scalar) in.strides = broadcast_strides(t, shape);
    return in;
  }
};

class CpuFusedKernels final : public FusedKernels {
 public:
  explicit CpuFusedKernels(CpuBackend& be) : be_(be) {}

  bool can_fuse(const Op& op) const override {
    if (op.info().family == OpFamily::Reduce) return row_reduction(op) || column_reduction(op) || middle_reduction(op);
    if (op.kind == OpKind::matmul) return matmul_producer(op);
    if (!is_elementwise(op.info().family) || op.outputs.size() != 1 || !be_.supports(op)) return false;
    // integer division by zero raises at the op in eager mode: those stay eager
    switch (op.kind) {
      case OpKind::div: case OpKind::remainder: case OpKind::fmod:
        return is_float(op.outputs[0].dtype);
      default:
        return true;
    }
  }

  // A reduction a row program runs: a float sum, mean, max, min, var, std or logsumexp over
  // trailing dims, with rows enough to spread over the pool (else the eager kernel, which splits
  // long reductions between threads, is faster).
  static bool row_reduction(const Op& op) {
    const DType dt = op.in(0).dtype;
    if (!row_fold_supported(op.kind, dt) || op.outputs[0].dtype != dt) return false;
    int64_t rows = 0, cols = 0;
    if (!reduces_trailing_dims(op, rows, cols) || cols < 2 || rows < 1) return false;
    return rows >= 4 * ThreadPool::global().size() || cols <= 4 * kRowTile;
  }

  // A reduction a column program runs: the same reductions over leading dims, keeping at least
  // 4 columns (narrower ones the eager kernel folds column by column, in another order).
  static bool column_reduction(const Op& op) {
    const DType dt = op.in(0).dtype;
    if (!row_fold_supported(op.kind, dt) || op.outputs[0].dtype != dt) return false;
    int64_t rows = 0, cols = 0;
    return reduces_leading_dims(op, rows, cols) && cols >= 4;
  }

  // A reduction over leading and trailing dims that keeps a middle block ([0, to) and
  // [from, rank), BatchNorm's {0, 2, 3}), run by a row program whose rows are the kept indices:
  // at least 4 of them (fewer merge with the reduced dims in the eager kernel, which then folds
  // in another order), runs of at least 2, and rows enough to spread over the pool or short.
  static bool middle_reduction(const Op& op) {
    const DType dt = op.in(0).dtype;
    if (!row_fold_supported(op.kind, dt) || op.outputs[0].dtype != dt) return false;
    const Shape& s = op.in(0).shape;
    const auto& dims = op.attr<ReduceAttrs>().dims;
    int to = 0;
    while (to < int(dims.size()) && dims[size_t(to)] == to) ++to;
    if (to == 0 || to == int(dims.size())) return false;
    const int from = dims[size_t(to)];
    for (size_t k = size_t(to); k < dims.size(); ++k)
      if (dims[k] != from + int(k) - to) return false;
    if (dims.back() != s.rank() - 1) return false;
    int64_t lead = 1, kept = 1, run = 1;
    for (int d = 0; d < s.rank(); ++d) (d < to ? lead : d < from ? kept : run) *= s[d];
    return kept >= 4 && run >= 2 && (kept >= 4 * ThreadPool::global().size() || lead * run <= 4 * kRowTile);
  }

  // EMBER_FUSION_GEMM_EPILOGUE=1: matmul programs run their rest inside the GEMM (run_matmul).
  static bool in_gemm_epilogue() {
    const char* e = std::getenv("EMBER_FUSION_GEMM_EPILOGUE");
    return e && e[0] == '1';
  }

  // A matmul whose product an epilogue may read while it is in cache: f32 or f64 (the packed
  // GEMM's types), with or without a bias.
  bool matmul_producer(const Op& op) const {
    const DType dt = op.outputs[0].dtype;
    return (dt == DType::f32 || dt == DType::f64) && be_.supports(op);
  }

  std::string kernel_name(const FusedProgram& p) const override {
    if (has_producer(p)) return p.is_cols() ? "cpu_gemm_cols" : "cpu_gemm_epilogue";
    return p.is_rows() ? "cpu_fused_rows" : p.is_cols() ? "cpu_fused_cols" : "cpu_fused_tiles";
  }

  std::vector<PrimitivePtr> run(const FusedProgram& p, std::vector<PrimitivePtr> inputs) override {
    EMBER_CHECK(inputs.size() == p.inputs.size(), "fused group: ", inputs.size(), " inputs for ", p.inputs.size());
    EMBER_CHECK(p.shape.rank() <= kMaxFusedRank, "fused group: rank ", p.shape.rank(), " is above ", kMaxFusedRank);
    if (has_producer(p)) return run_matmul(p, std::move(inputs));
    std::shared_ptr<const Plan> plan = plan_of(p);
    if (p.is_rows()) return run_rows(p, *plan, std::move(inputs));
    if (p.is_cols()) return run_cols(p, *plan, std::move(inputs));
    std::vector<bool> in_reused(inputs.size(), false);
    std::vector<CpuTensorPtr> outs = make_outputs(p, inputs, in_reused, {});
    const Tiles tiles = tiles_of(p, inputs, in_reused, outs);
    run_all(p, *plan, tiles);
    return {outs.begin(), outs.end()};
  }

  // A matmul and the elementwise nodes over its product (node 0 of `p` is the matmul): the
  // product on the packed GEMM, then the rest of the program (bias, activation, residual add,
  // scale, ...) as one elementwise group over it, whose first output takes the product's buffer.
  //
  // With EMBER_FUSION_GEMM_EPILOGUE=1 the GEMM instead hands each block of the product to the
  // rest as soon as the block is final, while it is still in cache (GemmEpilogue). Measured on
  // 2 Zen cores (2026-12-05), that is slower than the pass after the product: GELU + residual
  // over [2048, 1024] with K = 256 took 9.6 ms in the GEMM vs 9.2 ms after it (eager 10.2), and
  // with K = 64 19.0 ms vs 14.0 ms (eager 18.2); a bias + ReLU with K = 64 12.3 vs 9.7 ms. The
  // rest is compute-bound here (each node is a pass over an L1 tile), so reading the product
  // from cache saves little, while running it inside the GEMM's tasks costs more than that.
  // Products the packed GEMM does not run (tiny, f16/bf16) always finish first.
  std::vector<PrimitivePtr> run_matmul(const FusedProgram& p, std::vector<PrimitivePtr> inputs) {
    const ProducerSplit split = split_producer(p, false);
    const FusedProgram& rest = split.rest;
    Op op = make_op(OpKind::matmul, {inputs[size_t(split.a_input)], inputs[size_t(split.b_input)]}, p.nodes[0].attrs);
    // the call holds the product and the rest's inputs alone (an output may take a buffer), but
    // no output takes the product's when it is returned, nor an operand's (`op` holds those
    // until the product is done, so their use_count() is above 1)
    CpuTensorPtr prod = alloc(op.outputs[0]);
    CpuTensor& prod_t = *prod;
    std::vector<PrimitivePtr> rin(rest.inputs.size());
    rin[0] = std::move(prod);
    for (size_t i = 0; i < inputs.size(); ++i)
      if (split.rest_input[i] >= 0) rin[size_t(split.rest_input[i])] = inputs[i];
    std::vector<bool> pinned(rin.size(), false), in_reused(rin.size(), false);
    pinned[0] = std::find(split.outputs.begin(), split.outputs.end(), -1) != split.outputs.end();
    inputs.clear();
    std::vector<CpuTensorPtr> routs;
    if (rest.is_cols()) {  // the product, then the rest as a column program over it
      std::shared_ptr<const Plan> plan = plan_of(rest);
      matmul_into(op, prod_t, nullptr);
      for (auto& o : run_cols(rest, *plan, rin, pinned)) routs.push_back(std::static_pointer_cast<CpuTensor>(o));
    } else if (!rest.nodes.empty()) {
      std::shared_ptr<const Plan> plan = plan_of(rest);
      routs = make_outputs(rest, rin, in_reused, pinned);
      Tiles tiles = tiles_of(rest, rin, in_reused, routs);
      for (size_t k = 0; k < routs.size(); ++k) tiles.out_cached[k] = routs[k]->raw() == prod_t.raw();
      struct Ctx {
        CpuFusedKernels* self;
        const FusedProgram* rest;
        const Plan* plan;
        const Tiles* tiles;
        const char* base;
        size_t es;
      } ctx{this, &rest, plan.get(), &tiles, static_cast<const char*>(prod_t.raw()), dtype_size(prod_t.dtype())};
      GemmEpilogue ep;
      ep.ctx = &ctx;
      ep.fn = [](void* c, void* blk, int64_t rows, int64_t cols, int64_t rsc) {
        const Ctx& x = *static_cast<const Ctx*>(c);
        const int64_t first = (static_cast<const char*>(blk) - x.base) / int64_t(x.es);
        if (cols == rsc) {  // whole rows: one run
          x.self->run_tiles(*x.rest, *x.plan, *x.tiles, first, rows * cols);
          return;
        }
        for (int64_t r = 0; r < rows; ++r) x.self->run_tiles(*x.rest, *x.plan, *x.tiles, first + r * rsc, cols);
      };
      if (!matmul_into(op, prod_t, in_gemm_epilogue() ? &ep : nullptr)) run_all(rest, *plan, tiles);
    } else {
      matmul_into(op, prod_t, nullptr);
    }
    std::vector<PrimitivePtr> outs;
    for (int32_t k : split.outputs) outs.push_back(k < 0 ? rin[0] : PrimitivePtr(routs[size_t(k)]));
    return outs;
  }

  // The outputs' tensors: a full output takes the buffer of an input that the call holds alone
  // (same bytes, dense, not `pinned`), else a new one. in_reused[i]: input i's buffer is taken.
  static std::vector<CpuTensorPtr> make_outputs(const FusedProgram& p, const std::vector<PrimitivePtr>& inputs,
                                                std::vector<bool>& in_reused, const std::vector<bool>& pinned) {
    const Shape& shape = p.shape;
    std::vector<CpuTensorPtr> outs;
    for (int32_t o : p.outputs) {
      const auto& node = p.nodes[size_t(o)];
      TensorMeta meta{p.node_shape(size_t(o)), node.dtype};
      CpuTensorPtr out;
      for (size_t i = 0; i < inputs.size() && !out && !node.reduced; ++i) {
        if (in_reused[i] || inputs[i].use_count() != 1 || (!pinned.empty() && pinned[i])) continue;
        const CpuTensor& t = as_cpu(inputs[i]);
        if (t.storage.use_count() == 1 && t.storage->begin_write() && t.is_contiguous() && t.offset == 0 &&
            t.shape() == shape && dtype_size(t.dtype()) == dtype_size(meta.dtype) &&
            t.storage->bytes == size_t(shape.numel()) * dtype_size(meta.dtype)) {
          out = std::make_shared<CpuTensor>(meta, t.storage, contiguous_strides(shape), 0);
          in_reused[i] = true;
        }
      }
      outs.push_back(out ? out : alloc(meta));
    }
    return outs;
  }

  // An elementwise program set up to run over ranges of its domain: how each input is read, the
  // scratch layout (a kTile buffer per gathered or one-value input, and per value live at once:
  // a node's buffer is reused once its last reader has run, so a long chain works in a few
  // buffers that stay in L1) and where each output goes.
  struct Tiles {
    std::vector<In> ins;
    std::vector<size_t> in_off, node_off;
    size_t scratch = 0;
    std::vector<char*> out_base;
    std::vector<char> out_cached;  // the output's lines are in cache (a matmul epilogue writing
                                   // over the product): plain stores, not non-temporal ones
    int64_t total = 0;
    uint64_t id = 0;  // tells a thread's worker whether its one-value buffers hold this program's
  };
  static Tiles tiles_of(const FusedProgram& p, const std::vector<PrimitivePtr>& inputs,
                        const std::vector<bool>& in_reused, const std::vector<CpuTensorPtr>& outs) {
    static std::atomic<uint64_t> ids{0};
    Tiles t;
    t.id = ++ids;
    const size_t nin = inputs.size(), nn = p.nodes.size();
    t.total = p.shape.numel();
    t.ins.resize(nin);
    t.in_off.assign(nin, SIZE_MAX);
    t.node_off.resize(nn);
    for (size_t i = 0; i < nin; ++i) {
      t.ins[i] = In::of(as_cpu(inputs[i]), p.shape, in_reused[i], true);
      if (!t.ins[i].dense) {
        t.in_off[i] = t.scratch;
        t.scratch += round_up(size_t(kTile) * t.ins[i].es);
      }
    }
    // node buffers by liveness: a node takes a free slot (never one of its own operands', since
    // those are freed after it), and frees the slots of the values it read last
    std::vector<int64_t> last(nn, -1);
    for (size_t j = 0; j < nn; ++j)
      for (int32_t x : p.nodes[j].args)
        if (x >= 0) last[size_t(x)] = int64_t(j);
    for (int32_t o : p.outputs) last[size_t(o)] = int64_t(nn);  // stored after the last node
    size_t es_max = 1;
    for (const auto& n : p.nodes) es_max = std::max(es_max, dtype_size(n.dtype));
    const size_t slot = round_up(size_t(kTile) * es_max);
    std::vector<size_t> free_slots;
    for (size_t j = 0; j < nn; ++j) {
      if (free_slots.empty()) {
        t.node_off[j] = t.scratch;
        t.scratch += slot;
      } else {
        t.node_off[j] = free_slots.back();
        free_slots.pop_back();
      }
      for (int32_t x : p.nodes[j].args)
        if (x >= 0 && last[size_t(x)] == int64_t(j)) {
          last[size_t(x)] = -2;  // (freed once, however many times j reads it)
          free_slots.push_back(t.node_off[size_t(x)]);
        }
      if (last[j] < 0 && last[j] != -2) free_slots.push_back(t.node_off[j]);  // read by nothing
    }
    for (const auto& o : outs) t.out_base.push_back(static_cast<char*>(o->raw()));
    t.out_cached.assign(outs.size(), 0);
    return t;
  }

  // The whole domain, its tiles spread over the pool. (Claiming blocks of 8 tiles from an atomic
  // counter instead of one equal range per thread was tried on 2 shared vCPUs, 2026-12-07: no
  // clear gain under load, and 4% slower on a quiet host, 1.96-2.06 vs 1.88-1.96 ms for the GELU
  // of plain ops over [4, 512, 2048].)
  void run_all(const FusedProgram& p, const Plan& plan, const Tiles& t) {
    const int64_t ntiles = (t.total + kTile - 1) / kTile;
    parallel_for(0, ntiles, 4, [&](int64_t tb, int64_t te) {
      const int64_t b = tb * kTile;
      run_tiles(p, plan, t, b, std::min(te * kTile, t.total) - b);
      store_fence();
    });
  }

  // The flat range [begin, begin + count) of the domain, kTile elements at a time, on this thread.
  void run_tiles(const FusedProgram& p, const Plan& plan, const Tiles& t, int64_t begin, int64_t count) {
    const size_t nin = t.ins.size(), nn = p.nodes.size();
    struct Worker {
      std::vector<char> storage;
      std::vector<const char*> in_ptr, node_ptr, arg_ptr;
      std::vector<char> arg_one;
      std::vector<PrimitivePtr> keep;  // generic nodes' results, alive until the tile ends
      uint64_t filled_id = 0;          // the program whose one-value buffers are filled, and how far
      int64_t filled = 0;
    };
    thread_local Worker w;
    HalfScratch& tmp = half_scratch(kTile);
    if (w.storage.size() < t.scratch + kAlign) {
      w.storage.resize(t.scratch + kAlign);
      w.filled_id = 0;
    }
    char* buf = reinterpret_cast<char*>(round_up(reinterpret_cast<uintptr_t>(w.storage.data())));
    const int64_t fill = std::min(count, kTile);
    if (w.filled_id != t.id || w.filled < fill) {  // one-value inputs: their buffers filled once
      for (size_t i = 0; i < nin; ++i)
        if (t.ins[i].scalar) gather(Shape{fill}, {0}, t.ins[i].base, t.ins[i].es, 0, fill, buf + t.in_off[i]);
      w.filled_id = t.id;
      w.filled = fill;
    }
    w.in_ptr.resize(nin);
    w.node_ptr.resize(nn);
    // The next tile's dense inputs are prefetched to L2, a share before each node, on AMD only
    // (EMBER_FUSED_PREFETCH=0/1 overrides). The two vendors measured opposite ways, the GELU of
    // plain ops over [4, 512, 2048] on one thread: on 2 vCPUs of a Sapphire Rapids (2026-12-07)
    // it was ~10% slower with the prefetch (the hardware prefetcher already follows a tile's
    // streams; the next tile or the one after, to L2 or to L1, all lost); on a Zen 4 EPYC
    // (2026-12-06 and -07, six alternating runs) 17% faster (medians 4.2-4.6 against 4.9-5.8 ms),
    // as its first node otherwise waits on DRAM for each tile (a perf profile puts a third of the
    // time on the loads of x). Also tried on the Sapphire Rapids, none faster: tiles of 1024,
    // 4096 or 8192 elements; the output node writing straight into the output with plain stores
    // instead of through the tile and streaming stores.
    static const bool prefetch = [] {
      const char* e = std::getenv("EMBER_FUSED_PREFETCH");
      return e ? std::atoi(e) != 0 : features().amd;
    }();
    Prefetch pf;
    for (int64_t b = begin, end = begin + count; b < end; b += kTile) {
      const int64_t n = std::min(kTile, end - b);
      if (prefetch) {
        pf.reset();
        for (size_t i = 0; i < nin; ++i)
          if (t.ins[i].dense) pf.add(t.ins[i].base, t.ins[i].es, b + kTile, std::min(b + 2 * kTile, end));
      }
      for (size_t i = 0; i < nin; ++i) {
        const In& in = t.ins[i];
        if (in.dense) {
          w.in_ptr[i] = in.base + b * int64_t(in.es);
        } else if (in.scalar) {
          w.in_ptr[i] = buf + t.in_off[i];
        } else {
          gather(p.shape, in.strides, in.base, in.es, b, n, buf + t.in_off[i]);
          w.in_ptr[i] = buf + t.in_off[i];
        }
      }
      w.keep.clear();
      for (size_t j = 0; j < nn; ++j) {
        const FusedProgram::Node& node = p.nodes[j];
        w.arg_ptr.clear();
        w.arg_one.clear();
        for (int32_t x : node.args) {
          w.arg_ptr.push_back(x < 0 ? w.in_ptr[size_t(~x)] : w.node_ptr[size_t(x)]);
          w.arg_one.push_back(x < 0 && t.ins[size_t(~x)].scalar);
        }
        w.node_ptr[j] = exec_node(p, plan, j, w.arg_ptr, w.arg_one, buf + t.node_off[j], n, tmp, w.keep);
        if (prefetch) pf.issue(j + 1, nn);
      }
      for (size_t k = 0; k < p.outputs.size(); ++k) {
        const size_t es = dtype_size(p.nodes[size_t(p.outputs[k])].dtype);
        char* dst = t.out_base[k] + b * int64_t(es);
        if (t.out_cached[k]) std::memcpy(dst, w.node_ptr[size_t(p.outputs[k])], size_t(n) * es);
        else stream_copy(dst, w.node_ptr[size_t(p.outputs[k])], size_t(n) * es);
      }
    }
    w.keep.clear();
  }

  // A row program (FusedProgram::reduce_from >= 0): rows are spread over the pool; each row is
  // cut into tiles of at most kRowTile elements (one tile when it fits, so that every full node
  // is computed once per row and stays in cache for the passes after it). Per row: the reduced
  // nodes in order (a reduction folds its operand's tiles, computing the full nodes it needs;
  // an elementwise reduced node runs on one value), then the full outputs, tile by tile.
  //
  // A row program that also reduces leading dims (reduce_to > 0: the kept dims in the middle,
  // BatchNorm's {0, 2, 3}) runs the same way, a "row" being a kept index k: its values are the
  // runs (a, k, 0..B) of every leading index a, each run a tile (or several, past kRowTile), folded
  // in the order of a as the eager kernel folds them.
  std::vector<PrimitivePtr> run_rows(const FusedProgram& p, const Plan& plan, std::vector<PrimitivePtr> inputs) {
    const Shape& shape = p.shape;
    const int rf = p.reduce_from;
    int64_t lead = 1, rows = 1, run = 1;  // A, K, B: [0, reduce_to), [reduce_to, rf), [rf, rank)
    for (int d = 0; d < shape.rank(); ++d) (d < p.reduce_to ? lead : d < rf ? rows : run) *= shape[d];
    const int64_t cols = lead * run;  // the values a row folds
    const size_t nin = inputs.size(), nn = p.nodes.size();

    // who reads what, and at which level
    // in_fill: a one-value input some full reader needs as a tile of copies (the rest read it
    // as one value; a chain with a constant per op would otherwise fill a tile per constant)
    std::vector<char> in_full(nin, 0), in_red(nin, 0), red_fill(nn, 0), in_fill(nin, 0);
    for (size_t j = 0; j < nn; ++j) {
      const auto& node = p.nodes[j];
      const bool full_reader = !node.reduced || plan.runs[j] == NodeRun::reduce;
      for (int32_t x : node.args) {
        if (x < 0) (full_reader ? in_full : in_red)[size_t(~x)] = 1;
        if (x < 0 && full_reader && !one_operand(plan.runs[j])) in_fill[size_t(~x)] = 1;
        else if (full_reader && p.nodes[size_t(x)].reduced && !one_operand(plan.runs[j])) red_fill[size_t(x)] = 1;
      }
    }
    // outputs: a full output may take an input's buffer (as in run()); reduced ones are new
    std::vector<bool> in_reused(nin, false);
    std::vector<CpuTensorPtr> outs = make_outputs(p, inputs, in_reused, {});
    if (rows * cols == 0) return {outs.begin(), outs.end()};

    std::vector<In> ins(nin);
    for (size_t i = 0; i < nin; ++i) {
      const CpuTensor& t = as_cpu(inputs[i]);
      ins[i] = In::of(t, shape, in_reused[i], in_full[i]);
      if (in_red[i] && !ins[i].scalar) ins[i].rstrides = broadcast_strides(t, p.reduced_shape);
    }
    // a broadcast input that is contiguous along the row (a norm's weight) is read in place at
    // the row's offset, not gathered into a tile per row
    // narrow rows (one tile each, no leading dims): R rows to a tile
    const int64_t R = lead == 1 && run <= kRowsTile / 2 ? std::min({kMaxRowsPerTile, kRowsTile / run, rows}) : 1;
    std::vector<char> in_rowwise(nin, 0);
    if (lead == 1 && R == 1)
      for (size_t i = 0; i < nin; ++i) {
        if (!in_full[i] || ins[i].dense || ins[i].scalar) continue;
        bool contiguous = true;
        int64_t expect = 1;
        for (int d = shape.rank() - 1; d >= rf && contiguous; expect *= shape[d], --d)
          contiguous = ins[i].strides[size_t(d)] == expect || shape[d] == 1;
        in_rowwise[i] = contiguous;
      }
    const int64_t T = R > 1 ? R * run : std::min(run, kRowTile), run_tiles = R > 1 ? 1 : (run + T - 1) / T,
                  ntiles = lead * run_tiles;
    // scratch: a tile per gathered input, per full node and per filled reduced value; a slot
    // per reduced node and per input read per row (R of them, kSlot bytes apart)
    constexpr size_t kSlot = 16;
    std::vector<size_t> in_off(nin, SIZE_MAX), in_slot(nin, SIZE_MAX), node_off(nn, SIZE_MAX), fill_off(nn, SIZE_MAX);
    size_t scratch = 0;
    auto take = [&](size_t bytes) {
      size_t o = scratch;
      scratch += round_up(bytes);
      return o;
    };
    for (size_t i = 0; i < nin; ++i) {
      if (in_full[i] && !ins[i].dense && !in_rowwise[i])
        in_off[i] = take(ins[i].scalar && !in_fill[i] ? kSlot : size_t(T) * ins[i].es);
      if (in_red[i]) in_slot[i] = take(size_t(R) * kSlot);
    }
    for (size_t j = 0; j < nn; ++j) {
      const size_t es = dtype_size(p.nodes[j].dtype);
      // (narrow rows: run_row_groups places the full nodes' tiles by liveness)
      node_off[j] = p.nodes[j].reduced ? take(size_t(R) * kSlot) : R > 1 ? SIZE_MAX : take(size_t(T) * es);
      if (red_fill[j]) fill_off[j] = take(size_t(T) * es);
    }
    // the full nodes each reduction (and the output pass) needs, in node order
    auto closure = [&](const std::vector<int32_t>& roots) {
      std::vector<char> need(nn, 0);
      for (int32_t r : roots)
        if (r >= 0 && !p.nodes[size_t(r)].reduced) need[size_t(r)] = 1;
      for (size_t j = nn; j-- > 0;) {
        if (!need[j]) continue;
        for (int32_t x : p.nodes[j].args)
          if (x >= 0 && !p.nodes[size_t(x)].reduced) need[size_t(x)] = 1;
      }
      std::vector<int32_t> list;
      for (size_t j = 0; j < nn; ++j)
        if (need[j]) list.push_back(int32_t(j));
      return list;
    };
    std::vector<std::vector<int32_t>> needs(nn);
    std::vector<int32_t> full_outs;
    for (size_t j = 0; j < nn; ++j)
      if (plan.runs[j] == NodeRun::reduce) needs[j] = closure({p.nodes[j].args[0]});
    for (int32_t o : p.outputs)
      if (!p.nodes[size_t(o)].reduced) full_outs.push_back(o);
    const std::vector<int32_t> out_needs = closure(full_outs);
    int64_t full_nodes = 0;  // computed once per row when the row is one tile
    for (size_t j = 0; j < nn; ++j) full_nodes += !p.nodes[j].reduced;

    if (R > 1) {
      run_row_groups(p, plan, R, rows, run, ins, in_full, in_red, in_fill, in_off, in_slot, node_off, fill_off,
                     scratch, needs, full_outs, out_needs, outs);
      return {outs.begin(), outs.end()};
    }
    parallel_for(0, rows, std::max<int64_t>(1, 32768 / cols), [&](int64_t rb, int64_t re) {
      HalfScratch& tmp = half_scratch(T);
      thread_local std::vector<char> buf_storage;
      if (buf_storage.size() < scratch + kAlign) buf_storage.resize(scratch + kAlign);
      char* buf = reinterpret_cast<char*>(round_up(reinterpret_cast<uintptr_t>(buf_storage.data())));
      for (size_t i = 0; i < nin; ++i)  // one-value inputs read as tiles: filled once
        if (in_off[i] != SIZE_MAX && ins[i].scalar) {
          const int64_t m = in_fill[i] ? T : 1;
          gather(Shape{m}, {0}, ins[i].base, ins[i].es, 0, m, buf + in_off[i]);
        }
      std::vector<const char*> node_ptr(nn), in_ptr(nin), arg_ptr;
      std::vector<char> arg_one, done(nn), filled(nn), loaded(nin);
      std::vector<int64_t> row_off(nin, 0);  // in_rowwise inputs: the row's first element
      std::vector<PrimitivePtr> keep;
      Prefetch pf;
      int64_t computed = 0;
      int64_t tile = -1, b = 0, n = 0;
      auto set_tile = [&](int64_t row, int64_t t) {
        if (t == tile) return;
        tile = t;
        const int64_t a = t / run_tiles, bt = t % run_tiles;
        b = (a * rows + row) * run + bt * T;
        n = std::min(T, run - bt * T);
        keep.clear();
        for (size_t j = 0; j < nn; ++j)
          if (!p.nodes[j].reduced) done[j] = 0;
        std::fill(loaded.begin(), loaded.end(), 0);
      };
      auto input = [&](size_t i) -> const char* {
        if (!loaded[i]) {
          const In& in = ins[i];
          if (in.dense) in_ptr[i] = in.base + b * int64_t(in.es);
          else if (in_rowwise[i]) in_ptr[i] = in.base + (row_off[i] + b % run) * int64_t(in.es);
          else if (in.scalar) in_ptr[i] = buf + in_off[i];
          else {
            gather(shape, in.strides, in.base, in.es, b, n, buf + in_off[i]);
            in_ptr[i] = buf + in_off[i];
          }
          loaded[i] = 1;
        }
        return in_ptr[i];
      };
      // full node j on the current tile
      auto compute = [&](int32_t j) {
        if (done[size_t(j)]) return;
        const auto& node = p.nodes[size_t(j)];
        const bool one_ok = one_operand(plan.runs[size_t(j)]);
        arg_ptr.clear();
        arg_one.clear();
        for (int32_t x : node.args) {
          if (x < 0) {
            arg_ptr.push_back(input(size_t(~x)));
            arg_one.push_back(ins[size_t(~x)].scalar);
          } else if (p.nodes[size_t(x)].reduced) {  // a per-row value
            if (one_ok) {
              arg_ptr.push_back(node_ptr[size_t(x)]);
              arg_one.push_back(1);
            } else {
              char* f = buf + fill_off[size_t(x)];
              if (!filled[size_t(x)]) {
                const size_t es = dtype_size(p.nodes[size_t(x)].dtype);
                for (int64_t e = 0; e < T; ++e) std::memcpy(f + size_t(e) * es, node_ptr[size_t(x)], es);
                filled[size_t(x)] = 1;
              }
              arg_ptr.push_back(f);
              arg_one.push_back(0);
            }
          } else {
            arg_ptr.push_back(node_ptr[size_t(x)]);
            arg_one.push_back(0);
          }
        }
        node_ptr[size_t(j)] = exec_node(p, plan, size_t(j), arg_ptr, arg_one, buf + node_off[size_t(j)], n, tmp, keep);
        done[size_t(j)] = 1;
        pf.issue(size_t(++computed), size_t(full_nodes));
      };
      for (int64_t row = rb; row < re; ++row) {
        tile = -1;
        // the next row of each dense input, a share before each full node of this row
        pf.reset();
        computed = 0;
        if (lead == 1 && row + 1 < rows)
          for (size_t i = 0; i < nin; ++i)
            if (in_full[i] && ins[i].dense) pf.add(ins[i].base, ins[i].es, (row + 1) * run, (row + 2) * run);
        std::fill(filled.begin(), filled.end(), 0);
        for (size_t i = 0; i < nin; ++i) {
          if (!in_rowwise[i]) continue;
          row_off[i] = 0;
          int64_t r = row;
          for (int d = rf - 1; d >= 0; r /= shape[d], --d) row_off[i] += (r % shape[d]) * ins[i].strides[size_t(d)];
        }
        for (size_t i = 0; i < nin; ++i)
          if (in_red[i]) {
            if (ins[i].scalar) std::memcpy(buf + in_slot[i], ins[i].base, ins[i].es);
            else gather(p.reduced_shape, ins[i].rstrides, ins[i].base, ins[i].es, row, 1, buf + in_slot[i]);
          }
        for (size_t j = 0; j < nn; ++j) {
          const auto& node = p.nodes[j];
          if (!node.reduced) continue;
          char* slot = buf + node_off[j];
          if (plan.runs[j] == NodeRun::reduce) {
            const int32_t x = node.args[0];
            const DType dt = arg_dtype(p, x);
            RowAcc acc;
            for (int pass = 0; pass < row_fold_passes(node.kind); ++pass) {
              row_fold_begin(node.kind, pass, acc);
              for (int64_t t = 0; t < ntiles; ++t) {
                set_tile(row, t);
                const char* v;
                if (x < 0) {
                  v = input(size_t(~x));
                } else {
                  for (int32_t k : needs[j]) compute(k);
                  v = node_ptr[size_t(x)];
                }
                row_fold(node.kind, pass, dt, v, n, acc);
              }
              row_fold_end_pass(node.kind, pass, cols, acc);
            }
            row_fold_store(node.kind, std::get<ReduceAttrs>(node.attrs), cols, acc, node.dtype, slot);
          } else {  // one value, from per-row values and inputs
            arg_ptr.clear();
            arg_one.clear();
            for (int32_t x : node.args) {
              arg_ptr.push_back(x < 0 ? buf + in_slot[size_t(~x)] : node_ptr[size_t(x)]);
              arg_one.push_back(1);
            }
            std::vector<PrimitivePtr> hold;
            const char* r = exec_node(p, plan, j, arg_ptr, arg_one, slot, 1, tmp, hold);
            if (r != slot) std::memcpy(slot, r, dtype_size(node.dtype));
          }
          node_ptr[j] = slot;
        }
        // the outputs: per-row values, then the full ones tile by tile
        for (size_t k = 0; k < p.outputs.size(); ++k) {
          const size_t o = size_t(p.outputs[k]);
          if (!p.nodes[o].reduced) continue;
          const size_t es = dtype_size(p.nodes[o].dtype);
          std::memcpy(static_cast<char*>(outs[k]->raw()) + row * int64_t(es), node_ptr[o], es);
        }
        if (full_outs.empty()) continue;
        for (int64_t t = 0; t < ntiles; ++t) {
          set_tile(row, t);
          for (int32_t k : out_needs) compute(k);
          for (size_t k = 0; k < p.outputs.size(); ++k) {
            const size_t o = size_t(p.outputs[k]);
            if (p.nodes[o].reduced) continue;
            const size_t es = dtype_size(p.nodes[o].dtype);
            stream_copy(static_cast<char*>(outs[k]->raw()) + b * int64_t(es), node_ptr[o], size_t(n) * es);
          }
        }
      }
      store_fence();
    });
    return {outs.begin(), outs.end()};
  }

  // A row program over narrow rows (no leading dims, a row of at most kRowsTile / 2 elements):
  // R rows to a tile, so that a node runs once per tile, not once per row. Each full node that
  // reads no per-row value runs once over the tile; one that reads per-row values as one value
  // runs once per row of the tile (as the one-row path runs it); one that needs them filled gets
  // each row's value repeated along the row. Each reduction folds each row of the tile in one
  // run of the row's length, as the one-row path does, and the per-row elementwise nodes run on
  // one value per row. So the results are the one-row path's bits (the eager ones).
  void run_row_groups(const FusedProgram& p, const Plan& plan, int64_t R, int64_t rows, int64_t run,
                      const std::vector<In>& ins, const std::vector<char>& in_full, const std::vector<char>& in_red,
                      const std::vector<char>& in_fill, const std::vector<size_t>& in_off,
                      const std::vector<size_t>& in_slot, const std::vector<size_t>& red_off,
                      const std::vector<size_t>& fill_off, size_t scratch, const std::vector<std::vector<int32_t>>& needs,
                      const std::vector<int32_t>& full_outs, const std::vector<int32_t>& out_needs,
                      const std::vector<CpuTensorPtr>& outs) {
    constexpr size_t kSlot = 16;
    const Shape& shape = p.shape;
    const size_t nin = ins.size(), nn = p.nodes.size();
    const int64_t T = R * run, groups = (rows + R - 1) / R;
    // The full nodes' tiles by liveness, as tiles_of places an elementwise group's, so that a long
    // chain works in a few tiles that stay in cache: the order in which a group computes them is
    // fixed (each reduction's needs in node order, then the outputs'), so a full node takes a free
    // tile when it is computed (never one of its operands', freed after it) and frees those of the
    // values it read last; a reduction frees its operand's after folding it.
    std::vector<size_t> node_off = red_off;
    {
      std::vector<int32_t> steps;  // a full node j computed: j; reduction j folds: ~j
      std::vector<char> seen(nn, 0);
      auto add = [&](const std::vector<int32_t>& list) {
        for (int32_t k : list)
          if (!seen[size_t(k)]) seen[size_t(k)] = 1, steps.push_back(k);
      };
      for (size_t j = 0; j < nn; ++j)
        if (plan.runs[j] == NodeRun::reduce) add(needs[j]), steps.push_back(~int32_t(j));
      add(out_needs);
      std::vector<int64_t> last(nn, -1);
      for (size_t t = 0; t < steps.size(); ++t) {
        const int32_t st = steps[t];
        if (st < 0) {
          const int32_t x = p.nodes[size_t(~st)].args[0];
          if (x >= 0) last[size_t(x)] = int64_t(t);
        } else {
          for (int32_t x : p.nodes[size_t(st)].args)
            if (x >= 0 && !p.nodes[size_t(x)].reduced) last[size_t(x)] = int64_t(t);
        }
      }
      for (int32_t o : p.outputs)
        if (!p.nodes[size_t(o)].reduced) last[size_t(o)] = int64_t(steps.size());
      size_t es_max = 1;
      for (const auto& n : p.nodes) es_max = std::max(es_max, dtype_size(n.dtype));
      const size_t tile = round_up(size_t(T) * es_max);
      std::vector<size_t> free_tiles;
      for (size_t t = 0; t < steps.size(); ++t) {
        const int32_t st = steps[t];
        if (st >= 0) {
          if (free_tiles.empty()) {
            node_off[size_t(st)] = scratch;
            scratch += tile;
          } else {
            node_off[size_t(st)] = free_tiles.back();
            free_tiles.pop_back();
          }
        }
        auto release = [&](int32_t x) {
          if (x >= 0 && !p.nodes[size_t(x)].reduced && last[size_t(x)] == int64_t(t)) {
            last[size_t(x)] = -2;  // (freed once)
            free_tiles.push_back(node_off[size_t(x)]);
          }
        };
        if (st < 0) {
          release(p.nodes[size_t(~st)].args[0]);
        } else {
          for (int32_t x : p.nodes[size_t(st)].args) release(x);
          if (last[size_t(st)] == -1) free_tiles.push_back(node_off[size_t(st)]);  // read by nothing
        }
      }
    }
    // inputs whose tile is the same for every group (a weight broadcast over the rows): gathered
    // once per thread
    std::vector<char> in_same(nin, 0);
    for (size_t i = 0; i < nin; ++i) {
      if (!in_full[i] || ins[i].dense || ins[i].scalar) continue;
      bool same = true;
      for (int d = 0; d < p.reduce_from && same; ++d) same = ins[i].strides[size_t(d)] == 0 || shape[d] == 1;
      in_same[i] = same;
    }
    int64_t full_nodes = 0;
    for (size_t j = 0; j < nn; ++j) full_nodes += !p.nodes[j].reduced;
    parallel_for(0, groups, std::max<int64_t>(1, 32768 / T), [&](int64_t gb, int64_t ge) {
      HalfScratch& tmp = half_scratch(T);
      thread_local std::vector<char> buf_storage;
      if (buf_storage.size() < scratch + kAlign) buf_storage.resize(scratch + kAlign);
      char* buf = reinterpret_cast<char*>(round_up(reinterpret_cast<uintptr_t>(buf_storage.data())));
      for (size_t i = 0; i < nin; ++i) {
        if (in_off[i] == SIZE_MAX) continue;
        if (ins[i].scalar) {
          const int64_t m = in_fill[i] ? T : 1;
          gather(Shape{m}, {0}, ins[i].base, ins[i].es, 0, m, buf + in_off[i]);
        } else if (in_same[i]) gather(shape, ins[i].strides, ins[i].base, ins[i].es, 0, T, buf + in_off[i]);
      }
      std::vector<const char*> node_ptr(nn), in_ptr(nin), arg_ptr;
      std::vector<char> arg_one, done(nn), filled(nn), loaded(nin);
      std::vector<PrimitivePtr> keep;
      Prefetch pf;
      int64_t computed = 0, b = 0, nr = 0;
      auto slot = [&](int32_t x, int64_t r) -> char* {
        return buf + (x < 0 ? in_slot[size_t(~x)] : node_off[size_t(x)]) + size_t(r) * kSlot;
      };
      auto input = [&](size_t i) -> const char* {
        if (!loaded[i]) {
          const In& in = ins[i];
          if (in.dense) in_ptr[i] = in.base + b * int64_t(in.es);
          else if (in.scalar || in_same[i]) in_ptr[i] = buf + in_off[i];
          else {
            gather(shape, in.strides, in.base, in.es, b, nr * run, buf + in_off[i]);
            in_ptr[i] = buf + in_off[i];
          }
          loaded[i] = 1;
        }
        return in_ptr[i];
      };
      // full node j over the group's rows
      auto compute = [&](int32_t j) {
        if (done[size_t(j)]) return;
        const auto& node = p.nodes[size_t(j)];
        const size_t es = dtype_size(node.dtype);
        char* dst = buf + node_off[size_t(j)];
        bool per_row = false;
        for (int32_t x : node.args) per_row = per_row || (x >= 0 && p.nodes[size_t(x)].reduced);
        if (per_row && one_operand(plan.runs[size_t(j)])) {
          // row by row, the per-row values as one value
          for (int64_t r = 0; r < nr; ++r) {
            arg_ptr.clear();
            arg_one.clear();
            for (int32_t x : node.args) {
              if (x < 0) {
                const bool one = ins[size_t(~x)].scalar;
                arg_ptr.push_back(input(size_t(~x)) + (one ? 0 : size_t(r * run) * ins[size_t(~x)].es));
                arg_one.push_back(one);
              } else if (p.nodes[size_t(x)].reduced) {
                arg_ptr.push_back(slot(x, r));
                arg_one.push_back(1);
              } else {
                arg_ptr.push_back(node_ptr[size_t(x)] + size_t(r * run) * dtype_size(p.nodes[size_t(x)].dtype));
                arg_one.push_back(0);
              }
            }
            char* d = dst + size_t(r * run) * es;
            const char* out = exec_node(p, plan, size_t(j), arg_ptr, arg_one, d, run, tmp, keep);
            if (out != d) std::memcpy(d, out, size_t(run) * es);
          }
          node_ptr[size_t(j)] = dst;
        } else {
          arg_ptr.clear();
          arg_one.clear();
          for (int32_t x : node.args) {
            if (x < 0) {
              arg_ptr.push_back(input(size_t(~x)));
              arg_one.push_back(ins[size_t(~x)].scalar);
            } else if (p.nodes[size_t(x)].reduced) {  // filled: each row's value along its row
              char* f = buf + fill_off[size_t(x)];
              const size_t xes = dtype_size(p.nodes[size_t(x)].dtype);
              if (!filled[size_t(x)]) {
                for (int64_t r = 0; r < nr; ++r)
                  for (int64_t e = 0; e < run; ++e) std::memcpy(f + size_t(r * run + e) * xes, slot(x, r), xes);
                filled[size_t(x)] = 1;
              }
              arg_ptr.push_back(f);
              arg_one.push_back(0);
            } else {
              arg_ptr.push_back(node_ptr[size_t(x)]);
              arg_one.push_back(0);
            }
          }
          node_ptr[size_t(j)] = exec_node(p, plan, size_t(j), arg_ptr, arg_one, dst, nr * run, tmp, keep);
        }
        done[size_t(j)] = 1;
        pf.issue(size_t(++computed), size_t(full_nodes));
      };
      for (int64_t g = gb; g < ge; ++g) {
        const int64_t row0 = g * R;
        nr = std::min(R, rows - row0);
        b = row0 * run;
        keep.clear();
        std::fill(done.begin(), done.end(), 0);
        std::fill(filled.begin(), filled.end(), 0);
        std::fill(loaded.begin(), loaded.end(), 0);
        // the next group of each dense input, a share before each full node of this one
        pf.reset();
        computed = 0;
        if (g + 1 < groups)
          for (size_t i = 0; i < nin; ++i)
            if (in_full[i] && ins[i].dense)
              pf.add(ins[i].base, ins[i].es, b + nr * run, std::min(rows, row0 + 2 * R) * run);
        for (size_t i = 0; i < nin; ++i)
          if (in_red[i])
            for (int64_t r = 0; r < nr; ++r) {
              if (ins[i].scalar) std::memcpy(slot(~int32_t(i), r), ins[i].base, ins[i].es);
              else gather(p.reduced_shape, ins[i].rstrides, ins[i].base, ins[i].es, row0 + r, 1, slot(~int32_t(i), r));
            }
        for (size_t j = 0; j < nn; ++j) {
          const auto& node = p.nodes[j];
          if (!node.reduced) continue;
          if (plan.runs[j] == NodeRun::reduce) {
            const int32_t x = node.args[0];
            const DType dt = arg_dtype(p, x);
            const size_t xes = dtype_size(dt);
            const char* v;
            if (x < 0) {
              v = input(size_t(~x));
            } else {
              for (int32_t k : needs[j]) compute(k);
              v = node_ptr[size_t(x)];
            }
            for (int64_t r = 0; r < nr; ++r) {
              RowAcc acc;
              for (int pass = 0; pass < row_fold_passes(node.kind); ++pass) {
                row_fold_begin(node.kind, pass, acc);
                row_fold(node.kind, pass, dt, v + size_t(r * run) * xes, run, acc);
                row_fold_end_pass(node.kind, pass, run, acc);
              }
              row_fold_store(node.kind, std::get<ReduceAttrs>(node.attrs), run, acc, node.dtype, slot(int32_t(j), r));
            }
          } else {  // one value per row, from per-row values and inputs
            for (int64_t r = 0; r < nr; ++r) {
              arg_ptr.clear();
              arg_one.clear();
              for (int32_t x : node.args) {
                arg_ptr.push_back(slot(x, r));
                arg_one.push_back(1);
              }
              std::vector<PrimitivePtr> hold;
              char* d = slot(int32_t(j), r);
              const char* out = exec_node(p, plan, j, arg_ptr, arg_one, d, 1, tmp, hold);
              if (out != d) std::memcpy(d, out, dtype_size(node.dtype));
            }
          }
          node_ptr[j] = slot(int32_t(j), 0);
        }
        // the outputs: per-row values, then the full ones
        for (size_t k = 0; k < p.outputs.size(); ++k) {
          const int32_t o = p.outputs[k];
          if (!p.nodes[size_t(o)].reduced) continue;
          const size_t es = dtype_size(p.nodes[size_t(o)].dtype);
          for (int64_t r = 0; r < nr; ++r)
            std::memcpy(static_cast<char*>(outs[k]->raw()) + (row0 + r) * int64_t(es), slot(o, r), es);
        }
        if (full_outs.empty()) continue;
        for (int32_t k : out_needs) compute(k);
        for (size_t k = 0; k < p.outputs.size(); ++k) {
          const size_t o = size_t(p.outputs[k]);
          if (p.nodes[o].reduced) continue;
          const size_t es = dtype_size(p.nodes[o].dtype);
          stream_copy(static_cast<char*>(outs[k]->raw()) + b * int64_t(es), node_ptr[o], size_t(nr * run) * es);
        }
      }
      store_fence();
    });
  }

  // A column program (FusedProgram::reduce_to > 0): reductions over the leading dims, seen as
  // rows x cols, the reduced values one per column. The rows are folded in sweeps
  // (column_sweeps: a reduction's second pass, or one whose operand reads a finished column
  // value, takes a later sweep). A sweep cuts the domain into column strips and row ranges, the
  // ranges being the eager kernel's per-thread partials (column_partials), so that a column folds
  // its rows in the eager order and gives the eager bits, whatever the strips. A unit (a strip
  // and a range) runs tile by tile (a few rows of the strip): the full nodes the sweep's
  // reductions need are computed on the tile and never stored, and each row of the tile is folded
  // into the range's accumulators (a double per column). The ranges' partials then merge in
  // order (so the result does not depend on which thread ran what), each column ends its pass,
  // and the per-column elementwise nodes (the epilogue) run over the columns. Full outputs, if
  // any, take one more sweep.
  // `pinned`: inputs whose buffers no output may take (a matmul program's returned product).
  std::vector<PrimitivePtr> run_cols(const FusedProgram& p, const Plan& plan, std::vector<PrimitivePtr> inputs,
                                     const std::vector<bool>& pinned = {}) {
    const Shape& shape = p.shape;
    int64_t rows = 1, cols = 1;
    for (int d = 0; d < shape.rank(); ++d) (d < p.reduce_to ? rows : cols) *= shape[d];
    const size_t nin = inputs.size(), nn = p.nodes.size();
    std::vector<char> in_full(nin, 0), in_red(nin, 0), red_fill(nn, 0);
    for (size_t j = 0; j < nn; ++j) {
      const auto& node = p.nodes[j];
      const bool full_reader = !node.reduced || plan.runs[j] == NodeRun::reduce;
      for (int32_t x : node.args) {
        if (x < 0)
          (full_reader ? in_full : in_red)[size_t(~x)] = 1;
        else if (full_reader && p.nodes[size_t(x)].reduced)
          red_fill[size_t(x)] = 1;
      }
    }
    const ColumnSweeps sw = column_sweeps(p);
    std::vector<size_t> early_outs, late_outs;  // full outputs: stored with the first sweep, after the last
    for (size_t k = 0; k < p.outputs.size(); ++k) {
      const size_t o = size_t(p.outputs[k]);
      if (!p.nodes[o].reduced) (sw.first[o] == 0 && sw.count > 0 && rows > 0 ? early_outs : late_outs).push_back(k);
    }
    // an output may take an input's buffer only when nothing reads the input after it is stored
    // (one sweep, run as one pass over the domain: its reductions split the rows alike)
    std::vector<bool> in_reused(nin, false);
    bool reuse = sw.count <= 1 && late_outs.empty();
    int64_t split = -1;
    for (size_t j = 0; j < nn && reuse; ++j) {
      if (plan.runs[j] != NodeRun::reduce) continue;
      const int64_t c = column_partials(p.nodes[j].kind, 0, arg_dtype(p, p.nodes[j].args[0]), rows, cols);
      reuse = split < 0 || split == c;
      split = c;
    }
    std::vector<CpuTensorPtr> outs = make_outputs(p, inputs, in_reused, reuse ? pinned : std::vector<bool>(nin, true));
    if (cols == 0) return {outs.begin(), outs.end()};
    std::vector<In> ins(nin);
    for (size_t i = 0; i < nin; ++i) {
      const CpuTensor& t = as_cpu(inputs[i]);
      ins[i] = In::of(t, shape, in_reused[i], false);
      if (in_full[i] && !ins[i].scalar) ins[i].strides = broadcast_strides(t, shape);
      if (in_red[i] && !ins[i].scalar) ins[i].rstrides = broadcast_strides(t, p.reduced_shape);
    }
    // the per-column values: `cols` of each reduced node, in its output's buffer when it is one
    std::vector<char*> col_val(nn, nullptr);
    std::vector<std::vector<char>> col_store(nn);
    for (size_t k = 0; k < p.outputs.size(); ++k) {
      const size_t o = size_t(p.outputs[k]);
      if (p.nodes[o].reduced && !col_val[o]) col_val[o] = static_cast<char*>(outs[k]->raw());
    }
    for (size_t j = 0; j < nn; ++j)
      if (p.nodes[j].reduced && !col_val[j]) {
        col_store[j].resize(size_t(cols) * dtype_size(p.nodes[j].dtype));
        col_val[j] = col_store[j].data();
      }
    auto closure = [&](const std::vector<int32_t>& roots) {  // the full nodes roots need, in order
      std::vector<char> need(nn, 0);
      for (int32_t r : roots)
        if (r >= 0 && !p.nodes[size_t(r)].reduced) need[size_t(r)] = 1;
      for (size_t j = nn; j-- > 0;)
        if (need[j])
          for (int32_t x : p.nodes[j].args)
            if (x >= 0 && !p.nodes[size_t(x)].reduced) need[size_t(x)] = 1;
      std::vector<int32_t> list;
      for (size_t j = 0; j < nn; ++j)
        if (need[j]) list.push_back(int32_t(j));
      return list;
    };

    // scratch of a tile: a buffer per input read at the full level, per full node and per
    // per-column value a full node reads (its strip repeated over the tile's rows)
    const int nt = ThreadPool::global().size();
    const int64_t wmax = std::min(cols, kRowTile), tile_n = std::max(kTile, wmax);
    std::vector<size_t> in_off(nin, SIZE_MAX), node_off(nn, SIZE_MAX), fill_off(nn, SIZE_MAX);
    size_t scratch = 0;
    auto take = [&](size_t bytes) {
      const size_t o = scratch;
      scratch += round_up(bytes);
      return o;
    };
    for (size_t i = 0; i < nin; ++i)
      if (in_full[i] || in_red[i]) in_off[i] = take(size_t(tile_n) * ins[i].es);
    for (size_t j = 0; j < nn; ++j) {
      const size_t es = dtype_size(p.nodes[j].dtype);
      if (!p.nodes[j].reduced) node_off[j] = take(size_t(tile_n) * es);
      if (red_fill[j]) fill_off[j] = take(size_t(tile_n) * es);
    }
    struct Fold {  // one reduction's pass in a sweep
      size_t node;
      int pass;
      int32_t x;  // its operand
      DType dt;   // the operand's
      double* part;
      const double* prev;
    };
    // Runs the tiles of rows [rb, re) x columns [c0, c0 + ws) on this thread: computes `needs`,
    // folds each row into the folds' partial `chunk`, and stores the full outputs `store`.
    auto run_unit = [&](const std::vector<int32_t>& needs, const std::vector<char>& use_in,
                        const std::vector<char>& use_fill, const std::vector<Fold>& folds,
                        const std::vector<size_t>& store, int64_t c0, int64_t ws, int64_t rb, int64_t re,
                        int64_t chunk) {
      HalfScratch& tmp = half_scratch(tile_n);
      thread_local std::vector<char> storage;
      if (storage.size() < scratch + kAlign) storage.resize(scratch + kAlign);
      char* buf = reinterpret_cast<char*>(round_up(reinterpret_cast<uintptr_t>(storage.data())));
      const int64_t tr = std::max<int64_t>(1, kTile / ws);
      for (size_t i = 0; i < nin; ++i)  // one-value inputs: a tile of copies
        if (in_off[i] != SIZE_MAX && ins[i].scalar)
          gather(Shape{tile_n}, {0}, ins[i].base, ins[i].es, 0, tile_n, buf + in_off[i]);
      for (size_t j = 0; j < nn; ++j)  // per-column values a full node reads: the strip, tr times
        if (use_fill[j]) {
          const size_t es = dtype_size(p.nodes[j].dtype);
          for (int64_t r = 0; r < std::min(tr, re - rb); ++r)
            std::memcpy(buf + fill_off[j] + size_t(r * ws) * es, col_val[j] + size_t(c0) * es, size_t(ws) * es);
        }
      std::vector<const char*> node_ptr(nn), in_ptr(nin), arg_ptr;
      std::vector<char> arg_one;
      std::vector<PrimitivePtr> keep;
      for (int64_t r0 = rb; r0 < re; r0 += tr) {
        const int64_t nr = std::min(tr, re - r0), n = nr * ws;
        for (size_t i = 0; i < nin; ++i) {
          if (!use_in[i]) continue;
          const In& in = ins[i];
          if (in.scalar) {
            in_ptr[i] = buf + in_off[i];
          } else if (in.dense && ws == cols) {
            in_ptr[i] = in.base + r0 * cols * int64_t(in.es);
          } else if (ws == cols) {
            gather(shape, in.strides, in.base, in.es, r0 * cols, n, buf + in_off[i]);
            in_ptr[i] = buf + in_off[i];
          } else {
            for (int64_t r = 0; r < nr; ++r)
              gather(shape, in.strides, in.base, in.es, (r0 + r) * cols + c0, ws,
                     buf + in_off[i] + size_t(r * ws) * in.es);
            in_ptr[i] = buf + in_off[i];
          }
        }
        keep.clear();
        for (int32_t j : needs) {
          const auto& node = p.nodes[size_t(j)];
          arg_ptr.clear();
          arg_one.clear();
          for (int32_t x : node.args) {
            if (x < 0) {
              arg_ptr.push_back(in_ptr[size_t(~x)]);
              arg_one.push_back(ins[size_t(~x)].scalar);
            } else {
              arg_ptr.push_back(p.nodes[size_t(x)].reduced ? buf + fill_off[size_t(x)] : node_ptr[size_t(x)]);
              arg_one.push_back(0);
            }
          }
          node_ptr[size_t(j)] =
              exec_node(p, plan, size_t(j), arg_ptr, arg_one, buf + node_off[size_t(j)], n, tmp, keep);
        }
        for (const Fold& f : folds) {
          const char* v = f.x < 0 ? in_ptr[size_t(~f.x)] : node_ptr[size_t(f.x)];
          const size_t es = dtype_size(f.dt);
          double* acc = f.part + chunk * cols + c0;
          for (int64_t r = 0; r < nr; ++r)
            col_fold(p.nodes[f.node].kind, f.pass, f.dt, v + size_t(r * ws) * es, ws, acc,
                     f.prev ? f.prev + c0 : nullptr);
        }
        for (size_t k : store) {
          const size_t o = size_t(p.outputs[k]);
          const size_t es = dtype_size(p.nodes[o].dtype);
          char* dst = static_cast<char*>(outs[k]->raw());
          if (ws == cols) {
            stream_copy(dst + size_t(r0 * cols) * es, node_ptr[o], size_t(n) * es);
          } else {
            for (int64_t r = 0; r < nr; ++r)
              stream_copy(dst + size_t((r0 + r) * cols + c0) * es, node_ptr[o] + size_t(r * ws) * es, size_t(ws) * es);
          }
        }
      }
      if (!store.empty()) store_fence();
    };
    // A sweep: `chunks` row ranges times column strips (narrow enough to give every thread work)
    auto sweep = [&](const std::vector<int32_t>& needs, const std::vector<Fold>& folds,
                     const std::vector<size_t>& store, int64_t chunks) {
      std::vector<char> use_in(nin, 0), use_fill(nn, 0);  // what the tiles read
      auto uses = [&](int32_t x) {
        if (x < 0)
          use_in[size_t(~x)] = 1;
        else if (p.nodes[size_t(x)].reduced)
          use_fill[size_t(x)] = 1;
      };
      for (int32_t j : needs)
        for (int32_t x : p.nodes[size_t(j)].args) uses(x);
      for (const Fold& f : folds) uses(f.x);
      const bool serial = rows * cols <= kTile * 8 || nt == 1;
      int64_t w = wmax;
      if (!serial) {
        // strips wanted: one per thread the row ranges leave idle (a strip narrower than the
        // domain's rows is gathered row by row; a full-width one is read in place)
        const int64_t want = std::max<int64_t>(1, (nt + chunks - 1) / chunks);
        w = std::min(w, std::max<int64_t>(64, (cols + want - 1) / want));
      }
      const int64_t strips = (cols + w - 1) / w, units = strips * chunks;
      auto body = [&](int64_t ub, int64_t ue) {
        for (int64_t u = ub; u < ue; ++u) {
          const int64_t chunk = u / strips, c0 = (u % strips) * w;
          run_unit(needs, use_in, use_fill, folds, store, c0, std::min(w, cols - c0), rows * chunk / chunks,
                   rows * (chunk + 1) / chunks, chunk);
        }
      };
      if (serial)
        body(0, units);
      else
        parallel_for(0, units, 1, body);
    };

    // the per-column elementwise nodes whose operands are ready after `done` sweeps
    std::vector<char> computed(nn, 0);
    auto column_nodes = [&](int done, const ColumnSweeps& sw) {
      HalfScratch& tmp = half_scratch(tile_n);
      std::vector<char> local(scratch + kAlign);
      char* buf = reinterpret_cast<char*>(round_up(reinterpret_cast<uintptr_t>(local.data())));
      std::vector<const char*> arg_ptr;
      std::vector<char> arg_one;
      std::vector<PrimitivePtr> keep;
      for (size_t j = 0; j < nn; ++j) {
        const auto& node = p.nodes[j];
        if (!node.reduced || plan.runs[j] == NodeRun::reduce || computed[j] || sw.ready(p, j) > done) continue;
        const size_t es = dtype_size(node.dtype);
        for (int64_t c = 0; c < cols; c += tile_n) {
          const int64_t n = std::min(tile_n, cols - c);
          arg_ptr.clear();
          arg_one.clear();
          keep.clear();
          for (int32_t x : node.args) {
            if (x >= 0) {
              arg_ptr.push_back(col_val[size_t(x)] + size_t(c) * dtype_size(p.nodes[size_t(x)].dtype));
              arg_one.push_back(0);
              continue;
            }
            const In& in = ins[size_t(~x)];
            char* b = buf + in_off[size_t(~x)];
            if (in.scalar)
              gather(Shape{n}, {0}, in.base, in.es, 0, n, b);
            else
              gather(p.reduced_shape, in.rstrides, in.base, in.es, c, n, b);
            arg_ptr.push_back(b);
            arg_one.push_back(in.scalar);
          }
          char* dst = col_val[j] + size_t(c) * es;
          const char* r = exec_node(p, plan, j, arg_ptr, arg_one, dst, n, tmp, keep);
          if (r != dst) std::memcpy(dst, r, size_t(n) * es);
        }
        computed[j] = 1;
      }
    };

    column_nodes(0, sw);
    std::vector<std::vector<double>> part(nn), prev(nn);
    for (int s = 0; s < sw.count; ++s) {
      // the reductions' passes of this sweep, by their row ranges
      std::vector<std::pair<int64_t, Fold>> items;
      for (size_t j = 0; j < nn; ++j) {
        if (plan.runs[j] != NodeRun::reduce) continue;
        const int pass = s - sw.first[j];
        if (pass < 0 || pass >= row_fold_passes(p.nodes[j].kind)) continue;
        const int32_t x = p.nodes[j].args[0];
        const DType dt = arg_dtype(p, x);
        const int64_t chunks = column_partials(p.nodes[j].kind, pass, dt, rows, cols);
        part[j].assign(size_t(chunks * cols), col_fold_init(p.nodes[j].kind, pass));
        items.push_back({chunks, Fold{j, pass, x, dt, part[j].data(), pass > 0 ? prev[j].data() : nullptr}});
      }
      std::vector<char> swept(items.size(), 0);
      for (size_t a = 0; a < items.size(); ++a) {
        if (swept[a]) continue;
        std::vector<Fold> folds;
        std::vector<int32_t> roots;
        for (size_t b = a; b < items.size(); ++b)
          if (!swept[b] && items[b].first == items[a].first) {
            folds.push_back(items[b].second);
            roots.push_back(items[b].second.x);
            swept[b] = 1;
          }
        // the first sweep also stores the full outputs that read no per-column value (the
        // gradient a bias gradient sums, when the matmuls after read it too)
        std::vector<size_t> store;
        if (s == 0 && a == 0) store.swap(early_outs);
        for (size_t k : store) roots.push_back(p.outputs[k]);
        sweep(closure(roots), folds, store, items[a].first);
      }
      // merge the partials in order, end the pass, store the finished columns
      for (const auto& [chunks, f] : items) {
        const auto& node = p.nodes[f.node];
        const bool last = f.pass + 1 == row_fold_passes(node.kind);
        if (!last) prev[f.node].resize(size_t(cols));
        const size_t es = dtype_size(node.dtype);
        for (int64_t c = 0; c < cols; ++c) {
          RowAcc acc{f.part[c], f.prev ? f.prev[c] : 0.0};
          for (int64_t k = 1; k < chunks; ++k) col_combine(node.kind, f.pass, acc.acc, f.part[k * cols + c]);
          row_fold_end_pass(node.kind, f.pass, rows, acc);
          if (last)
            row_fold_store(node.kind, std::get<ReduceAttrs>(node.attrs), rows, acc, node.dtype,
                           col_val[f.node] + size_t(c) * es);
          else
            prev[f.node][size_t(c)] = acc.acc;
        }
      }
      column_nodes(s + 1, sw);
    }
    late_outs.insert(late_outs.end(), early_outs.begin(), early_outs.end());  // (none when a sweep took them)
    std::vector<int32_t> late_roots;
    for (size_t k : late_outs) late_roots.push_back(p.outputs[k]);
    if (!late_outs.empty() && rows > 0)
      sweep(closure(late_roots), {}, late_outs, std::max<int64_t>(1, std::min<int64_t>(rows, 4 * nt)));
    return {outs.begin(), outs.end()};
  }

  // Whether a node's run reads a one-value operand as one value (else it needs a filled tile).
  static bool one_operand(NodeRun r) {
    return r == NodeRun::binary_scalar_f32 || r == NodeRun::scalar_binary_f32 || r == NodeRun::generic;
  }

 private:
  // Runs node j of `p` over n elements: arguments at arg[a] (one value where one[a]), result in
  // dst (or in a buffer kept alive in `keep`, whose pointer is returned).
  const char* exec_node(const FusedProgram& p, const Plan& plan, size_t j, const std::vector<const char*>& arg,
                        const std::vector<char>& one, char* dst, int64_t n, HalfScratch& tmp,
                        std::vector<PrimitivePtr>& keep) {
    const FusedProgram::Node& node = p.nodes[j];
    float* fa = tmp.a;
    float* fb = tmp.b;
    float* fy = tmp.y;
    bool done = false;
    switch (plan.runs[j]) {
      case NodeRun::unary_f32:
        done = simd::unary_block_f32(plan.ops[j], reinterpret_cast<const float*>(arg[0]), reinterpret_cast<float*>(dst), n);
        break;
      case NodeRun::binary_f32:
        done = simd::binary_block_f32(plan.ops[j], reinterpret_cast<const float*>(arg[0]),
                                      reinterpret_cast<const float*>(arg[1]), reinterpret_cast<float*>(dst), n);
        break;
      case NodeRun::binary_scalar_f32:
        done = simd::binary_scalar_block_f32(plan.ops[j], reinterpret_cast<const float*>(arg[0]),
                                             *reinterpret_cast<const float*>(arg[1]), reinterpret_cast<float*>(dst), n);
        break;
      case NodeRun::scalar_binary_f32:
        done = simd::scalar_binary_block_f32(plan.ops[j], *reinterpret_cast<const float*>(arg[0]),
                                             reinterpret_cast<const float*>(arg[1]), reinterpret_cast<float*>(dst), n);
        break;
      case NodeRun::unary_half:
      case NodeRun::binary_half: {
        const DType hd = node.dtype;
        const bool unary = plan.runs[j] == NodeRun::unary_half;
        done = simd::cast(hd, DType::f32, arg[0], fa, n) && (unary || simd::cast(hd, DType::f32, arg[1], fb, n)) &&
               (unary ? simd::unary_block_f32(plan.ops[j], fa, fy, n) : simd::binary_block_f32(plan.ops[j], fa, fb, fy, n)) &&
               simd::cast(DType::f32, hd, fy, dst, n);
        break;
      }
      case NodeRun::cast_simd:
        done = simd::cast(arg_dtype(p, node.args[0]), node.dtype, arg[0], dst, n);
        break;
      case NodeRun::generic:
        break;
      case NodeRun::reduce:
        EMBER_CHECK(false, "fused group: reduction node t", j, " run as an elementwise node");
    }
    if (done) return dst;
    std::vector<PrimitivePtr> views;
    views.reserve(node.args.size());
    for (size_t a = 0; a < node.args.size(); ++a) {
      DType dt = arg_dtype(p, node.args[a]);
      // a one-value operand stays one value ([1]), as the eager op saw it: its kernel takes the
      // same paths (pow's scalar-exponent fast paths round differently)
      const int64_t m = one[a] ? 1 : n;
      auto st = std::make_shared<Storage>(arg[a], size_t(m) * dtype_size(dt), borrowed());
      views.push_back(std::make_shared<CpuTensor>(TensorMeta{Shape{m}, dt}, std::move(st), ShapeDims{1}, 0));
    }
    PrimitivePtr r = be_.execute(make_op(node.kind, std::move(views), node.attrs))[0];
    const CpuTensor& rt = as_cpu(r);
    if (rt.numel() == 1 && n != 1) {  // every operand one value: the value repeated
      const size_t es = dtype_size(node.dtype);
      for (int64_t i = 0; i < n; ++i) std::memcpy(dst + size_t(i) * es, rt.raw(), es);
      return dst;
    }
    if (!rt.is_contiguous()) {  // (rare) a non-contiguous result is packed
      auto c = contiguous(r);
      std::memcpy(dst, c->raw(), size_t(n) * dtype_size(node.dtype));
      return dst;
    }
    const char* out = static_cast<const char*>(rt.raw());
    keep.push_back(std::move(r));
    return out;
  }

  // A node as an Op for the vector-kernel lookups (which read kind and attributes only).
  static Op op_of(const FusedProgram::Node& n) { return Op{n.kind, {}, n.attrs, {}}; }

  std::shared_ptr<const Plan> plan_of(const FusedProgram& p) {
    std::string key = p.signature();
    std::lock_guard<std::mutex> lock(mu_);
    auto it = plans_.find(key);
    if (it != plans_.end()) return it->second;
    auto plan = std::make_shared<Plan>();
    for (size_t j = 0; j < p.nodes.size(); ++j) {
      const auto& n = p.nodes[j];
      if (op_info(n.kind).family == OpFamily::Reduce) {
        plan->runs.push_back(NodeRun::reduce);
        plan->ops.push_back(op_of(n));
        continue;
      }
      auto dt_of = [&](int32_t x) { return x < 0 ? p.inputs[size_t(~x)].dtype : p.nodes[size_t(x)].dtype; };
      bool all_f32 = n.dtype == DType::f32;
      for (int32_t a : n.args) all_f32 = all_f32 && dt_of(a) == DType::f32;
      bool all_half = n.dtype == DType::f16 || n.dtype == DType::bf16;
      for (int32_t a : n.args) all_half = all_half && dt_of(a) == n.dtype;
      NodeRun r = NodeRun::generic;
      std::vector<float> probe_in(1, 1.0f), probe_out(1);
      if (n.kind == OpKind::cast && n.args.size() == 1) {
        DType from = dt_of(n.args[0]), to = n.dtype;
        bool pair = (from == DType::f32 && (to == DType::f16 || to == DType::bf16)) ||
                    (to == DType::f32 && (from == DType::f16 || from == DType::bf16));
        if (pair) r = NodeRun::cast_simd;
      } else if (all_half && n.args.size() == 1 && simd::unary_block_f32(op_of(n), probe_in.data(), probe_out.data(), 0)) {
        r = NodeRun::unary_half;
      } else if (all_half && n.args.size() == 2 &&
                 simd::binary_block_f32(op_of(n), probe_in.data(), probe_in.data(), probe_out.data(), 0)) {
        r = NodeRun::binary_half;
      } else if (all_f32 && n.args.size() == 1 && simd::unary_block_f32(op_of(n), probe_in.data(), probe_out.data(), 0)) {
        r = NodeRun::unary_f32;
      } else if (all_f32 && n.args.size() == 2 &&
                 simd::binary_block_f32(op_of(n), probe_in.data(), probe_in.data(), probe_out.data(), 0)) {
        // as the eager kernel: a one-value operand whose shape is not the output's is a
        // broadcast value (b first), anything else a full operand
        // (in a row program, a full node's per-row operand is one value too)
        // (in a column program a per-column value varies along the row: a full operand)
        auto one_value = [&](int32_t x) {
          if (x >= 0) return p.is_rows() && p.nodes[size_t(x)].reduced && !n.reduced;
          return p.inputs[size_t(~x)].shape.numel() == 1 && p.inputs[size_t(~x)].shape != p.node_shape(j);
        };
        r = one_value(n.args[1])   ? NodeRun::binary_scalar_f32
            : one_value(n.args[0]) ? NodeRun::scalar_binary_f32
                                   : NodeRun::binary_f32;
      }
      plan->runs.push_back(r);
      plan->ops.push_back(op_of(n));
    }
    plans_.emplace(std::move(key), plan);
    return plan;
  }

  CpuBackend& be_;
  std::mutex mu_;
  std::unordered_map<std::string, std::shared_ptr<const Plan>> plans_;
};

}  // namespace

std::unique_ptr<FusedKernels> make_fused_kernels(CpuBackend& be) { return std::make_unique<CpuFusedKernels>(be); }

}  // namespace ember::cpu
