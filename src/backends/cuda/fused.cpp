// The CUDA backend's fused elementwise groups (the fusion decorator's kernels on CUDA).
//
// One generated kernel per group: every node becomes the device function of its eager kernel
// (elementwise_op_function: the same body, so the same results), wrapped in a namespace, and
// one function applies the whole chain to one element, values staying in registers. Three
// entries around it:
//   fused_vec  every input dense (contiguous, the domain's shape) or one broadcast value, every
//              dense pointer aligned: 16-byte packs of the widest operand, then a tail;
//   fused32    anything else: broadcast, strided, offset inputs read through their strides
//              (views become index arithmetic), 32-bit index arithmetic;
//   fused64    the same past 2^31 elements.
// The source is specialised by the program's signature (ops, attributes baked in as constants,
// dtypes, the dataflow) and each input's mode, compiled once by NVRTC and cached in memory and
// on disk by the JIT (jit.cpp).
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "cuda_backend.hpp"
#include "elementwise_sources.hpp"
#include "ember/core/error.hpp"

namespace ember::cuda {

namespace {

constexpr int kThreads = 256;

DType arg_dtype(const FusedProgram& p, int32_t a) { return a < 0 ? p.inputs[size_t(~a)].dtype : p.nodes[size_t(a)].dtype; }

// The dtype that picks a node's eager kernel: its inputs' (where: its values').
DType kernel_dtype(const FusedProgram& p, const FusedProgram::Node& n) {
  return arg_dtype(p, n.kind == OpKind::where ? n.args[1] : n.args[0]);
}

std::string hexdouble(double v) {
  char b[64];
  std::snprintf(b, sizeof b, "%a", v);
  std::string s = b;
  if (s == "inf") return "ember_inf_d()";
  if (s == "-inf") return "(-ember_inf_d())";
  if (s == "nan" || s == "-nan") return "ember_nan_d()";
  return s;
}

std::string fmt_key(const std::string& sig, const std::string& modes) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (char c : sig + "|" + modes) {
    h ^= uint8_t(c);
    h *= 0x100000001b3ULL;
  }
  char b[40];
  std::snprintf(b, sizeof b, "fused/%016" PRIx64, h);
  return b;
}

}  // namespace

