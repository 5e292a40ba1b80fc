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
#include <cstring>
#include <emmintrin.h>
#include <mutex>
#include <unordered_map>

#include "cpu_backend.hpp"
#include "elementwise_simd.hpp"
#include "ember/core/error.hpp"
#include "thread_pool.hpp"

namespace ember::cpu {

namespace {

constexpr int64_t kTile = 2048;  // elements per tile: an f32 buffer is 8 KiB
constexpr size_t kAlign = 64;
constexpr int kMaxFusedRank = 64;

size_t round_up(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

// How a node runs, decided once per program signature.
// binary_scalar_f32 / scalar_binary_f32: the second / first operand is a one-value input that
// the eager op would see as a broadcast value (its shape is not the domain's).
// unary_half / binary_half: f16 or bf16 in and out, computed as the eager kernels do: widened
// to float, the float vector kernel, rounded back.
enum class NodeRun : uint8_t {
  unary_f32, binary_f32, binary_scalar_f32, scalar_binary_f32, unary_half, binary_half, cast_simd, generic
};

struct Plan {
  std::vector<NodeRun> runs;
  std::vector<Op> ops;  // each node as an Op (kind and attributes) for the vector-kernel lookups
};

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

// dst[0, bytes) = src[0, bytes) with non-temporal stores where dst is 16-byte aligned: an
// output is written once and not read by this group again, so its lines need not be read into
// the cache first (as the eager kernels' large stores do), which saves a third of the traffic.
inline void stream_copy(char* dst, const char* src, size_t bytes) {
  size_t i = 0;
  if (reinterpret_cast<uintptr_t>(dst) % 16 == 0) {
    for (; i + 16 <= bytes; i += 16)
      _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i), _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i)));
  }
  if (i < bytes) std::memcpy(dst + i, src + i, bytes - i);
}

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

class CpuFusedKernels final : public FusedKernels {
 public:
  explicit CpuFusedKernels(CpuBackend& be) : be_(be) {}

  bool can_fuse(const Op& op) const override {
    if (!is_elementwise(op.info().family) || op.outputs.size() != 1 || !be_.supports(op)) return false;
    // integer division by zero raises at the op in eager mode: those stay eager
    switch (op.kind) {
      case OpKind::div: case OpKind::remainder: case OpKind::fmod:
        return is_float(op.outputs[0].dtype);
      default:
        return true;
    }
  }

  std::string kernel_name(const FusedProgram&) const override { return "cpu_fused_tiles"; }

