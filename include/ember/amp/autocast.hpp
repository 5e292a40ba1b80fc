// Autocast: mixed precision as a per-op policy over ordinary ops (DESIGN section 6, issue 26).
// Inside an Autocast scope, on this thread, matmul/linear, conv and attention compute in the
// low-precision dtype; reductions, softmax and log_softmax, norms, the fused cross-entropy,
// exp/log/pow and the other ops of PyTorch's CUDA "float32" list compute in f32 (low-precision
// inputs are upcast); every other op runs in its inputs' promoted dtype. The casts are ordinary
// `cast` ops (differentiable under autodiff, fusable under fusion), so parameters stay f32 and
// their gradients come back f32. A tensor cast to the low dtype is cast once per scope: later
// uses of the same tensor (the same primitive) reuse the cast.
//
//   Device dev = Device::cpu().autodiff();
//   auto model = nn::LinearConfig{784, 10}.init(dev);   // f32 parameters
//   # DynTensor x = randn({8, 784}, DType::f32, dev), y = DynTensor::zeros({8}, DType::i64, dev);
//   Gradients g;
//   {
//     amp::Autocast guard(DType::bf16);                  // or DType::f16 (with a GradScaler)
//     DynTensor loss = nn::cross_entropy(model.forward(x), y);   // bf16 matmuls, f32 loss
//     g = loss.backward();                               // f32 gradients for the f32 parameters
//   }
//   { amp::Autocast off(DType::f32); /* ... */ }         // nested: disabled inside (or enabled = false)
//   # run
//
// The policy lives here; the tensor layer only consults a thread-local hook (ember/tensor/op_hook.hpp),
// see docs/amp.md for the seam.
#pragma once

#include <cstdint>
#include <optional>

#include "ember/core/op.hpp"

namespace ember::amp {

// What autocast does with an op's floating inputs.
enum class CastPolicy : uint8_t {
  keep,             // nothing: the op runs in its inputs' (promoted) dtype
  lower_precision,  // cast to the autocast dtype (f64 inputs are left alone, as in PyTorch)
  f32,              // f16/bf16 inputs are cast to f32
};

// The policy of one IR op (the table is in src/amp/autocast.cpp).
CastPolicy op_policy(OpKind kind);

// An autocast scope on this thread (RAII, nestable). `dtype` is bf16 or f16; f32, or
// enabled = false, disables autocast inside the scope. Any other dtype (integer, bool, f64) is
// an ember::Error naming it. Leaving the outermost scope clears the cast cache.
class Autocast {
 public:
  // Enters the scope; the destructor restores the enclosing scope's state. Throws ember::Error for a dtype other
  // than bf16, f16 or f32.
  explicit Autocast(DType dtype = DType::bf16, bool enabled = true);
  ~Autocast();
  Autocast(const Autocast&) = delete;
  Autocast& operator=(const Autocast&) = delete;

 private:
  bool prev_enabled_;
  DType prev_dtype_;
};

// Runs f inside an Autocast scope.
template <class F>
decltype(auto) autocast(DType dtype, F&& f) {
  Autocast guard(dtype);
  return f();
}

// Whether autocast is on for this thread, and its dtype.
bool autocast_enabled();
// The low-precision dtype (bf16 or f16) while autocast is on for this thread, else nullopt.
std::optional<DType> autocast_dtype();

// Counters of this thread's autocast casts (for tests and profiling): casts to the low dtype
// that were run, uses served from the per-scope cache, and upcasts to f32; and the number of
// entries the cache holds now.
struct AutocastStats {
  int64_t lower_casts = 0;    // casts to the low dtype that were run
  int64_t cache_hits = 0;     // uses of a cast served from the per-scope cache
  int64_t upcasts = 0;        // inputs upcast to f32
  int64_t cache_entries = 0;  // casts the cache holds now
};
// This thread's counters since the last reset_autocast_stats(), with cache_entries as of now.
AutocastStats autocast_stats();
// Zeroes this thread's counters (the cache itself is kept).
void reset_autocast_stats();

}  // namespace ember::amp
