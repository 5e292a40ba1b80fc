// The Vulkan backend's fused elementwise groups (the fusion decorator's kernels on Vulkan).
//
// One generated compute shader per group: every node is its eager kernel's GLSL function
// (ew_function, elementwise.cpp: the same text, so the op's maths is written once), with its
// attributes baked in as constants, and main() applies the whole chain to one element, the values
// staying in registers. After each node the value is rounded to the node's dtype exactly as the
// eager kernel's store and the next kernel's load would round it (f16, bf16, the narrow integers,
// bool), so a fused result is the unfused Vulkan result.
//
// Inputs are read in one of three modes, part of the shader's key: dense (contiguous, the
// domain's shape: element i), one value (read once) and strided (broadcast, transposed, sliced
// or offset views: the index is computed from the merged dims and the input's strides, which are
// parameters, so one shader serves every size). Outputs are new contiguous tensors.
//
// A shader binds its outputs and inputs at the backend's operand bindings (0-5), and a group with
// more operands takes a wide pipeline (bindings 8 on as well, as many as the device allows, up
// to 22 operands); a group that needs even more runs op by op, through the eager kernels (logged
// with EMBER_LOG=fusion).
// Reductions and matmuls are not fused on Vulkan yet: can_fuse() declines them and they run
// eagerly.
#include <algorithm>
#include <array>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "elementwise.hpp"
#include "ember/core/error.hpp"
#include "ember/core/hash.hpp"
#include "glsl.hpp"
#include "vulkan_backend.hpp"

