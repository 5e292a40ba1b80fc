// The Backend interface: what every backend implements and every decorator wraps.
//
//   # Backend& backend = given<Backend>();
//   # PrimitivePtr x = given<PrimitivePtr>();
//   Op op = make_op(OpKind::exp, {x});
//   PrimitivePtr y = backend.execute(std::move(op))[0];
//   TensorData host = backend.read(y);     // the only synchronising call
//
// Contract: execute() receives validated ops (make_op) whose inputs belong to this backend.
// A primitive whose use_count() is 1 inside execute() belongs to the op alone: the backend may
// reuse its buffer for an output of the same size. An op the backend cannot run throws an
// Error "<op>: not supported on <backend>" (supports() tells in advance).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ember/core/fused.hpp"
#include "ember/core/op.hpp"
#include "ember/core/tensor_data.hpp"

namespace ember {

// A backend's memory accounting (Backend::memory_stats), like torch.cuda.memory_allocated,
// memory_reserved and max_memory_allocated. All zero for a backend that keeps none.
struct MemoryStats {
  int64_t in_use = 0;    // bytes held by live tensors
  int64_t reserved = 0;  // bytes held by the pool (in use + cached)
  int64_t peak = 0;      // highest in_use since the last reset
};

// Where a primitive's values live, for zero-copy export (include/ember/tensor/dlpack.hpp):
// contiguous row-major values at `data`, in the backend's memory (host memory on the CPU, device
// memory on CUDA); `owner` keeps them alive, and nothing writes into them while it does.
struct MemoryView {
  void* data = nullptr;  // the first element
  std::shared_ptr<const void> owner;  // keeps data valid (and unwritten) while held
  int cuda_device = -1;  // the CUDA device whose memory holds them; -1: host memory
};

// Device work recorded once and run again as a whole (a CUDA graph): Backend::capture.
class CapturedWork {
 public:
  virtual ~CapturedWork() = default;
  // Runs the recorded work again, on the same buffers; throws an Error when one it reads has
  // been freed since.
  virtual void replay() = 0;
  virtual int64_t kernels() const = 0;  // the recorded kernels and copies
};

// An executor of ops on one device (the CPU, one CUDA device) or a decorator around one; see the
// file's contract. Shared through std::shared_ptr by every tensor of the device.
class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;  // "cpu", "cuda:0", ...; used in error messages
  // Runs `op` (built by make_op, its inputs this backend's primitives) and returns its outputs, one
  // per op.outputs entry with that meta. May run asynchronously (CUDA); throws an Error when the op
  // is not supported here.
  virtual std::vector<PrimitivePtr> execute(Op op) = 0;
  // Copies `p`'s values to the host (contiguous), waiting for the work that produces them.
  virtual TensorData read(const PrimitivePtr& p) = 0;
  // A new primitive holding a copy of host values `data`.
  virtual PrimitivePtr write(const TensorData& data) = 0;
  // The same from raw bytes (contiguous little-endian values of `meta`), for loaders that hold
  // them already (a memory-mapped file): backends override it to copy once.
  virtual PrimitivePtr write_bytes(const TensorMeta& meta, std::span<const std::byte> bytes) {
    return write(TensorData(meta.shape, meta.dtype, std::vector<std::byte>(bytes.begin(), bytes.end())));
  }
  // A primitive that uses `bytes` in place, read-only, without copying (a memory-mapped model
  // file); `owner` keeps the bytes alive as long as the primitive. Backends that cannot use host
  // memory directly (or bytes not aligned for the dtype) copy, which is the default.
  virtual PrimitivePtr wrap_bytes(const TensorMeta& meta, std::span<const std::byte> bytes,
                                  std::shared_ptr<const void> /*owner*/) {
    return write_bytes(meta, bytes);
  }
  // A primitive over device memory that another library owns (from_dlpack): element 0 at `data`,
  // `strides` in elements (one per dim of meta.shape, any sign). `owner` keeps the memory alive
  // while the primitive lives; ember never writes into it. nullptr where the backend has no such
  // memory (the default; the caller then reports it).
  virtual PrimitivePtr wrap_device_memory(const TensorMeta& /*meta*/, void* /*data*/,
                                          std::span<const int64_t> /*strides*/, std::shared_ptr<const void> /*owner*/) {
    return nullptr;
  }
  // The values of `p` in place (a contiguous copy when `p` is a strided view), or nullopt when the
  // backend cannot expose its memory, and callers read() instead.
  virtual std::optional<MemoryView> memory_view(const PrimitivePtr& /*p*/) { return std::nullopt; }
  // Whether execute() can run `op` (its kind, dtypes and, for a custom op, a kernel for this backend).
  virtual bool supports(const Op& op) const = 0;
  // Waits until all work queued so far has finished (torch.cuda.synchronize); a no-op on the CPU.
  virtual void sync() {}
  // Restarts the backend's random stream from `seed` (torch.manual_seed): the random ops that follow
  // draw the same numbers again for the same seed.
  virtual void seed(uint64_t seed) = 0;
  virtual MemoryStats memory_stats() const { return {}; }  // the current memory accounting
  virtual void reset_peak_memory() {}  // restarts MemoryStats::peak from the current in_use
  // Frees the cached but unused memory of the backend's pool (torch.cuda.empty_cache).
  virtual void memory_cleanup() {}
  // Optional services. The kernels that run fused elementwise groups (the fusion decorator's
  // code generator); nullptr when the backend has none, and the decorator then runs every op
  // as it comes.
  virtual FusedKernels* fused_kernels() { return nullptr; }
  // Records the device work `region` launches (which runs once, as recorded) for replay;
  // nullptr when the backend cannot (ember/tensor/graph.hpp is the user's side).
  virtual std::unique_ptr<CapturedWork> capture(const std::function<void()>& /*region*/) { return nullptr; }
  // Writes `src` (the same shape and dtype) into the memory of the contiguous `dst` in place: the
  // one write into an existing tensor, for the inputs of captured work. false when it cannot.
  virtual bool overwrite(const PrimitivePtr& /*dst*/, const TensorData& /*src*/) { return false; }
  // The same from `src`, a tensor of this backend (any layout), without a trip through the host.
  virtual bool copy_into(const PrimitivePtr& /*dst*/, const PrimitivePtr& /*src*/) { return false; }
  // For libraries that enqueue their own work on the device (NCCL collectives): the CUDA stream
  // the backend runs its work on (a cudaStream_t), nullptr when it is not a CUDA backend.
  virtual void* cuda_stream() { return nullptr; }
  // The CUDA device memory of `p` made contiguous (a copy queued on cuda_stream() when `p` is
  // a strided view), without waiting for the device: work queued on cuda_stream() after this
  // call sees its values. nullopt when the backend is not a CUDA backend or `p` is not one of
  // its own primitives (a decorator's wrapper; callers unwrap autodiff values with
  // autodiff::inner_value and otherwise fall back on memory_view, which waits).
  virtual std::optional<MemoryView> cuda_memory(const PrimitivePtr& /*p*/) { return std::nullopt; }
};

