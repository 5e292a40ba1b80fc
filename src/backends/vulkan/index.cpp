// Index kernels along a dim: gather, index_select (reads) and scatter, scatter_add, index_copy,
// index_add (writes into a copy of x). Indices are i64 or i32; every index is checked on the
// device (0 <= i < size, like PyTorch): the first bad one is recorded in the backend's error
// record (binding 7) and read()/sync() raise "<op>: index i is out of bounds for dim d with
// size s", as the CPU backend does at once. A bad index reads zero and writes nothing.
//
// One shader per (family, dtype, index dtype), "gather/f32/i64" and "scatter/f32/i64". The
// writing ops are computed per output element, looping over the positions along the dim whose
// index points at it, in order: deterministic, the last write wins (scatter, index_copy) and
// sums are added in the CPU backend's order, rounded to the dtype after every addition.
#include "glsl.hpp"
#include "vulkan_backend.hpp"

namespace ember::vulkan {

namespace {

struct IndexParams {
  uint32_t n = 0;
  int32_t rank = 0, dim = 0;
  uint32_t op = 0;   // the OpKind, for the error record
  int32_t xdim = 0;  // x's size along dim: the valid index range
  int32_t len = 0;   // the writing ops: positions along dim that may point at an output
  int32_t mode = 0;  // 0 read, 1 assign, 2 add
  int32_t pad = 0;
  int32_t off[4] = {};           // out, x, index, src
  int32_t size[kMaxRank] = {};   // the iteration space
  int32_t isize[kMaxRank] = {};  // the writing ops: the index's extent per dim (others are skipped)
  int32_t st[4][kMaxRank] = {};
};
static_assert(sizeof(IndexParams) == 240);

const char* kIndexParams = R"GLSL(
struct IndexParams {
  uint n; int rank; int dim; uint op; int xdim; int len; int mode; int pad;
  int off[4]; int size[8]; int isize[8]; int st[32];
};
layout(std430, binding = 6) readonly buffer IndexParamsBuf { IndexParams p; };
)GLSL";

bool index_dtypes(const VulkanBackend& be, const Op& op) {
  for (const auto& in : op.inputs)
    if (in && !be.has_dtype(in->dtype())) return false;
  return be.has_dtype(DType::i64);
}

bool writes(OpKind k) { return k != OpKind::gather && k != OpKind::index_select; }

std::string index_source(OpKind k, DType dt, DType it) {
  std::string s = glsl::header({dt, it, DType::i64}, false);
  s += kIndexParams;
  s += glsl::kErrorRecord;
  s += "#define C " + glsl::compute_type(dt) + "\n";
  s += glsl::buffer(0, dt, "o_", false);
  s += glsl::buffer(1, dt, "x_", true);
  s += glsl::buffer(2, it, "i_", true);
  if (writes(k)) s += glsl::buffer(3, dt, "s_", true);
  s += R"GLSL(
// an index value, checked: -1 (and the error recorded) when out of range
int ember_checked(int64_t v) {
  if (v < 0l || v >= int64_t(p.xdim)) {
    ember_record_error(p.op, p.dim, v, int64_t(p.xdim));
    return -1;
  }
  return int(v);
}
void main() {
  uint step = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < p.n; i += step) {
    int c[8];
    int r = int(i);
    for (int d = p.rank - 1; d >= 0; --d) { int q = r / p.size[d]; c[d] = r - q * p.size[d]; r = q; }
    int ox = p.off[1], oi = p.off[2], os = p.off[3], o = 0;
    bool inside = true;  // the writing ops: the index covers this position's other coordinates
    for (int d = 0; d < p.rank; ++d) {
      o += c[d] * p.st[d];
      if (d == p.dim) continue;
      ox += c[d] * p.st[8 + d];
      oi += c[d] * p.st[16 + d];
      os += c[d] * p.st[24 + d];
      if (c[d] >= p.isize[d]) inside = false;
    }
    int sd = p.st[8 + p.dim], id = p.st[16 + p.dim], ss = p.st[24 + p.dim];
)GLSL";
  const std::string ld_i = "int64_t(i_[oi + t * id])";
  if (!writes(k)) {
    s += "    int t = c[p.dim];\n    int j = ember_checked(" + ld_i + ");\n";
    s += "    o_[o] = j < 0 ? " + glsl::store(dt, "C(0)") + " : x_[ox + j * sd];\n  }\n}\n";
    return s;
  }
  // the value is carried in the storage type (assign: bits as they are; add: rounded to the
  // dtype after every addition, as the CPU backend adds in the dtype)
  const std::string add =
      dt == DType::boolean
          ? "((" + glsl::load(dt, "v") + " | " + glsl::load(dt, "s_[os + t * ss]") + ") != 0 ? uint8_t(1) : uint8_t(0))"
          : glsl::store(dt, glsl::load(dt, "v") + " + " + glsl::load(dt, "s_[os + t * ss]"));
  s += "    " + glsl::storage_type(dt) + " v = x_[ox + c[p.dim] * sd];\n";
  s += "    if (inside) {\n      for (int t = 0; t < p.len; ++t) {\n";
  s += "        int64_t raw = " + ld_i + ";\n";
  s += "        if (c[p.dim] == 0 && ember_checked(raw) < 0) continue;\n";
  s += "        if (raw != int64_t(c[p.dim])) continue;\n";
  s += "        if (p.mode == 1) v = s_[os + t * ss];\n        else v = " + add + ";\n";
  s += "      }\n    }\n    o_[o] = v;\n  }\n}\n";
  return s;
}

std::vector<PrimitivePtr> index_kernel(VulkanBackend& be, Op& op) {
  const int dim = op.attr<DimAttrs>().dim;
  const VulkanTensor& x = as_vk(op.inputs[0]);
  const VulkanTensor& ix = as_vk(op.inputs[1]);
  auto out = be.alloc(op.outputs[0]);
  const int64_t n = out->numel();
  if (n == 0) return {out};
  const bool write = writes(op.kind);
  const bool gather_style = op.kind == OpKind::gather || op.kind == OpKind::scatter || op.kind == OpKind::scatter_add;
  // a 0-d tensor acts as a 1-element 1-d one
  auto dims_of = [](const VulkanTensor& t) {
    std::vector<int64_t> s(t.shape().begin(), t.shape().end()), st(t.strides.begin(), t.strides.end());
    if (s.empty()) s = {1}, st = {0};
    return std::make_pair(s, st);
  };
  auto [os, ost] = dims_of(*out);
  auto [xs, xst] = dims_of(x);
  auto [is, ist] = dims_of(ix);
  const int r = int(os.size());
  EMBER_CHECK(r <= kMaxRank, op.name(), ": rank ", r, " is not supported on ", be.name());
  EMBER_CHECK(n <= INT32_MAX && x.numel() <= INT32_MAX, op.name(), ": too many elements for 32-bit indexing");
  IndexParams p;
  p.n = uint32_t(n);
  p.rank = r;
  p.dim = dim;
  p.op = uint32_t(op.kind);
  p.xdim = int32_t(xs[size_t(dim)]);
  p.mode = !write ? 0 : (op.kind == OpKind::scatter || op.kind == OpKind::index_copy) ? 1 : 2;
  p.off[1] = int32_t(x.offset);
  p.off[2] = int32_t(ix.offset);
  for (int d = 0; d < r; ++d) {
    p.size[d] = int32_t(os[size_t(d)]);
    p.st[0][d] = int32_t(ost[size_t(d)]);
    p.st[1][d] = int32_t(xst[size_t(d)]);
    // the index: its own strides (gather, scatter) or one stride along dim (index_select, ...)
    p.st[2][d] = gather_style ? int32_t(ist[size_t(d)]) : (d == dim ? int32_t(ist[0]) : 0);
    p.isize[d] = gather_style ? int32_t(is[size_t(d)]) : int32_t(os[size_t(d)]);
  }
  BufferPtr src_buf;
  if (write) {
    const VulkanTensor& src = as_vk(op.inputs[2]);
    auto [ss, sst] = dims_of(src);
    p.off[3] = int32_t(src.offset);
    for (int d = 0; d < r; ++d) p.st[3][d] = int32_t(sst[size_t(d)]);
    p.len = int32_t(gather_style ? is[size_t(dim)] : ix.numel());
    src_buf = src.buffer;
  }
  const std::string family = write ? "scatter" : "gather";
  const std::string key = family + "/" + std::string(dtype_name(x.dtype())) + "/" + std::string(dtype_name(ix.dtype()));
  VkPipeline pipe = be.shaders().get(op.name(), key, [&] { return index_source(op.kind, x.dtype(), ix.dtype()); });
  be.dispatch(pipe, {out->buffer, x.buffer, ix.buffer, src_buf}, &p, sizeof p, be.groups_for(n));
  return {out};
}

}  // namespace

void register_index_kernels(KernelTable& t, DTypeTable& d) {
  for (OpKind k : {OpKind::gather, OpKind::index_select, OpKind::scatter, OpKind::scatter_add, OpKind::index_copy,
                   OpKind::index_add}) {
    t[size_t(k)] = index_kernel;
    d[size_t(k)] = index_dtypes;
  }
}

}  // namespace ember::vulkan