namespace ember::vulkan {

namespace {

DType arg_dtype(const FusedProgram& p, int32_t a) {
  return a < 0 ? p.inputs[size_t(~a)].dtype : p.nodes[size_t(a)].dtype;
}
const Shape& arg_shape(const FusedProgram& p, int32_t a) { return a < 0 ? p.inputs[size_t(~a)].shape : p.shape; }

// The dtype that picks a node's eager kernel: its inputs' (where: its values').
DType kernel_dtype(const FusedProgram& p, const FusedProgram::Node& n) {
  return arg_dtype(p, n.kind == OpKind::where ? n.args[1] : n.args[0]);
}

// pow's exponent is one broadcast value: the eager kernel's test on its operands' shapes.
bool scalar_exponent(const FusedProgram& p, const FusedProgram::Node& n) {
  if (n.kind != OpKind::pow || n.args.size() < 2) return false;
  const Shape& e = arg_shape(p, n.args[1]);
  return e.numel() == 1 && e.rank() <= arg_shape(p, n.args[0]).rank();
}

// `e` (of dt's compute type) as the eager kernel stores it and the next kernel loads it.
std::string rounded(DType dt, const std::string& e) {
  switch (dt) {
    case DType::f16:
    case DType::bf16:
    case DType::i16:
    case DType::i8:
    case DType::u8:
    case DType::boolean:
      return glsl::load(dt, glsl::store(dt, e));
    default:
      return e;
  }
}

// prefix followed by i ("t3")
std::string id(const char* prefix, size_t i) {
  std::string s(prefix);
  s += std::to_string(i);
  return s;
}

std::string hex(uint64_t v) {
  char b[20];
  std::snprintf(b, sizeof b, "%016" PRIx64, v);
  return b;
}

bool log_fusion() {
  static const bool on = [] {
    const char* e = std::getenv("EMBER_LOG");
    return e && std::string(e).find("fusion") != std::string::npos;
  }();
  return on;
}

// The shader of program p with input modes `modes` ('d' dense, 's' one value, 'g' strided).
// Operands: outputs, then inputs (bindings 0-5, then 8 on); binding 6: n, rank, the merged sizes, each input's offset
// and each strided input's strides over the merged dims.
std::string fused_source(const FusedProgram& p, const std::string& modes) {
  const size_t nin = p.inputs.size(), nout = p.outputs.size();
  std::vector<DType> dts;
  for (const auto& in : p.inputs) dts.push_back(in.dtype);
  for (const auto& n : p.nodes) dts.push_back(n.dtype);
  std::string s = glsl::header(dts, false);
  size_t strided = 0;
  for (char m : modes) strided += m == 'g';
  s += "struct FusedParams {\n  uint n; int rank; int pad0; int pad1;\n  int size[" + std::to_string(kMaxRank) +
       "];\n  int off[" + std::to_string(std::max<size_t>(nin, 1)) + "];\n  int st[" +
       std::to_string(std::max<size_t>(strided, 1) * kMaxRank) + "];\n};\n";
  s += "layout(std430, binding = 6) readonly buffer ParamsBuf { FusedParams fp; };\n";
  // operand k at binding k, past the parameters (6) and the error record (7) from operand 6 on
  auto binding = [](size_t k) { return int(k < size_t(kMaxOperands) ? k : k + 2); };
  for (size_t k = 0; k < nout; ++k)
    s += glsl::buffer(binding(k), p.nodes[size_t(p.outputs[k])].dtype, id("y", k) + "_", false);
  for (size_t i = 0; i < nin; ++i) s += glsl::buffer(binding(nout + i), p.inputs[i].dtype, id("a", i) + "_", true);
  // the nodes' functions
  for (size_t j = 0; j < p.nodes.size(); ++j) {
    const auto& n = p.nodes[j];
    if (n.kind == OpKind::cast || n.kind == OpKind::where) continue;
    const DType kdt = kernel_dtype(p, n);
    s += ew_function(id("f", j), n.kind, kdt, ew_literal_attrs(n.kind, kdt, n.attrs, scalar_exponent(p, n)));
  }
  auto value = [&](int32_t a) { return a < 0 ? id("in", ~a) : id("t", a); };
  s += "void main() {\n  uint step = gl_NumWorkGroups.x * gl_WorkGroupSize.x;\n";
  for (size_t i = 0; i < nin; ++i)  // one value: read once
    if (modes[i] == 's')
      s += "  " + glsl::compute_type(p.inputs[i].dtype) + " in" + std::to_string(i) + " = " +
           glsl::load(p.inputs[i].dtype, id("a", i) + "_[fp.off[" + std::to_string(i) + "]]") + ";\n";
  s += "  for (uint idx = gl_GlobalInvocationID.x; idx < fp.n; idx += step) {\n";
  if (strided > 0) {  // the strided inputs' element offsets, from one walk over the merged dims
    s += "    int r = int(idx);\n";
    for (size_t i = 0; i < nin; ++i)
      if (modes[i] == 'g') s += "    int g" + std::to_string(i) + " = fp.off[" + std::to_string(i) + "];\n";
    s += "    for (int d = fp.rank - 1; d >= 0; --d) {\n      int q = r / fp.size[d];\n"
         "      int c = r - q * fp.size[d];\n";
    size_t g = 0;
    for (size_t i = 0; i < nin; ++i)
      if (modes[i] == 'g')
        s += "      g" + std::to_string(i) + " += c * fp.st[" + std::to_string(g++ * kMaxRank) + " + d];\n";
    s += "      r = q;\n    }\n";
  }
  for (size_t i = 0; i < nin; ++i) {
    const std::string si = std::to_string(i);
    if (modes[i] == 's') continue;
    const std::string at = modes[i] == 'd' ? "fp.off[" + si + "] + int(idx)" : "g" + si;
    s += "    " + glsl::compute_type(p.inputs[i].dtype) + " in" + si + " = " +
         glsl::load(p.inputs[i].dtype, "a" + si + "_[" + at + "]") + ";\n";
  }
  for (size_t j = 0; j < p.nodes.size(); ++j) {
    const auto& n = p.nodes[j];
    std::string e;
    if (n.kind == OpKind::cast) {
      e = glsl::convert(arg_dtype(p, n.args[0]), n.dtype, value(n.args[0]));
    } else if (n.kind == OpKind::where) {
      e = std::string("(") + value(n.args[0]) + " != 0 ? " + value(n.args[1]) + " : " + value(n.args[2]) + ")";
    } else {
      const std::string C = glsl::compute_type(kernel_dtype(p, n));
      e = id("f", j) + "(";
      for (size_t a = 0; a < 3; ++a) e += (a ? ", " : "") + (a < n.args.size() ? value(n.args[a]) : C + "(0)");
      e += ")";
      if (ew_returns_bool(n.kind)) e = "(" + e + " ? 1 : 0)";
    }
    s += "    " + glsl::compute_type(n.dtype) + " t" + std::to_string(j) + " = " + rounded(n.dtype, e) + ";\n";
  }
  for (size_t k = 0; k < nout; ++k) {
    const int32_t o = p.outputs[k];
    s += "    y" + std::to_string(k) + "_[int(idx)] = " + glsl::store(p.nodes[size_t(o)].dtype, value(o)) + ";\n";
  }
  s += "  }\n}\n";
  return s;
}

class VulkanFusedKernels final : public FusedKernels {
 public:
  explicit VulkanFusedKernels(VulkanBackend& be) : be_(be) {}

  // Elementwise ops and casts the eager kernels take on this device. Integer div, remainder and
  // fmod stay eager as on the other backends (the CPU raises on a zero divisor); reductions and
  // matmuls are not fused on Vulkan yet.
  bool can_fuse(const Op& op) const override {
    if (!is_elementwise(op.info().family) || op.outputs.size() != 1 || op.kind == OpKind::prelu) return false;
    const Shape& s = op.outputs[0].shape;
    if (s.rank() > kMaxRank || s.numel() > INT32_MAX || !be_.supports(op)) return false;
    switch (op.kind) {
      case OpKind::div:
      case OpKind::remainder:
      case OpKind::fmod:
        return is_float(op.outputs[0].dtype);
      default:
        return true;
    }
  }

  std::string kernel_name(const FusedProgram& p) const override { return name_of(p.signature()); }
  static std::string name_of(const std::string& signature) { return "vulkan_fused_" + hex(fnv1a(signature)); }