std::string fused_kernel_source(const FusedProgram& p, const std::string& modes) {
  EMBER_CHECK(modes.size() == p.inputs.size(), "fused group: ", modes.size(), " input modes for ", p.inputs.size(),
              " inputs");
  std::string s = elementwise_common_source();
  s += "\n";
  // the nodes' functions
  for (size_t j = 0; j < p.nodes.size(); ++j) {
    const auto& n = p.nodes[j];
    s += "namespace f" + std::to_string(j) + " {\n";
    if (n.kind == OpKind::cast) {
      std::string from = device_type(arg_dtype(p, n.args[0])), to = device_type(n.dtype);
      s += "typedef " + from + " T0;\ntypedef " + from + " T1;\ntypedef " + from + " T2;\ntypedef " + to + " O;\n";
      s += "__device__ __forceinline__ O ew_op(T0 x0_, T1, T2, const Attr&) { return cast_value<O>(x0_); }\n";
    } else {
      s += elementwise_op_function(n.kind, kernel_dtype(p, n));
    }
    s += "}\n";
  }
  auto in_t = [&](size_t i) { return std::string(device_type(p.inputs[i].dtype)); };
  auto out_t = [&](size_t k) { return std::string(device_type(p.nodes[size_t(p.outputs[k])].dtype)); };
  // one element: inputs by value, outputs by reference
  s += "__device__ __forceinline__ void fused_op(";
  for (size_t i = 0; i < p.inputs.size(); ++i) s += (i ? ", " : "") + in_t(i) + " in" + std::to_string(i);
  for (size_t k = 0; k < p.outputs.size(); ++k) s += ", " + out_t(k) + "& y" + std::to_string(k);
  s += ") {\n";
  for (size_t j = 0; j < p.nodes.size(); ++j) {
    const auto& n = p.nodes[j];
    const std::string ns = "f" + std::to_string(j);
    bool scalar_exponent = false;
    if (n.kind == OpKind::pow && n.args[1] < 0) {
      const Shape& e = p.inputs[size_t(~n.args[1])].shape;
      int base_rank = n.args[0] < 0 ? p.inputs[size_t(~n.args[0])].shape.rank() : p.shape.rank();
      scalar_exponent = e.numel() == 1 && e.rank() <= base_rank;
    }
    EwAttr a = n.kind == OpKind::cast ? EwAttr{} : elementwise_attr(n.kind, n.attrs, kernel_dtype(p, n), scalar_exponent);
    s += "  const Attr p" + std::to_string(j) + " = {" + hexdouble(a.a) + ", " + hexdouble(a.b) + ", " +
         std::to_string(a.ia) + "LL, " + std::to_string(a.ib) + "LL};\n";
    auto arg = [&](size_t i, const char* type) {
      if (i >= n.args.size()) return ns + "::" + type + "()";
      int32_t x = n.args[i];
      return x < 0 ? "in" + std::to_string(~x) : "t" + std::to_string(x);
    };
    s += "  const " + ns + "::O t" + std::to_string(j) + " = " + ns + "::ew_op(" + arg(0, "T0") + ", " + arg(1, "T1") +
         ", " + arg(2, "T2") + ", p" + std::to_string(j) + ");\n";
  }
  for (size_t k = 0; k < p.outputs.size(); ++k)
    s += "  y" + std::to_string(k) + " = t" + std::to_string(p.outputs[k]) + ";\n";
  s += "}\n";

  // the widest operand among dense inputs and outputs sets the pack width
  size_t widest = 1;
  for (size_t i = 0; i < p.inputs.size(); ++i)
    if (modes[i] == 'd') widest = std::max(widest, dtype_size(p.inputs[i].dtype));
  for (int32_t o : p.outputs) widest = std::max(widest, dtype_size(p.nodes[size_t(o)].dtype));
  s += "#define FVEC " + std::to_string(16 / widest) + "\n";
  s += "template <class E> struct alignas(sizeof(E) * FVEC) FPack { E v[FVEC]; };\n";

  // parameters
  std::string params;
  for (size_t k = 0; k < p.outputs.size(); ++k) params += (k ? ", " : "") + out_t(k) + "* out" + std::to_string(k);
  for (size_t i = 0; i < p.inputs.size(); ++i) params += ", const " + in_t(i) + "* __restrict__ a" + std::to_string(i);
  auto call = [&](const std::vector<std::string>& in, const std::vector<std::string>& out) {
    std::string c = "fused_op(";
    for (size_t i = 0; i < in.size(); ++i) c += (i ? ", " : "") + in[i];
    for (const auto& o : out) c += ", " + o;
    return c + ");";
  };
  // fused_vec
  {
    s += "extern \"C\" __global__ void fused_vec(" + params + ", int64_t n) {\n";
    s += "  const int64_t tid = int64_t(blockIdx.x) * blockDim.x + threadIdx.x, nt = int64_t(gridDim.x) * blockDim.x;\n";
    for (size_t i = 0; i < p.inputs.size(); ++i)
      if (modes[i] != 'd')  // ('g' inputs never take this entry: the host checks)
        s += "  const " + in_t(i) + " s" + std::to_string(i) + " = a" + std::to_string(i) + "[0];\n";
    s += "  const int64_t np = n / FVEC;\n";
    s += "  for (int64_t v = tid; v < np; v += nt) {\n";
    std::vector<std::string> in, out;
    for (size_t i = 0; i < p.inputs.size(); ++i) {
      const std::string si = std::to_string(i);
      if (modes[i] == 'd') {
        s += "    const FPack<" + in_t(i) + "> x" + si + " = reinterpret_cast<const FPack<" + in_t(i) + ">*>(a" + si +
             ")[v];\n";
        in.push_back("x" + si + ".v[e]");
      } else {
        in.push_back("s" + si);
      }
    }
    for (size_t k = 0; k < p.outputs.size(); ++k) {
      s += "    FPack<" + out_t(k) + "> q" + std::to_string(k) + ";\n";
      out.push_back("q" + std::to_string(k) + ".v[e]");
    }
    s += "#pragma unroll\n    for (int e = 0; e < FVEC; ++e) " + call(in, out) + "\n";
    for (size_t k = 0; k < p.outputs.size(); ++k)
      s += "    reinterpret_cast<FPack<" + out_t(k) + ">*>(out" + std::to_string(k) + ")[v] = q" + std::to_string(k) +
           ";\n";
    s += "  }\n";
    s += "  for (int64_t i = np * FVEC + tid; i < n; i += nt) {\n";
    in.clear();
    out.clear();
    for (size_t i = 0; i < p.inputs.size(); ++i)
      in.push_back(modes[i] == 'd' ? "a" + std::to_string(i) + "[i]" : "s" + std::to_string(i));
    for (size_t k = 0; k < p.outputs.size(); ++k) out.push_back("out" + std::to_string(k) + "[i]");
    s += "    " + call(in, out) + "\n  }\n}\n";
  }
  // fused32 / fused64
  for (int bits : {32, 64}) {
    const std::string I = bits == 32 ? "uint32_t" : "int64_t";
    const std::string off = bits == 32 ? "offset_of32" : "offset_of";
    std::string sp;
    for (size_t i = 0; i < p.inputs.size(); ++i)
      if (modes[i] == 'g') sp += ", EMBER_GC Strides st" + std::to_string(i);
    s += "extern \"C\" __global__ void fused" + std::to_string(bits) + "(" + params + ", EMBER_GC Shape sh" + sp + ", " + I +
         " n) {\n";
    s += "  for (" + I + " i = " + I + "(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += " + I +
         "(gridDim.x) * blockDim.x) {\n";
    std::vector<std::string> in, out;
    for (size_t i = 0; i < p.inputs.size(); ++i) {
      const std::string si = std::to_string(i);
      if (modes[i] == 'd') in.push_back("a" + si + "[i]");
      else if (modes[i] == 's') in.push_back("a" + si + "[0]");
      else in.push_back("a" + si + "[" + off + "(i, sh, st" + si + ")]");
    }
    for (size_t k = 0; k < p.outputs.size(); ++k) out.push_back("out" + std::to_string(k) + "[i]");
    s += "    " + call(in, out) + "\n  }\n}\n";
  }
  return s;
}

