// The data-dependent ops: nonzero (i64 [n, rank] positions of the nonzero elements, row-major
// order) and masked_select (x's elements where the broadcast mask is true, in row-major order).
// Their output's size is only known from the values, so the host must wait for them anyway (as
// on CUDA); this first slice reads the operands, selects on the host with the CPU backend's rules
// (NaN counts as nonzero) and uploads the result. A device compaction (a scan of counts) is for
// later.
#include <cstring>

#include "vulkan_backend.hpp"

namespace ember::vulkan {

namespace {

bool nonzero_at(const std::byte* p, DType dt) {
  bool nz = false;
  visit_dtype(dt, [&]<class T>() {
    T v;
    std::memcpy(&v, p, sizeof(T));
    if constexpr (is_floating_v<T>) {
      const auto f = convert_scalar<std::conditional_t<std::is_same_v<T, double>, double, float>>(v);
      nz = f != 0 || f != f;
    } else {
      nz = v != T(0);
    }
  });
  return nz;
}

std::vector<PrimitivePtr> nonzero_kernel(VulkanBackend& be, Op& op) {
  const TensorData x = be.read(op.inputs[0]);
  const Shape& s = x.shape();
  const int r = s.rank();
  const size_t es = dtype_size(x.dtype());
  std::vector<int64_t> pos;
  std::vector<int64_t> idx(size_t(r), 0);
  for (int64_t i = 0; i < x.numel(); ++i) {
    if (nonzero_at(x.bytes().data() + size_t(i) * es, x.dtype())) pos.insert(pos.end(), idx.begin(), idx.end());
    for (int d = r - 1; d >= 0 && ++idx[size_t(d)] == s[d]; --d) idx[size_t(d)] = 0;
  }
  // (a 0-d tensor: one row of no coordinates when its value is nonzero)
  const int64_t n = r == 0 ? (nonzero_at(x.bytes().data(), x.dtype()) ? 1 : 0) : int64_t(pos.size()) / r;
  return {be.write(TensorData::from_vector<int64_t>(pos, Shape{n, int64_t(r)}))};
}

std::vector<PrimitivePtr> masked_select_kernel(VulkanBackend& be, Op& op) {
  const Shape shape = broadcast_shapes(op.in(0).shape, op.in(1).shape, "masked_select");
  // both operands broadcast (views), then read contiguous
  auto expand = [&](const PrimitivePtr& p) {
    return p->shape() == shape ? p : be.execute(make_op(OpKind::expand, {p}, ShapeAttrs{shape}))[0];
  };
  const TensorData x = be.read(expand(op.inputs[0]));
  const TensorData m = be.read(expand(op.inputs[1]));
  const size_t es = dtype_size(x.dtype()), ms = dtype_size(m.dtype());
  std::vector<std::byte> out;
  for (int64_t i = 0; i < x.numel(); ++i)
    if (nonzero_at(m.bytes().data() + size_t(i) * ms, m.dtype()))
      out.insert(out.end(), x.bytes().begin() + std::ptrdiff_t(size_t(i) * es),
                 x.bytes().begin() + std::ptrdiff_t(size_t(i + 1) * es));
  const int64_t n = int64_t(out.size() / es);
  return {be.write(TensorData(Shape{n}, x.dtype(), std::move(out)))};
}

bool any_dtype(const VulkanBackend& be, const Op& op) {
  for (const auto& in : op.inputs)
    if (in && !be.has_dtype(in->dtype())) return false;
  return be.has_dtype(DType::i64);
}

}  // namespace

void register_select_kernels(KernelTable& t, DTypeTable& d) {
  t[size_t(OpKind::nonzero)] = nonzero_kernel;
  t[size_t(OpKind::masked_select)] = masked_select_kernel;
  d[size_t(OpKind::nonzero)] = any_dtype;
  d[size_t(OpKind::masked_select)] = any_dtype;
}

}  // namespace ember::vulkan