  std::vector<PrimitivePtr> run(const FusedProgram& p, std::vector<PrimitivePtr> inputs) override {
    EMBER_CHECK(inputs.size() == p.inputs.size(), "fused group: ", inputs.size(), " inputs for ", p.inputs.size());
    EMBER_CHECK(p.shape.rank() <= kMaxFusedRank, "fused group: rank ", p.shape.rank(), " is above ", kMaxFusedRank);
    std::shared_ptr<const Plan> plan = plan_of(p);
    const Shape& shape = p.shape;
    const int64_t total = shape.numel();
    const size_t nin = inputs.size(), nn = p.nodes.size();

    // outputs: an input's buffer when the call holds it alone (same bytes, dense), else new
    std::vector<CpuTensorPtr> outs;
    std::vector<bool> in_reused(nin, false);
    for (int32_t o : p.outputs) {
      TensorMeta meta{shape, p.nodes[size_t(o)].dtype};
      CpuTensorPtr out;
      for (size_t i = 0; i < nin && !out; ++i) {
        if (in_reused[i] || inputs[i].use_count() != 1) continue;
        const CpuTensor& t = as_cpu(inputs[i]);
        if (t.storage.use_count() == 1 && t.storage->writable() && t.is_contiguous() && t.offset == 0 &&
            t.shape() == shape && dtype_size(t.dtype()) == dtype_size(meta.dtype) &&
            t.storage->bytes == size_t(total) * dtype_size(meta.dtype)) {
          out = std::make_shared<CpuTensor>(meta, t.storage, contiguous_strides(shape), 0);
          in_reused[i] = true;
        }
      }
      outs.push_back(out ? out : alloc(meta));
    }
    if (total == 0) return {outs.begin(), outs.end()};

    // per input: read in place (dense, not reused), a scalar, or gathered through strides
    struct In {
      const char* base;
      size_t es;
      bool dense, scalar;
      std::vector<int64_t> strides;
    };
    std::vector<In> ins(nin);
    for (size_t i = 0; i < nin; ++i) {
      const CpuTensor& t = as_cpu(inputs[i]);
      In& in = ins[i];
      in.base = static_cast<const char*>(t.raw());
      in.es = dtype_size(t.dtype());
      in.scalar = t.numel() == 1;
      in.dense = !in.scalar && !in_reused[i] && t.shape() == shape && t.is_contiguous();
      if (!in.dense && !in.scalar) in.strides = broadcast_strides(t, shape);
    }
    // scratch layout: one kTile buffer per gathered/scalar input and per node
    std::vector<size_t> in_off(nin, SIZE_MAX), node_off(nn);
    size_t scratch = 0;
    for (size_t i = 0; i < nin; ++i)
      if (!ins[i].dense) {
        in_off[i] = scratch;
        scratch += round_up(size_t(kTile) * ins[i].es);
      }
    for (size_t j = 0; j < nn; ++j) {
      node_off[j] = scratch;
      scratch += round_up(size_t(kTile) * dtype_size(p.nodes[j].dtype));
    }

    const int64_t ntiles = (total + kTile - 1) / kTile;
    parallel_for(0, ntiles, 4, [&](int64_t tb, int64_t te) {
      thread_local std::vector<float> half_scratch;  // the float blocks of f16/bf16 nodes
      if (half_scratch.size() < size_t(3 * kTile)) half_scratch.resize(size_t(3 * kTile));
      float* fa = half_scratch.data();
      float* fb = fa + kTile;
      float* fy = fb + kTile;
      thread_local std::vector<char> buf_storage;
      if (buf_storage.size() < scratch + kAlign) buf_storage.resize(scratch + kAlign);
      char* buf = reinterpret_cast<char*>(round_up(reinterpret_cast<uintptr_t>(buf_storage.data())));
      // scalars: fill their buffers once
      for (size_t i = 0; i < nin; ++i)
        if (ins[i].scalar) gather(Shape{kTile}, {0}, ins[i].base, ins[i].es, 0, kTile, buf + in_off[i]);
      std::vector<const char*> in_ptr(nin);
      std::vector<PrimitivePtr> keep;  // generic nodes' results, alive until the tile ends
      std::vector<const char*> node_ptr(nn);
      for (int64_t t = tb; t < te; ++t) {
        const int64_t b = t * kTile, n = std::min(kTile, total - b);
        for (size_t i = 0; i < nin; ++i) {
          const In& in = ins[i];
          if (in.dense) {
            in_ptr[i] = in.base + b * int64_t(in.es);
          } else if (in.scalar) {
            in_ptr[i] = buf + in_off[i];
          } else {
            gather(shape, in.strides, in.base, in.es, b, n, buf + in_off[i]);
            in_ptr[i] = buf + in_off[i];
          }
        }
        keep.clear();
        for (size_t j = 0; j < nn; ++j) {
          const FusedProgram::Node& node = p.nodes[j];
          auto arg = [&](size_t a) -> const char* {
            int32_t x = node.args[a];
            return x < 0 ? in_ptr[size_t(~x)] : node_ptr[size_t(x)];
          };
          // every node computes into its tile buffer; outputs are streamed out below
          char* dst = buf + node_off[j];
          bool done = false;
          switch (plan->runs[j]) {
            case NodeRun::unary_f32:
              done = simd::unary_block_f32(plan->ops[j], reinterpret_cast<const float*>(arg(0)),
                                           reinterpret_cast<float*>(dst), n);
              break;
            case NodeRun::binary_f32:
              done = simd::binary_block_f32(plan->ops[j], reinterpret_cast<const float*>(arg(0)),
                                            reinterpret_cast<const float*>(arg(1)), reinterpret_cast<float*>(dst), n);
              break;
            case NodeRun::binary_scalar_f32:
              done = simd::binary_scalar_block_f32(plan->ops[j], reinterpret_cast<const float*>(arg(0)),
                                                   *reinterpret_cast<const float*>(arg(1)),
                                                   reinterpret_cast<float*>(dst), n);
              break;
            case NodeRun::scalar_binary_f32:
              done = simd::scalar_binary_block_f32(plan->ops[j], *reinterpret_cast<const float*>(arg(0)),
                                                   reinterpret_cast<const float*>(arg(1)),
                                                   reinterpret_cast<float*>(dst), n);
              break;
            case NodeRun::unary_half:
            case NodeRun::binary_half: {
              const DType hd = node.dtype;
              const bool unary = plan->runs[j] == NodeRun::unary_half;
              done = simd::cast(hd, DType::f32, arg(0), fa, n) && (unary || simd::cast(hd, DType::f32, arg(1), fb, n)) &&
                     (unary ? simd::unary_block_f32(plan->ops[j], fa, fy, n)
                            : simd::binary_block_f32(plan->ops[j], fa, fb, fy, n)) &&
                     simd::cast(DType::f32, hd, fy, dst, n);
              break;
            }
            case NodeRun::cast_simd: {
              int32_t x = node.args[0];
              DType from = x < 0 ? p.inputs[size_t(~x)].dtype : p.nodes[size_t(x)].dtype;
              done = simd::cast(from, node.dtype, arg(0), dst, n);
              break;
            }
            case NodeRun::generic:
              break;
          }
          if (!done) {
            std::vector<PrimitivePtr> views;
            views.reserve(node.args.size());
            for (size_t a = 0; a < node.args.size(); ++a) {
              int32_t x = node.args[a];
              DType dt = x < 0 ? p.inputs[size_t(~x)].dtype : p.nodes[size_t(x)].dtype;
              // a one-value input stays one value ([1]), as the eager op saw it: its kernel
              // takes the same paths (pow's scalar-exponent fast paths round differently)
              const bool one = x < 0 && ins[size_t(~x)].scalar;
              const int64_t m = one ? 1 : n;
              auto st = std::make_shared<Storage>(arg(a), size_t(m) * dtype_size(dt), borrowed());
              views.push_back(std::make_shared<CpuTensor>(TensorMeta{Shape{m}, dt}, std::move(st), ShapeDims{1}, 0));
            }
            PrimitivePtr r = be_.execute(make_op(node.kind, std::move(views), node.attrs))[0];
            const CpuTensor& rt = as_cpu(r);
            if (!rt.is_contiguous()) {  // (rare) a non-contiguous result is packed
              auto c = contiguous(r);
              std::memcpy(dst, c->raw(), size_t(n) * dtype_size(node.dtype));
            } else {
              dst = static_cast<char*>(rt.raw());
              keep.push_back(std::move(r));
            }
          }
          node_ptr[j] = dst;
        }
        for (size_t k = 0; k < p.outputs.size(); ++k) {
          const size_t es = dtype_size(outs[k]->dtype());
          stream_copy(static_cast<char*>(outs[k]->raw()) + b * int64_t(es), node_ptr[size_t(p.outputs[k])], size_t(n) * es);
        }
      }
      _mm_sfence();
    });
    return {outs.begin(), outs.end()};
  }

 private:
  // A node as an Op for the vector-kernel lookups (which read kind and attributes only).
  static Op op_of(const FusedProgram::Node& n) { return Op{n.kind, {}, n.attrs, {}}; }

  std::shared_ptr<const Plan> plan_of(const FusedProgram& p) {
    std::string key = p.signature();
    std::lock_guard<std::mutex> lock(mu_);
    auto it = plans_.find(key);
    if (it != plans_.end()) return it->second;
    auto plan = std::make_shared<Plan>();
    for (const auto& n : p.nodes) {
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
        auto one_value = [&](int32_t x) {
          return x < 0 && p.inputs[size_t(~x)].shape.numel() == 1 && p.inputs[size_t(~x)].shape != p.shape;
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
