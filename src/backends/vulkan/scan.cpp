// Scans along a dim: cumsum, cumprod (floats accumulate in double where the device has it;
// integers and bool give i64, wrapping), cummax, cummin (values and i64 indices, torch's rule:
// an element equal to the running extreme takes over its index; a NaN becomes, and stays, the
// extreme, each new NaN taking the index), as the CPU backend (src/backends/cpu/scan.cpp).
//
// The input is made contiguous and seen as [outer, n, inner]; an invocation scans one
// (outer, inner) row sequentially, so sums are added in the CPU backend's order.
#include "glsl.hpp"
#include "vulkan_backend.hpp"

namespace ember::vulkan {

namespace {

struct ScanParams {
  uint32_t rows = 0, n = 0;
  int32_t inner = 1, off_x = 0;
};

const char* kScanParams = R"GLSL(
struct ScanParams { uint rows; uint n; int inner; int off_x; };
layout(std430, binding = 6) readonly buffer ScanParamsBuf { ScanParams r; };
)GLSL";

bool scan_dtypes(const VulkanBackend& be, const Op& op) {
  if (!be.has_dtype(op.in(0).dtype)) return false;
  for (const auto& o : op.outputs)
    if (!be.has_dtype(o.dtype)) return false;
  return true;
}

std::string scan_source(const VulkanBackend& be, OpKind k, DType dt, DType out) {
  const bool extreme = k == OpKind::cummax || k == OpKind::cummin;
  const bool flt = is_float(dt);
  std::string AT = glsl::compute_type(dt);
  if (!extreme) AT = flt ? (be.physical().float64 || dt == DType::f64 ? "double" : "float") : "int64_t";
  std::vector<DType> dts = {dt, out, DType::i64};
  if (AT == "double") dts.push_back(DType::f64);
  std::string s = glsl::header(dts, false);
  s += kScanParams;
  s += "#define C " + glsl::compute_type(dt) + "\n#define AT " + AT + "\n";
  s += glsl::buffer(0, out, "o_", false);
  s += glsl::buffer(1, dt, "a_", true);
  if (extreme) s += glsl::buffer(2, DType::i64, "i_", false);
  s += "void main() {\n  uint step = gl_NumWorkGroups.x * gl_WorkGroupSize.x;\n"
       "  for (uint row = gl_GlobalInvocationID.x; row < r.rows; row += step) {\n"
       "    int outer = int(row) / r.inner, in_row = int(row) - outer * r.inner;\n"
       "    int obase = outer * int(r.n) * r.inner + in_row, base = r.off_x + obase;\n";
  const std::string ld = glsl::load(dt, "a_[base + j * r.inner]");
  if (extreme) {
    const std::string cmp = k == OpKind::cummax ? ">=" : "<=";
    s += "    C cur = " + glsl::load(dt, "a_[base]") + ";\n    int ci = 0;\n";
    s += "    for (int j = 0; j < int(r.n); ++j) {\n      C v = " + ld + ";\n";
    s += std::string("      if (") + (flt ? "ember_isnan(v) || " : "") + "v " + cmp + " cur) { cur = v; ci = j; }\n";
    s += "      o_[obase + j * r.inner] = a_[base + ci * r.inner];\n";
    s += "      i_[obase + j * r.inner] = int64_t(ci);\n    }\n";
  } else {
    const bool prod = k == OpKind::cumprod;
    s += std::string("    AT acc = AT(") + (prod ? "1" : "0") + ");\n";
    s += "    for (int j = 0; j < int(r.n); ++j) {\n";
    s += std::string("      acc ") + (prod ? "*" : "+") + "= AT(" + ld + ");\n";
    s += "      o_[obase + j * r.inner] = " + glsl::store(out, glsl::compute_type(out) + "(acc)") + ";\n    }\n";
  }
  s += "  }\n}\n";
  return s;
}

std::vector<PrimitivePtr> scan_kernel(VulkanBackend& be, Op& op) {
  VulkanTensorPtr x = be.contiguous(op.inputs[0]);
  auto [outs, bind] = alloc_value_index_outputs(be, op, x->buffer);
  const Shape& s = x->shape();
  if (s.numel() == 0) return outs;
  EMBER_CHECK(s.numel() <= INT32_MAX, op.name(), ": too many elements for 32-bit indexing");
  const int dim = s.rank() == 0 ? 0 : op.attr<DimAttrs>().dim;
  ScanParams p;
  int64_t inner = 1;
  for (int d = dim + 1; d < s.rank(); ++d) inner *= s[d];
  const int64_t n = s.rank() == 0 ? 1 : s[dim];
  p.rows = uint32_t(s.numel() / n);
  p.n = uint32_t(n);
  p.inner = int32_t(inner);
  p.off_x = int32_t(x->offset);
  const DType dt = x->dtype(), out = op.outputs[0].dtype;
  const std::string key = std::string(op.name()) + "/" + std::string(dtype_name(dt));
  VkPipeline pipe = be.shaders().get(op.name(), key, [&] { return scan_source(be, op.kind, dt, out); });
  be.dispatch(pipe, bind, &p, sizeof p, be.groups_for(p.rows));
  return outs;
}

}  // namespace

void register_scan_kernels(KernelTable& t, DTypeTable& d) {
  for (OpKind k : {OpKind::cumsum, OpKind::cumprod, OpKind::cummax, OpKind::cummin}) {
    t[size_t(k)] = scan_kernel;
    d[size_t(k)] = scan_dtypes;
  }
}

}  // namespace ember::vulkan
