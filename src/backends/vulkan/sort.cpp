// sort (stable; DimAttrs.flag = descending) and topk (DimAttrs.k; flag = largest; sorted), in
// the CPU backend's order (src/backends/cpu/sort.cpp): every value maps to an unsigned key whose
// integer order is torch's (NaN above +inf, -0.0 equal to 0.0), complemented for descending /
// largest, ties broken by the original index.
//
// By rank: an invocation per element counts the elements of its row that come before it and
// writes the element at that position (topk: when the position is below k). Deterministic and
// stable, O(n^2) comparisons per row of n: right for the short rows of most models, not for
// sorting long rows (a bitonic or radix sort is for later).
#include "glsl.hpp"
#include "vulkan_backend.hpp"

namespace ember::vulkan {

namespace {

struct SortParams {
  uint32_t total = 0, n = 0;
  int32_t inner = 1, off_x = 0;
  int32_t k = 0;
  uint32_t flip = 0;
  int32_t pad[2] = {};
};

const char* kSortParams = R"GLSL(
struct SortParams { uint total; uint n; int inner; int off_x; int k; uint flip; int pad0; int pad1; };
layout(std430, binding = 6) readonly buffer SortParamsBuf { SortParams r; };
)GLSL";

bool sort_dtypes(const VulkanBackend& be, const Op& op) {
  return be.has_dtype(op.in(0).dtype) && be.has_dtype(DType::i64);
}

// GLSL: the key of a value `v` of dtype dt, loaded in its compute type.
std::string key_of(DType dt) {
  switch (dt) {
    case DType::f64:
      return "uint64_t ember_key(double v) {\n"
             "  uint64_t b = ember_isnan(v) ? 0x7ff8000000000000ul : (v == 0.0LF ? 0ul : "
             "packUint2x32(unpackDouble2x32(v)));\n"
             "  return b ^ (((b >> 63) != 0ul) ? 0xfffffffffffffffful : 0x8000000000000000ul);\n}\n";
    case DType::f32:
    case DType::f16:
    case DType::bf16:
      return "uint64_t ember_key(float v) {\n"
             "  uint b = ember_isnan(v) ? 0x7fc00000u : (v == 0.0 ? 0u : floatBitsToUint(v));\n"
             "  return uint64_t(b ^ (((b >> 31) != 0u) ? 0xffffffffu : 0x80000000u));\n}\n";
    case DType::i64:
      return "uint64_t ember_key(int64_t v) { return uint64_t(v) ^ 0x8000000000000000ul; }\n";
    case DType::u8:
    case DType::boolean:
      return "uint64_t ember_key(int v) { return uint64_t(uint(v)); }\n";
    default:
      return "uint64_t ember_key(int v) { return uint64_t(uint(v) ^ 0x80000000u); }\n";
  }
}

std::string sort_source(DType dt) {
  std::string s = glsl::header({dt, DType::i64}, false);
  s += kSortParams;
  s += glsl::buffer(0, dt, "o_", false);
  s += glsl::buffer(1, dt, "a_", true);
  s += glsl::buffer(2, DType::i64, "i_", false);
  s += key_of(dt);
  const auto ld = [&](const std::string& e) { return glsl::load(dt, e); };
  s += "uint64_t ember_flipped(uint64_t key) { return r.flip != 0u ? ~key : key; }\n";
  s += "void main() {\n  uint step = gl_NumWorkGroups.x * gl_WorkGroupSize.x;\n"
       "  int n = int(r.n);\n"
       "  for (uint e = gl_GlobalInvocationID.x; e < r.total; e += step) {\n"
       "    int in_row = int(e) % r.inner, rest = int(e) / r.inner;\n"
       "    int i = rest % n, outer = rest / n;\n"
       "    int base = r.off_x + outer * n * r.inner + in_row;\n"
       "    uint64_t mine = ember_flipped(ember_key(" +
       ld("a_[base + i * r.inner]") +
       "));\n"
       "    int rank = 0;\n"
       "    for (int j = 0; j < n; ++j) {\n"
       "      uint64_t other = ember_flipped(ember_key(" +
       ld("a_[base + j * r.inner]") +
       "));\n"
       "      if (other < mine || (other == mine && j < i)) ++rank;\n"
       "    }\n"
       "    if (rank < r.k) {\n"
       "      int o = outer * r.k * r.inner + rank * r.inner + in_row;\n"
       "      o_[o] = a_[base + i * r.inner];\n"
       "      i_[o] = int64_t(i);\n    }\n  }\n}\n";
  return s;
}

std::vector<PrimitivePtr> sort_kernel(VulkanBackend& be, Op& op) {
  const auto& a = op.attr<DimAttrs>();
  VulkanTensorPtr x = be.contiguous(op.inputs[0]);
  auto values = be.alloc(op.outputs[0]);
  auto indices = be.alloc(op.outputs[1]);
  const Shape& s = x->shape();
  if (s.numel() == 0 || values->numel() == 0) return {values, indices};
  EMBER_CHECK(s.numel() <= INT32_MAX, op.name(), ": too many elements for 32-bit indexing");
  const int dim = s.rank() == 0 ? 0 : a.dim;
  SortParams p;
  int64_t inner = 1;
  for (int d = dim + 1; d < s.rank(); ++d) inner *= s[d];
  const int64_t n = s.rank() == 0 ? 1 : s[dim];
  p.total = uint32_t(s.numel());
  p.n = uint32_t(n);
  p.inner = int32_t(inner);
  p.off_x = int32_t(x->offset);
  p.k = int32_t(op.kind == OpKind::topk ? a.k : n);
  p.flip = a.flag ? 1u : 0u;
  const DType dt = x->dtype();
  VkPipeline pipe =
      be.shaders().get(op.name(), "sort/" + std::string(dtype_name(dt)), [dt] { return sort_source(dt); });
  be.dispatch(pipe, {values->buffer, x->buffer, indices->buffer, nullptr}, &p, sizeof p, be.groups_for(s.numel()));
  return {values, indices};
}

}  // namespace

void register_sort_kernels(KernelTable& t, DTypeTable& d) {
  for (OpKind k : {OpKind::sort, OpKind::topk}) {
    t[size_t(k)] = sort_kernel;
    d[size_t(k)] = sort_dtypes;
  }
}

}  // namespace ember::vulkan
