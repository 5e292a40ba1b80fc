#include "cuda_tensor.hpp"

#include "allocator.hpp"
#include "cuda_backend.hpp"

namespace ember::cuda {

Buffer::Buffer(CachingAllocator& a, size_t n) : ptr(a.allocate(n)), bytes(n), pool(&a) {}
Buffer::~Buffer() {
  if (ptr && pool) pool->deallocate(ptr, bytes);
}

bool CudaTensor::is_contiguous() const {
  const Shape& s = shape();
  int64_t expect = 1;
  for (int d = s.rank() - 1; d >= 0; --d) {
    if (s[d] == 1) continue;
    if (strides[d] != expect) return false;
    expect *= s[d];
  }
  return true;
}

CudaTensorPtr alloc(CudaBackend& be, const TensorMeta& meta) {
  size_t bytes = size_t(meta.shape.numel()) * dtype_size(meta.dtype);
  auto buf = std::make_shared<Buffer>(be.allocator(), bytes);
  return std::make_shared<CudaTensor>(meta, std::move(buf), contiguous_strides(meta.shape), 0);
}

CudaTensorPtr output_reusing(CudaBackend& be, Op& op, size_t i, const TensorMeta& meta) {
  if (i < op.inputs.size() && op.inputs[i] && op.inputs[i].use_count() == 1) {
    auto& t = as_cuda(op.inputs[i]);
    size_t bytes = size_t(meta.shape.numel()) * dtype_size(meta.dtype);
    if (t.buffer_alone() && t.offset == 0 && t.is_contiguous() && t.buffer->bytes == bytes &&
        size_t(t.numel()) * dtype_size(t.dtype()) == bytes)
      return std::make_shared<CudaTensor>(meta, t.buffer, contiguous_strides(meta.shape), 0);
  }
  return alloc(be, meta);
}

std::vector<int64_t> broadcast_strides(const CudaTensor& t, const Shape& out_shape) {
  const Shape& s = t.shape();
  int r = out_shape.rank(), lead = r - s.rank();
  std::vector<int64_t> st(r, 0);
  for (int d = 0; d < s.rank(); ++d) st[lead + d] = s[d] == 1 ? 0 : t.strides[d];
  return st;
}

Collapsed collapse(std::string_view op, const Shape& shape, const std::vector<std::vector<int64_t>>& strides) {
  const size_t n_ops = strides.size();
  std::vector<int64_t> sizes;
  std::vector<std::vector<int64_t>> st(n_ops);
  for (int d = 0; d < shape.rank(); ++d) {
    if (shape[d] == 1) continue;
    bool merge = !sizes.empty();
    for (size_t o = 0; o < n_ops && merge; ++o) merge = st[o].back() == strides[o][d] * shape[d];
    if (merge) {
      sizes.back() *= shape[d];
      for (size_t o = 0; o < n_ops; ++o) st[o].back() = strides[o][d];
    } else {
      sizes.push_back(shape[d]);
      for (size_t o = 0; o < n_ops; ++o) st[o].push_back(strides[o][d]);
    }
  }
  EMBER_CHECK(sizes.size() <= size_t(kMaxRank), op, ": ", sizes.size(),
              " non-mergeable dims exceed the CUDA backend's limit of ", kMaxRank);
  Collapsed c;
  c.shape.rank = int32_t(sizes.size());
  for (size_t d = 0; d < sizes.size(); ++d) c.shape.size[d] = sizes[d];
  c.strides.resize(n_ops);
  c.contiguous.resize(n_ops);
  for (size_t o = 0; o < n_ops; ++o) {
    int64_t expect = 1;
    bool contig = true;
    for (int d = int(sizes.size()) - 1; d >= 0; --d) {
      c.strides[o].v[d] = st[o][d];
      if (st[o][d] != expect) contig = false;
      expect *= sizes[d];
    }
    c.contiguous[o] = contig;
  }
  return c;
}

}  // namespace ember::cuda