// The base of a decorator: every call is forwarded to the backend it wraps. A decorator
// overrides what it changes (execute, and read/write where its tensors wrap the inner ones) and
// inherits the rest, so a method added to Backend is forwarded by every decorator at once.
//
//   class CountingBackend final : public ForwardingBackend {
//     using ForwardingBackend::ForwardingBackend;
//     std::vector<PrimitivePtr> execute(Op op) override { ++count_; return inner()->execute(std::move(op)); }
//   };
class ForwardingBackend : public Backend {
 public:
  // Wraps `inner`, which the decorator shares ownership of.
  explicit ForwardingBackend(std::shared_ptr<Backend> inner) : inner_(std::move(inner)) {}
  // The backend this decorator wraps.
  const std::shared_ptr<Backend>& inner() const { return inner_; }

  std::string name() const override { return inner_->name(); }
  std::vector<PrimitivePtr> execute(Op op) override { return inner_->execute(std::move(op)); }
  TensorData read(const PrimitivePtr& p) override { return inner_->read(p); }
  PrimitivePtr write(const TensorData& data) override { return inner_->write(data); }
  PrimitivePtr write_bytes(const TensorMeta& meta, std::span<const std::byte> bytes) override {
    return inner_->write_bytes(meta, bytes);
  }
  PrimitivePtr wrap_bytes(const TensorMeta& meta, std::span<const std::byte> bytes,
                          std::shared_ptr<const void> owner) override {
    return inner_->wrap_bytes(meta, bytes, std::move(owner));
  }
  PrimitivePtr wrap_device_memory(const TensorMeta& meta, void* data, std::span<const int64_t> strides,
                                  std::shared_ptr<const void> owner) override {
    return inner_->wrap_device_memory(meta, data, strides, std::move(owner));
  }
  std::optional<MemoryView> memory_view(const PrimitivePtr& p) override { return inner_->memory_view(p); }
  bool supports(const Op& op) const override { return inner_->supports(op); }
  void sync() override { inner_->sync(); }
  void seed(uint64_t seed) override { inner_->seed(seed); }
  MemoryStats memory_stats() const override { return inner_->memory_stats(); }
  void reset_peak_memory() override { inner_->reset_peak_memory(); }
  void memory_cleanup() override { inner_->memory_cleanup(); }
  FusedKernels* fused_kernels() override { return inner_->fused_kernels(); }
  std::unique_ptr<CapturedWork> capture(const std::function<void()>& region) override { return inner_->capture(region); }
  bool overwrite(const PrimitivePtr& dst, const TensorData& src) override { return inner_->overwrite(dst, src); }
  bool copy_into(const PrimitivePtr& dst, const PrimitivePtr& src) override { return inner_->copy_into(dst, src); }
  void* cuda_stream() override { return inner_->cuda_stream(); }
  std::optional<MemoryView> cuda_memory(const PrimitivePtr& p) override { return inner_->cuda_memory(p); }

 protected:
  std::shared_ptr<Backend> inner_;  // the wrapped backend (never null)
};

}  // namespace ember
