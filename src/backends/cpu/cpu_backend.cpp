#include "cpu_backend.hpp"

#include <cstring>

#include "ember/backends/cpu.hpp"
#include "ember/core/error.hpp"
#include "ember/core/trace.hpp"
#include "thread_pool.hpp"

namespace ember::cpu {

CpuBackend::CpuBackend() {
  register_creation_kernels(kernels_);
  register_elementwise_kernels(kernels_);
  register_reduce_kernels(kernels_);
  register_view_kernels(kernels_);
  register_layout_kernels(kernels_);
  register_index_kernels(kernels_);
  register_linalg_kernels(kernels_);
  register_quantized_kernels(kernels_);
  register_qlinear_add_kernel(kernels_);
  register_conv_integer_kernels(kernels_);
  register_nn_kernels(kernels_);
  register_optim_kernels(kernels_);
  register_custom_kernels(kernels_);
  fused_ = make_fused_kernels(*this);
}

std::vector<PrimitivePtr> CpuBackend::execute(Op op) {
  Kernel k = kernels_[size_t(op.kind)];
  if (k == nullptr) EMBER_NOT_IMPLEMENTED(op.name(), ": not supported on cpu");
  trace::Scope traced("kernel", op.name());
  return k(*this, op);
}

TensorData CpuBackend::read(const PrimitivePtr& p) {
  EMBER_CHECK(p != nullptr, "read: null tensor");
  auto c = contiguous(p);
  TensorData d(c->shape(), c->dtype());
  if (d.bytes().size()) std::memcpy(d.bytes().data(), c->raw(), d.bytes().size());
  return d;
}

PrimitivePtr CpuBackend::write_bytes(const TensorMeta& meta, std::span<const std::byte> bytes) {
  auto t = alloc(meta);
  EMBER_CHECK(bytes.size() == size_t(meta.shape.numel()) * dtype_size(meta.dtype), "cpu write: ", bytes.size(),
              " bytes for a ", meta.dtype, " tensor of shape ", meta.shape);
  if (!bytes.empty()) std::memcpy(t->raw(), bytes.data(), bytes.size());
  return t;
}

PrimitivePtr CpuBackend::wrap_bytes(const TensorMeta& meta, std::span<const std::byte> bytes,
                                    std::shared_ptr<const void> owner) {
  const size_t elem = dtype_size(meta.dtype);
  EMBER_CHECK(bytes.size() == size_t(meta.shape.numel()) * elem, "cpu wrap: ", bytes.size(), " bytes for a ",
              meta.dtype, " tensor of shape ", meta.shape);
  // bool bytes must be 0/1, and unaligned values cannot be read in place: those are copied
  if (!owner || bytes.empty() || meta.dtype == DType::boolean || reinterpret_cast<uintptr_t>(bytes.data()) % elem != 0)
    return write_bytes(meta, bytes);
  auto storage = std::make_shared<Storage>(bytes.data(), bytes.size(), std::move(owner));
  return std::make_shared<CpuTensor>(meta, std::move(storage), contiguous_strides(meta.shape), 0);
}

std::optional<MemoryView> CpuBackend::memory_view(const PrimitivePtr& p) {
  CpuTensorPtr t = contiguous(p);  // p itself when contiguous
  t->storage->drop_derived();      // the caller may write through the pointer
  void* data = t->raw();
  return MemoryView{data, std::move(t)};
}

PrimitivePtr CpuBackend::write(const TensorData& data) {
  auto t = alloc({data.shape(), data.dtype()});
  if (data.bytes().size()) std::memcpy(t->raw(), data.bytes().data(), data.bytes().size());
  return t;
}

void CpuBackend::seed(uint64_t s) {
  std::lock_guard<std::mutex> lock(rng_mu_);
  seed_ = s;
  counter_ = 0;
}

CpuBackend::RandomStream CpuBackend::next_random(uint64_t n) {
  std::lock_guard<std::mutex> lock(rng_mu_);
  RandomStream r{seed_, counter_};
  counter_ += n;
  return r;
}

MemoryStats CpuBackend::memory_stats() const { return Allocator::global().stats(); }
void CpuBackend::reset_peak_memory() { Allocator::global().reset_peak(); }
void CpuBackend::memory_cleanup() { Allocator::global().release_cached(); }

std::shared_ptr<Backend> make_backend() { return std::make_shared<CpuBackend>(); }
void set_num_threads(int n) { ThreadPool::global().set_num_threads(n); }
int num_threads() { return ThreadPool::global().size(); }

}  // namespace ember::cpu
