// Pooling: avg_pool, max_pool (values and flat indices over the spatial dims, like PyTorch) and
// adaptive_avg_pool, for 1 to 3 spatial dims.
//
// As on the CPU backend (src/backends/cpu/pool.cpp), the input is made contiguous and seen as
// [planes, *spatial] lifted to 3 spatial dims (size-1 dims with kernel 1 in front); each
// output element is one invocation that walks its window: avg_pool divides by the window's taps
// inside the input, or inside the padded range with count_include_pad; max_pool takes a tap that
// is greater or NaN (each new NaN takes the index) and starts from PyTorch's index, the window's
// first tap (without indices, PoolAttrs::indices false, it keeps only the running maximum);
// adaptive_avg_pool uses PyTorch's windows [floor(o in / out), ceil((o + 1) in / out)).
// One shader per (op, dtype), "max_pool/f32" (values only: "max_pool/values/f32").
#include "glsl.hpp"
#include "vulkan_backend.hpp"

namespace ember::vulkan {

namespace {

struct PoolParams {
  uint32_t n = 0;
  int32_t off_x = 0, include_pad = 0, pad0 = 0;
  int32_t in[4] = {}, out[4] = {}, k[4] = {}, s[4] = {}, p[4] = {}, d[4] = {};  // 3 used
};
static_assert(sizeof(PoolParams) == 112);

const char* kPoolParams = R"GLSL(
struct PoolParams { uint n; int off_x; int include_pad; int pad0; ivec4 in_; ivec4 out_; ivec4 k; ivec4 s; ivec4 p; ivec4 d; };
layout(std430, binding = 6) readonly buffer PoolParamsBuf { PoolParams r; };
// The window of output index o along dim i: the first tap inside the input (lo), the taps inside
// it (n), and inside the padded range (cnt).
void ember_window(int i, int o, out int lo, out int n, out int cnt) {
  int start = o * r.s[i] - r.p[i];
  int t0 = start < 0 ? (-start + r.d[i] - 1) / r.d[i] : 0;
  lo = start + t0 * r.d[i];
  n = 0;
  cnt = 0;
  if (r.in_[i] - 1 - start >= 0) n = max(0, min(r.k[i] - 1, (r.in_[i] - 1 - start) / r.d[i]) - t0 + 1);
  if (r.in_[i] + r.p[i] - 1 - start >= 0) cnt = min(r.k[i] - 1, (r.in_[i] + r.p[i] - 1 - start) / r.d[i]) + 1;
}
)GLSL";

bool pool_dtypes(const VulkanBackend& be, const Op& op) {
  const DType dt = op.in(0).dtype;
  if (!be.has_dtype(dt) || !be.has_dtype(DType::i64)) return false;
  const int nd = op.kind == OpKind::adaptive_avg_pool ? op.attr<ShapeAttrs>().shape.rank()
                                                      : int(op.attr<PoolAttrs>().kernel.size());
  return nd >= 1 && nd <= 3;
}

// indices: max_pool's argmax output (binding 2).
std::string pool_source(const VulkanBackend& be, OpKind k, DType dt, bool indices) {
  const bool mx = k == OpKind::max_pool, adaptive = k == OpKind::adaptive_avg_pool;
  const bool dacc = adaptive && be.physical().float64 && is_float(dt);
  std::vector<DType> dts = {dt, DType::i64};
  if (dacc) dts.push_back(DType::f64);
  std::string s = glsl::header(dts, false);
  s += kPoolParams;
  const std::string C = glsl::compute_type(dt);
  s += "#define C " + C + "\n#define AT " + (dacc ? std::string("double") : C) + "\n";
  s += glsl::buffer(0, dt, "o_", false);
  s += glsl::buffer(1, dt, "a_", true);
  if (mx && indices) s += glsl::buffer(2, DType::i64, "i_", false);
  const std::string ld = glsl::load(dt, "a_[xp + (i0 * r.in_[1] + i1) * r.in_[2] + i2]");
  s += "void main() {\n  uint step = gl_NumWorkGroups.x * gl_WorkGroupSize.x;\n"
       "  for (uint e = gl_GlobalInvocationID.x; e < r.n; e += step) {\n"
       "    int q = int(e);\n    int o2 = q % r.out_[2]; q /= r.out_[2];\n"
       "    int o1 = q % r.out_[1]; q /= r.out_[1];\n    int o0 = q % r.out_[0]; int plane = q / r.out_[0];\n"
       "    int xp = r.off_x + plane * r.in_[0] * r.in_[1] * r.in_[2];\n";
  if (adaptive) {
    s += "    int a0 = (o0 * r.in_[0]) / r.out_[0], b0 = ((o0 + 1) * r.in_[0] + r.out_[0] - 1) / r.out_[0];\n"
         "    int a1 = (o1 * r.in_[1]) / r.out_[1], b1 = ((o1 + 1) * r.in_[1] + r.out_[1] - 1) / r.out_[1];\n"
         "    int a2 = (o2 * r.in_[2]) / r.out_[2], b2 = ((o2 + 1) * r.in_[2] + r.out_[2] - 1) / r.out_[2];\n"
         "    AT sum = AT(0);\n"
         "    for (int i0 = a0; i0 < b0; ++i0) for (int i1 = a1; i1 < b1; ++i1) for (int i2 = a2; i2 < b2; ++i2)\n"
         "      sum += AT(" +
         ld +
         ");\n"
         "    AT v = sum / AT(b0 - a0) / AT(b1 - a1) / AT(b2 - a2);\n"
         "    o_[int(e)] = " +
         glsl::store(dt, "C(v)") + ";\n  }\n}\n";
    return s;
  }
  s += "    int l0, n0, c0, l1, n1, c1, l2, n2, c2;\n"
       "    ember_window(0, o0, l0, n0, c0);\n    ember_window(1, o1, l1, n1, c1);\n    ember_window(2, o2, l2, n2, "
       "c2);\n";
  if (mx) {
    const bool flt = is_float(dt);
    const std::string lowest = dt == DType::f64   ? "-ember_inf_d()"
                               : flt              ? "-ember_inf()"
                               : dt == DType::i64 ? "int64_t(0x8000000000000000ul)"
                                                  : "int(0x80000000u)";
    s += "    C best = " + lowest + ";\n";
    if (indices) s += "    int bi = (l0 * r.in_[1] + l1) * r.in_[2] + l2;\n";
    s += "    for (int t0 = 0; t0 < n0; ++t0) for (int t1 = 0; t1 < n1; ++t1) for (int t2 = 0; t2 < n2; ++t2) {\n"
         "      int i0 = l0 + t0 * r.d[0], i1 = l1 + t1 * r.d[1], i2 = l2 + t2 * r.d[2];\n"
         "      C v = " +
         ld +
         ";\n"
         "      if (v > best" +
         (flt ? " || ember_isnan(v)" : std::string()) + ") { best = v;" +
         (indices ? " bi = (i0 * r.in_[1] + i1) * r.in_[2] + i2;" : "") +
         " }\n"
         "    }\n"
         "    o_[int(e)] = " +
         glsl::store(dt, "best") + ";\n" + (indices ? "    i_[int(e)] = int64_t(bi);\n" : "") + "  }\n}\n";
    return s;
  }
  s += "    C sum = C(0);\n"
       "    for (int t0 = 0; t0 < n0; ++t0) for (int t1 = 0; t1 < n1; ++t1) for (int t2 = 0; t2 < n2; ++t2) {\n"
       "      int i0 = l0 + t0 * r.d[0], i1 = l1 + t1 * r.d[1], i2 = l2 + t2 * r.d[2];\n"
       "      sum += " +
       ld +
       ";\n    }\n"
       "    int div = r.include_pad != 0 ? c0 * c1 * c2 : n0 * n1 * n2;\n"
       "    o_[int(e)] = " +
       glsl::store(dt, "sum / C(div)") + ";\n  }\n}\n";
  return s;
}

std::vector<PrimitivePtr> pool_kernel(VulkanBackend& be, Op& op) {
  VulkanTensorPtr x = be.contiguous(op.inputs[0]);
  auto [outs, bind] = alloc_value_index_outputs(be, op, x->buffer);
  const Shape& is = x->shape();
  const Shape& os = op.outputs[0].shape;
  const int64_t n = os.numel();
  if (n == 0) return outs;
  EMBER_CHECK(is.numel() > 0, op.name(), ": input ", is, " has an empty spatial dim");
  EMBER_CHECK(n <= INT32_MAX && is.numel() <= INT32_MAX, op.name(), ": too many elements for 32-bit indexing");
  const bool adaptive = op.kind == OpKind::adaptive_avg_pool;
  const int nd = adaptive ? op.attr<ShapeAttrs>().shape.rank() : int(op.attr<PoolAttrs>().kernel.size());
  PoolParams p;
  p.n = uint32_t(n);
  p.off_x = int32_t(x->offset);
  for (int i = 0; i < 3; ++i) p.in[i] = p.out[i] = p.k[i] = p.s[i] = p.d[i] = 1;
  const int lead = is.rank() - nd;
  for (int i = 0; i < nd; ++i) {
    const int j = 3 - nd + i;
    p.in[j] = int32_t(is[lead + i]);
    p.out[j] = int32_t(os[lead + i]);
    if (!adaptive) {
      const auto& a = op.attr<PoolAttrs>();
      p.k[j] = int32_t(a.kernel[size_t(i)]);
      p.s[j] = int32_t(a.stride[size_t(i)]);
      p.p[j] = int32_t(a.padding[size_t(i)]);
      p.d[j] = int32_t(a.dilation[size_t(i)]);
    }
  }
  if (!adaptive) p.include_pad = op.attr<PoolAttrs>().count_include_pad ? 1 : 0;
  const DType dt = x->dtype();
  const bool indices = op.kind == OpKind::max_pool && op.attr<PoolAttrs>().indices;
  const bool values_only = op.kind == OpKind::max_pool && !indices;
  const std::string key = std::string(op.name()) + (values_only ? "/values/" : "/") + std::string(dtype_name(dt));
  VkPipeline pipe = be.shaders().get(op.name(), key, [&] { return pool_source(be, op.kind, dt, indices); });
  be.dispatch(pipe, bind, &p, sizeof p, be.groups_for(n));
  return outs;
}

}  // namespace

void register_pool_kernels(KernelTable& t, DTypeTable& d) {
  for (OpKind k : {OpKind::avg_pool, OpKind::max_pool, OpKind::adaptive_avg_pool}) {
    t[size_t(k)] = pool_kernel;
    d[size_t(k)] = pool_dtypes;
  }
}

}  // namespace ember::vulkan