  std::vector<PrimitivePtr> run(const FusedProgram& p, std::vector<PrimitivePtr> inputs) override {
    EMBER_CHECK(!p.is_rows() && !p.is_cols() && inputs.size() == p.inputs.size(), "fused group on ", be_.name(),
                ": a program this backend did not offer to fuse");
    const size_t operands = p.outputs.size() + inputs.size();
    if (operands > size_t(kMaxOperands + be_.shaders().wide_operands())) return run_eagerly(p, inputs);
    const bool wide = operands > size_t(kMaxOperands);
    const std::string signature = p.signature(), name = name_of(signature);
    auto lock = be_.lock_for(name);
    const Shape& shape = p.shape;
    const int64_t n = shape.numel();
    const size_t nin = inputs.size();
    // Where any input is strided, the dense ones are read as strided too (their dims merge with
    // the output's, so it costs a division or two): fewer shaders per group, and fewer to compile.
    std::string modes(nin, 'd');
    bool any_strided = false;
    for (size_t i = 0; i < nin; ++i) {
      const VulkanTensor& t = as_vk(inputs[i]);
      if (t.numel() == 1)
        modes[i] = 's';
      else if (t.shape() != shape || !t.is_contiguous())
        any_strided = true;
    }
    if (any_strided) std::replace(modes.begin(), modes.end(), 'd', 'g');
    std::vector<PrimitivePtr> outs;
    std::vector<BufferPtr> bind(operands);
    for (size_t k = 0; k < p.outputs.size(); ++k) {
      VulkanTensorPtr t = be_.alloc({shape, p.nodes[size_t(p.outputs[k])].dtype});
      bind[k] = t->buffer;
      outs.push_back(std::move(t));
    }
    if (n == 0) return outs;
    // the parameters: the strided inputs' dims merged where every one of them allows
    std::vector<Operand> walked = {operand_of(as_vk(outs[0]))};
    for (size_t i = 0; i < nin; ++i)
      if (modes[i] == 'g') walked.push_back(broadcast_operand(as_vk(inputs[i]), shape));
    const MergedDims m = merge_dims(name, shape, walked);
    std::vector<int32_t> params(
        4 + size_t(kMaxRank) + std::max<size_t>(nin, 1) + std::max<size_t>(walked.size() - 1, 1) * kMaxRank, 0);
    params[0] = int32_t(uint32_t(n));
    params[1] = int32_t(m.sizes.size());
    for (size_t d = 0; d < m.sizes.size(); ++d) params[4 + d] = int32_t(m.sizes[d]);
    const size_t off_at = 4 + size_t(kMaxRank), st_at = off_at + std::max<size_t>(nin, 1);
    for (size_t i = 0, g = 0; i < nin; ++i) {
      const VulkanTensor& t = as_vk(inputs[i]);
      EMBER_CHECK(t.offset <= INT32_MAX, name, ": an offset beyond the Vulkan backend's 32-bit indexing");
      params[off_at + i] = int32_t(t.offset);
      if (modes[i] != 'g') continue;
      ++g;
      for (size_t d = 0; d < m.sizes.size(); ++d) params[st_at + (g - 1) * kMaxRank + d] = int32_t(m.strides[g][d]);
    }
    for (size_t i = 0; i < nin; ++i) bind[p.outputs.size() + i] = as_vk(inputs[i]).buffer;
    const std::string key = "fused/" + hex(fnv1a(modes, fnv1a("|", fnv1a(signature))));
    VkPipeline pipe = be_.shaders().get(
        name, key, [&] { return fused_source(p, modes); }, wide);
    const size_t param_bytes = params.size() * sizeof(int32_t);
    if (wide) {
      be_.dispatch_wide(pipe, bind, params.data(), param_bytes, be_.groups_for(n));
    } else {
      std::array<BufferPtr, kMaxOperands> narrow{};
      std::copy(bind.begin(), bind.end(), narrow.begin());
      be_.dispatch(pipe, narrow, params.data(), param_bytes, be_.groups_for(n));
    }
    return outs;
  }

 private:
  // Node by node through the eager kernels (a group with more operands than a pipeline binds).
  std::vector<PrimitivePtr> run_eagerly(const FusedProgram& p, const std::vector<PrimitivePtr>& inputs) {
    if (log_fusion())
      std::fprintf(stderr,
                   "[ember fusion] %s: %zu outputs and %zu inputs exceed the %d bindings of a shader; "
                   "the group runs op by op\n",
                   be_.name().c_str(), p.outputs.size(), inputs.size(), kMaxOperands + be_.shaders().wide_operands());
    std::vector<PrimitivePtr> vals(p.nodes.size());
    for (size_t j = 0; j < p.nodes.size(); ++j) {
      const auto& n = p.nodes[j];
      std::vector<PrimitivePtr> args;
      for (int32_t a : n.args) args.push_back(a < 0 ? inputs[size_t(~a)] : vals[size_t(a)]);
      vals[j] = be_.execute(make_op(n.kind, std::move(args), n.attrs))[0];
    }
    std::vector<PrimitivePtr> outs;
    for (int32_t o : p.outputs) outs.push_back(vals[size_t(o)]);
    return outs;
  }

  VulkanBackend& be_;
};

}  // namespace

std::unique_ptr<FusedKernels> make_fused_kernels(VulkanBackend& be) { return std::make_unique<VulkanFusedKernels>(be); }

}  // namespace ember::vulkan
