// The CPU backend: executes IR ops through a table of kernels, one entry per OpKind.
// Kernels are registered per op family by the register_* functions (one file each).
#pragma once

#include <array>
#include <atomic>
#include <memory>
#include <mutex>

#include "cpu_tensor.hpp"
#include "ember/core/backend.hpp"

namespace ember::cpu {

class CpuBackend;
using Kernel = std::vector<PrimitivePtr> (*)(CpuBackend&, Op&);
using KernelTable = std::array<Kernel, kNumOps>;

void register_creation_kernels(KernelTable& t);     // creation.cpp, random.cpp
void register_elementwise_kernels(KernelTable& t);  // elementwise.cpp, cast.cpp
void register_reduce_kernels(KernelTable& t);       // reduce.cpp, softmax.cpp, scan.cpp, sort.cpp
void register_view_kernels(KernelTable& t);         // views.cpp
void register_layout_kernels(KernelTable& t);       // layout.cpp
void register_index_kernels(KernelTable& t);        // index.cpp
void register_linalg_kernels(KernelTable& t);       // matmul.cpp
void register_quantized_kernels(KernelTable& t);    // quantized_matmul.cpp (matmul_integer, matmul_wq)
void register_conv_integer_kernels(KernelTable& t); // conv_integer.cpp
void register_qlinear_add_kernel(KernelTable& t);   // qlinear_add.cpp
void register_nn_kernels(KernelTable& t);           // nn.cpp: calls the four below
void register_conv_kernels(KernelTable& t);         // conv.cpp
void register_pool_kernels(KernelTable& t);         // pool.cpp
void register_norm_kernels(KernelTable& t);         // norm.cpp
void register_attention_kernels(KernelTable& t);    // attention.cpp
void register_optim_kernels(KernelTable& t);        // optim.cpp (fused optimizer updates)
void register_custom_kernels(KernelTable& t);       // custom.cpp (user-defined ops)
bool custom_supported(const Op& op);               // custom.cpp: the definition has a CPU kernel
// elementwise.cpp: the op's functor computes its input dtype (true for ops without a functor).
bool elementwise_dtype_supported(const Op& op);

// The fused elementwise groups of the fusion decorator (fused.cpp).
std::unique_ptr<FusedKernels> make_fused_kernels(CpuBackend& be);

// The product of a matmul op's inputs 0 and 1 (a bias input is left out) into `out`, a fresh
// contiguous tensor of op.outputs[0]'s meta (matmul.cpp). When `ep` is given and the product
// runs on the packed f32 / f64 GEMM, every finished block of `out` is handed to it while it is
// in cache (GemmEpilogue, gemm.hpp) and the call returns true; else `ep` is not called.
struct GemmEpilogue;
bool matmul_into(const Op& op, CpuTensor& out, const GemmEpilogue* ep);

class CpuBackend final : public Backend {
 public:
  CpuBackend();
  std::string name() const override { return "cpu"; }
  std::vector<PrimitivePtr> execute(Op op) override;
  TensorData read(const PrimitivePtr& p) override;
  std::optional<MemoryView> memory_view(const PrimitivePtr& p) override;
  PrimitivePtr write(const TensorData& data) override;
  PrimitivePtr write_bytes(const TensorMeta& meta, std::span<const std::byte> bytes) override;
  PrimitivePtr wrap_bytes(const TensorMeta& meta, std::span<const std::byte> bytes,
                          std::shared_ptr<const void> owner) override;
  // Exact for the elementwise ops' dtypes, so that a router can decide before running: an op
  // given without inputs is answered by kind alone.
  bool supports(const Op& op) const override {
    return kernels_[size_t(op.kind)] != nullptr && (op.kind != OpKind::custom || custom_supported(op)) &&
           elementwise_dtype_supported(op);
  }
  void seed(uint64_t s) override;
  MemoryStats memory_stats() const override;
  void reset_peak_memory() override;
  void memory_cleanup() override;
  FusedKernels* fused_kernels() override { return fused_.get(); }

  // Random streams: a Philox key and a fresh counter range of `n` 128-bit blocks per call.
  struct RandomStream {
    uint64_t key;
    uint64_t counter;
  };
  RandomStream next_random(uint64_t n);

 private:
  KernelTable kernels_{};
  std::unique_ptr<FusedKernels> fused_;
  std::mutex rng_mu_;
  uint64_t seed_ = 0x853c49e6748fea9bULL;
  uint64_t counter_ = 0;
};

}  // namespace ember::cpu
