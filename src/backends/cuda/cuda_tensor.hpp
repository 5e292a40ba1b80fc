// The CUDA backend's primitive: a device buffer (from the caching allocator) viewed with
// strides and an offset, like the CPU backend's, plus the host-side helpers every kernel file
// uses: allocation, in-place reuse, broadcasting strides, and the fixed-size index arguments
// that generated kernels take by value.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "ember/core/op.hpp"

namespace ember::cuda {

class CudaBackend;
class CachingAllocator;

// Device memory: a block of the caching allocator (pool), or memory another library owns
// (from_dlpack: pool null, `owner` keeps it alive; ember never writes into it).
struct Buffer {
  void* ptr = nullptr;
  size_t bytes = 0;
  CachingAllocator* pool = nullptr;
  std::shared_ptr<const void> owner;
  Buffer(CachingAllocator& a, size_t n);
  Buffer(void* p, size_t n, std::shared_ptr<const void> o) : ptr(p), bytes(n), owner(std::move(o)) {}
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
};

class CudaTensor : public Primitive {
 public:
  CudaTensor(TensorMeta meta, std::shared_ptr<Buffer> buffer, ShapeDims strides, int64_t offset)
      : Primitive(std::move(meta)), buffer(std::move(buffer)), strides(std::move(strides)), offset(offset) {}

  std::shared_ptr<Buffer> buffer;
  ShapeDims strides;  // in elements; 0 on broadcast dims; may be negative (flip)
  int64_t offset = 0;            // in elements

  // Device address of element 0 of the view.
  void* raw() const { return static_cast<char*>(buffer->ptr) + offset * int64_t(dtype_size(dtype())); }
  int64_t numel() const { return shape().numel(); }
  bool is_contiguous() const;
  // Whether an op holding this tensor alone may write into its buffer: no other tensor shares
  // the buffer and ember allocated it (imported memory is never written).
  bool buffer_alone() const { return buffer.use_count() == 1 && buffer->pool != nullptr; }
};
using CudaTensorPtr = std::shared_ptr<CudaTensor>;

inline CudaTensor& as_cuda(const PrimitivePtr& p) { return static_cast<CudaTensor&>(*p); }
inline CudaTensorPtr as_cuda_ptr(const PrimitivePtr& p) { return std::static_pointer_cast<CudaTensor>(p); }

// A new contiguous, uninitialised tensor on `be`.
CudaTensorPtr alloc(CudaBackend& be, const TensorMeta& meta);
// A contiguous tensor with the values of `p` (p itself when already contiguous).
CudaTensorPtr contiguous(CudaBackend& be, const PrimitivePtr& p);
// An output for `meta`: input `i`'s buffer when the op holds its only reference, it is
// contiguous, starts at its buffer and has the same byte size (in-place reuse); else new.
CudaTensorPtr output_reusing(CudaBackend& be, Op& op, size_t i, const TensorMeta& meta);
// Strides of `t` seen from the broadcast `out_shape` (0 on broadcast dims).
std::vector<int64_t> broadcast_strides(const CudaTensor& t, const Shape& out_shape);

// A strided window on device memory (a tensor, or a part of one that a kernel writes into).
struct View {
  void* ptr = nullptr;  // element 0
  DType dtype = DType::f32;
  Shape shape;
  std::vector<int64_t> strides;  // in elements
};
View view_of(const CudaTensor& t);
// dst[i] = cast(src[i]) for every index of dst.shape (copy.cpp). src's strides may be 0
// (broadcast) or negative; dtypes may differ (PyTorch's conversion rules, as the CPU cast).
void copy_view(CudaBackend& be, const View& dst, const View& src);
// dsts[i] = srcs[i] for every i in as few launches as the copies allow, where each is a
// same-dtype copy of rows in whole 16-byte packs (cat): false, with nothing done, where one is not.
bool copy_rows_batched(CudaBackend& be, const std::vector<View>& dsts, const std::vector<View>& srcs);

// ---- kernel arguments (the same layout as the Shape/Strides structs of the JIT prelude) ----
inline constexpr int kMaxRank = 8;
struct ShapeArg {  // sizes of the iteration space, rank <= kMaxRank
  int32_t rank = 0;
  int32_t pad = 0;
  int64_t size[kMaxRank] = {};
};
struct StridesArg {  // one operand's strides in elements, over the iteration space
  int64_t v[kMaxRank] = {};
};

// An iteration space and the strides of its operands after merging dims that every operand
// walks contiguously (size-1 dims dropped). rank 0 means one element. Throws an Error naming
// `op` when more than kMaxRank dims remain.
struct Collapsed {
  ShapeArg shape;
  std::vector<StridesArg> strides;
  std::vector<bool> contiguous;  // operand i walks its elements contiguously in order
};
Collapsed collapse(std::string_view op, const Shape& shape, const std::vector<std::vector<int64_t>>& strides);

}  // namespace ember::cuda
