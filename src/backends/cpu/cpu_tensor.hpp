// The CPU backend's primitive: a (possibly shared) buffer viewed with strides and an offset,
// plus the helpers every CPU kernel uses: allocation, buffer reuse, contiguity, and a
// broadcasting strided loop.
#pragma once

#include <array>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "allocator.hpp"
#include "ember/core/op.hpp"

namespace ember::cpu {

struct Storage {
  void* data = nullptr;
  size_t bytes = 0;
  explicit Storage(size_t n) : data(n ? Allocator::global().allocate(n) : nullptr), bytes(n) {}
  // Memory the backend does not own (a mapped file), read-only: kernels never write into it
  // (in-place reuse asks begin_write()); `owner` keeps it alive.
  Storage(const void* external, size_t n, std::shared_ptr<const void> owner)
      : data(const_cast<void*>(external)), bytes(n), owner_(std::move(owner)) {}
  ~Storage() {
    if (data && !owner_) Allocator::global().deallocate(data, bytes);
  }
  bool writable() const { return owner_ == nullptr; }
  // Asked by every kernel before it writes into a buffer it did not allocate (in-place reuse,
  // which requires the caller to hold the storage alone): whether it may, and if so the derived
  // forms are dropped, since the contents are about to change.
  bool begin_write() {
    derived_.reset();
    return writable();
  }
  // A form derived from the contents, by key, kept with them until they may change (a conv's
  // weights packed for its micro-kernel: inference packs them once, as at model load).
  // begin_write() and CpuBackend::memory_view (a pointer that may be written through) drop
  // them. The first request of a key only records it and returns null (the caller then works
  // without); the second runs `make` over a new block of `bytes` and keeps it. So a storage that
  // is read once before it changes, as a weight in training, never holds a second copy.
  std::shared_ptr<const Storage> derived(uint64_t key, size_t bytes, const std::function<void(void*)>& make);
  void drop_derived();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

 private:
  struct Derived {
    uint64_t key;
    std::shared_ptr<const Storage> form;  // null until the second request
  };
  std::shared_ptr<const void> owner_;
  std::unique_ptr<std::vector<Derived>> derived_;  // guarded by a global mutex (cpu_tensor.cpp)
};

class CpuTensor : public Primitive {
 public:
  // A new contiguous, uninitialised tensor.
  explicit CpuTensor(TensorMeta meta);
  // A view of `storage`.
  CpuTensor(TensorMeta meta, std::shared_ptr<Storage> storage, ShapeDims strides, int64_t offset);

  std::shared_ptr<Storage> storage;
  ShapeDims strides;  // in elements; 0 for broadcast dims
  int64_t offset = 0;            // in elements

  template <class T>
  T* data() const { return static_cast<T*>(storage->data) + offset; }
  void* raw() const { return static_cast<char*>(storage->data) + offset * int64_t(dtype_size(dtype())); }
  int64_t numel() const { return shape().numel(); }
  bool is_contiguous() const;
};
using CpuTensorPtr = std::shared_ptr<CpuTensor>;

inline CpuTensor& as_cpu(const PrimitivePtr& p) { return static_cast<CpuTensor&>(*p); }
inline CpuTensorPtr as_cpu_ptr(const PrimitivePtr& p) { return std::static_pointer_cast<CpuTensor>(p); }

// A contiguous tensor with the values of `p` (p itself when already contiguous).
CpuTensorPtr contiguous(const PrimitivePtr& p);
CpuTensorPtr alloc(const TensorMeta& meta);
// An output buffer for `meta`: input `i`'s buffer when the op holds its only reference, it is
// contiguous and has the same byte size (in-place reuse); otherwise a new buffer.
CpuTensorPtr output_reusing(Op& op, size_t i, const TensorMeta& meta);
// Strides of `t` as seen from a broadcast `out_shape` (0 on broadcast dims).
std::vector<int64_t> broadcast_strides(const CpuTensor& t, const Shape& out_shape);

// One operand of a strided loop: base pointer (bytes), element size, strides in elements.
struct LoopOperand {
  char* base;
  int64_t elem_size;
  std::vector<int64_t> strides;
};
// Runs fn(ptrs, byte_strides, n) over every innermost run of `shape`, where ptrs[i] points at
// operand i's first element of the run and byte_strides[i] is its step. Dims are collapsed
// where every operand allows; large loops are split across the thread pool. operands[0] is
// usually the output.
using InnerLoop = std::function<void(char** ptrs, const int64_t* byte_strides, int64_t n)>;
void strided_loop(const Shape& shape, std::vector<LoopOperand> operands, const InnerLoop& fn,
                  int64_t grain = 32768);

// Visits every multi-index of `shape` in row-major order (single-threaded; for index kernels).
template <class F>
void for_each_index(const Shape& shape, F&& f) {
  int r = shape.rank();
  int64_t n = shape.numel();
  if (n == 0) return;
  std::vector<int64_t> idx(r, 0);
  for (int64_t i = 0; i < n; ++i) {
    f(std::span<const int64_t>(idx), i);
    for (int d = r - 1; d >= 0; --d) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
}

}  // namespace ember::cpu
