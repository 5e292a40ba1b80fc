// The fusion decorator (DESIGN section 5): wraps any Backend, queues elementwise ops lazily and
// runs each chain of them as one kernel through the backend's FusedKernels service.
//
//   Device dev = Device::cpu().fusion();            // or Device::cuda(0).fusion().autodiff()
//   auto x = randn({1024}, DType::f32, dev);
//   auto y = x * 0.5 * (1 + erf(x / std::sqrt(2.0)));  // queued: nothing runs yet
//   auto v = y.to_vector<float>();                   // the read flushes: one fused kernel
//   # run
//
// What flushes a thread's queue: a read, sync(), memory_stats(), an op no fuser takes whose
// input is still queued, and the queue's bounds (EMBER_FUSION_MAX_OPS queued ops, default 512).
// Results, errors (shape and dtype errors are raised by make_op, before any backend sees the op)
// and memory_stats() mean what they mean without the decorator; only the speed changes.
// EMBER_LOG=fusion prints each fused group to stderr.
#pragma once

#include <cstdint>
#include <memory>

#include "ember/core/backend.hpp"

namespace ember::fusion {

// Wraps `inner`, which must not carry the autodiff decorator (autodiff goes on top:
// `.fusion().autodiff()`, so that the backward pass fuses too).
std::shared_ptr<Backend> wrap(std::shared_ptr<Backend> inner);
// True when `b` itself (not a backend below it) is a fusion backend.
bool is_fusion(const Backend& b);
// The wrapped backend of a fusion backend.
std::shared_ptr<Backend> inner_of(const Backend& b);

// What the decorator did since it was made (or since reset_stats).
struct Stats {
  int64_t ops_queued = 0;    // elementwise ops taken into a queue
  int64_t ops_eager = 0;     // ops run as they came (no fuser takes them)
  int64_t ops_dropped = 0;   // queued ops whose result nothing read (never computed)
  int64_t groups_fused = 0;  // groups of two or more ops run as one kernel
  int64_t ops_fused = 0;     // the ops inside those groups
  int64_t groups_single = 0; // groups of one op (run as the plain op)
  int64_t flushes = 0;       // times a non-empty queue was run
  int64_t views_folded = 0;  // views of queued values computed inside the kernels that read them
};
// The counters of fusion backend `b`, all threads together; throws ember::Error when `b` is not one.
Stats stats(const Backend& b);
// Runs every queued op of every thread now (what a read does), without waiting for the device:
// for loops that keep results alive without reading them, and benchmarks.
void flush(const Backend& b);
// Zeroes the counters of fusion backend `b`; throws ember::Error when `b` is not one.
void reset_stats(const Backend& b);

}  // namespace ember::fusion