namespace {

class CudaFusedKernels final : public FusedKernels {
 public:
  explicit CudaFusedKernels(CudaBackend& be) : be_(be) {}

  bool can_fuse(const Op& op) const override {
    if (!is_elementwise(op.info().family) || op.outputs.size() != 1 || op.kind == OpKind::prelu) return false;
    if (op.outputs[0].shape.rank() > kMaxRank) return false;
    if (op.kind == OpKind::cast) return true;
    const DType dt = op.in(op.kind == OpKind::where ? 1 : 0).dtype;
    if (!elementwise_supports(op.kind, dt)) return false;
    switch (op.kind) {  // integer division by zero: as on the CPU, these stay eager
      case OpKind::div: case OpKind::remainder: case OpKind::fmod:
        return is_float(op.outputs[0].dtype);
      default:
        return true;
    }
  }

  std::string kernel_name(const FusedProgram& p) const override { return fmt_key(p.signature(), ""); }

  std::vector<PrimitivePtr> run(const FusedProgram& p, std::vector<PrimitivePtr> inputs) override {
    EMBER_CHECK(inputs.size() == p.inputs.size(), "fused group: ", inputs.size(), " inputs for ", p.inputs.size());
    EMBER_CHECK(p.shape.rank() <= kMaxRank, "fused group: rank ", p.shape.rank(), " is above ", kMaxRank);
    const Shape& shape = p.shape;
    const int64_t n = shape.numel();
    const size_t nin = inputs.size();
    // modes: 'd' dense, 's' one value, 'g' read through strides
    std::string modes(nin, 'g');
    for (size_t i = 0; i < nin; ++i) {
      const CudaTensor& t = as_cuda(inputs[i]);
      if (t.numel() == 1) modes[i] = 's';
      else if (t.shape() == shape && t.is_contiguous()) modes[i] = 'd';
    }
    // outputs: a dense input's buffer when the call holds it alone, else new
    std::vector<CudaTensorPtr> outs;
    std::vector<bool> reused(nin, false);
    for (int32_t o : p.outputs) {
      TensorMeta meta{shape, p.nodes[size_t(o)].dtype};
      const size_t bytes = size_t(n) * dtype_size(meta.dtype);
      CudaTensorPtr out;
      for (size_t i = 0; i < nin && !out; ++i) {
        if (reused[i] || modes[i] != 'd' || inputs[i].use_count() != 1) continue;
        const CudaTensor& t = as_cuda(inputs[i]);
        if (t.buffer.use_count() == 1 && t.offset == 0 && t.buffer->bytes == bytes &&
            dtype_size(t.dtype()) == dtype_size(meta.dtype)) {
          out = std::make_shared<CudaTensor>(meta, t.buffer, contiguous_strides(shape), 0);
          reused[i] = true;
        }
      }
      outs.push_back(out ? out : alloc(be_, meta));
    }
    if (n == 0) return {outs.begin(), outs.end()};

    const std::string key = fmt_key(p.signature(), modes);
    auto source = [&] { return fused_kernel_source(p, modes); };
    // the pack path: no strided input, every dense pointer on its pack's boundary
    size_t widest = 1;
    for (size_t i = 0; i < nin; ++i)
      if (modes[i] == 'd') widest = std::max(widest, dtype_size(p.inputs[i].dtype));
    for (int32_t o : p.outputs) widest = std::max(widest, dtype_size(p.nodes[size_t(o)].dtype));
    const int64_t vec = int64_t(16 / widest);
    bool packed = modes.find('g') == std::string::npos;
    auto aligned = [&](const void* ptr, DType dt) {
      return reinterpret_cast<uintptr_t>(ptr) % (uintptr_t(dtype_size(dt)) * uintptr_t(vec)) == 0;
    };
    for (size_t i = 0; i < nin && packed; ++i)
      if (modes[i] == 'd' && !aligned(as_cuda(inputs[i]).raw(), p.inputs[i].dtype)) packed = false;
    for (size_t k = 0; k < outs.size() && packed; ++k)
      if (!aligned(outs[k]->raw(), outs[k]->dtype())) packed = false;

    std::vector<void*> ptrs;
    for (auto& o : outs) ptrs.push_back(o->raw());
    for (auto& in : inputs) ptrs.push_back(as_cuda(in).raw());
    std::vector<void*> params;
    for (auto& ptr : ptrs) params.push_back(&ptr);
    const int64_t max_blocks = int64_t(be_.sm_count()) * 16;
    if (packed) {
      int64_t work = std::max<int64_t>(n / vec, 1);
      int64_t blocks = std::min((work + kThreads - 1) / kThreads, max_blocks);
      int64_t nn = n;
      params.push_back(&nn);
      params.push_back(nullptr);
      be_.launch_raw(be_.jit().get(key, "fused_vec", source), dim3(unsigned(blocks)), dim3(kThreads), 0, params.data());
    } else {
      ShapeArg sh;
      sh.rank = shape.rank();
      for (int d = 0; d < shape.rank(); ++d) sh.size[d] = shape[d];
      std::vector<StridesArg> strides;
      strides.reserve(nin);
      for (size_t i = 0; i < nin; ++i)
        if (modes[i] == 'g') {
          StridesArg st;
          auto bs = broadcast_strides(as_cuda(inputs[i]), shape);
          for (size_t d = 0; d < bs.size(); ++d) st.v[d] = bs[d];
          strides.push_back(st);
        }
      params.push_back(&sh);
      for (auto& st : strides) params.push_back(&st);
      const bool small = n < (int64_t(1) << 31);
      uint32_t n32 = uint32_t(n);
      int64_t n64 = n;
      params.push_back(small ? static_cast<void*>(&n32) : static_cast<void*>(&n64));
      params.push_back(nullptr);
      int64_t blocks = std::min((n + kThreads - 1) / kThreads, max_blocks);
      be_.launch_raw(be_.jit().get(key, small ? "fused32" : "fused64", source), dim3(unsigned(blocks)), dim3(kThreads),
                     0, params.data());
    }
    return {outs.begin(), outs.end()};
  }

 private:
  CudaBackend& be_;
};

}  // namespace

std::unique_ptr<FusedKernels> make_fused_kernels(CudaBackend& be) { return std::make_unique<CudaFusedKernels>(be); }

}  // namespace ember::cuda
