// The router decorator (DESIGN section 5): one device over several backends. Each op runs on the
// first backend, in the order given, whose supports() accepts it, or on the one a policy picks;
// its inputs move there as needed (once: a tensor keeps its copies), and its results stay where
// they were computed until a later op needs them elsewhere.
//
//   Device dev = Device::router({Device::cpu(), Device(ember::cpu::make_backend())},
//                               [](const router::Route& r) -> std::optional<size_t> {
//                                 return r.input_bytes() < 4096 ? std::optional<size_t>(1) : std::nullopt;
//                               });
//   auto x = DynTensor::ones({4}, DType::f32, dev);  // held on the host until an op needs it
//   auto y = (x + 1).exp();                          // 16 bytes: both ops run on backend 1
//   auto v = y.to_vector<float>();                   // read from where y lives
//   # run
//
// Tensors written from the host (write, write_bytes, wrap_bytes) are placed on the backend of
// the first op that reads them. A move between backends is a read from one and a write to the
// other (the host path); EMBER_LOG=router prints each one to stderr. Autodiff goes on top
// (`Device::router({...}).autodiff()`); the routed devices may carry fusion but not autodiff.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ember/core/backend.hpp"

namespace ember::router {

// One routed backend as a policy sees it.
struct Candidate {
  std::string_view name;  // unique within the router: the backend's name, "#i" added when names repeat
  Backend* backend;       // the backend (never null)
  bool supports;          // its supports() accepts the op
};

// What a policy is asked about one op.
struct Route {
  const Op& op;  // the op (kind, name(), attrs, input metas, inferred outputs)
  // Per input of op: the index of the backend it lives on; -1 for an absent optional input, or
  // for a tensor written from the host that no op has placed yet.
  std::span<const int> input_homes;
  std::span<const Candidate> candidates;  // every routed backend, in the router's order
  int64_t input_bytes() const;   // the bytes of the op's inputs (dense size of each meta)
  int64_t output_bytes() const;  // the bytes of its inferred outputs (0 for unknown dims)
};

// Picks the backend (an index into Route::candidates) for an op, or nullopt for the default:
// the first candidate that supports it. A pick that does not support the op, or out of range,
// makes the op throw an Error naming the op and the backend.
using Policy = std::function<std::optional<size_t>(const Route&)>;

// A router over `backends` (at least one; none may carry the autodiff decorator).
std::shared_ptr<Backend> wrap(std::vector<std::shared_ptr<Backend>> backends, Policy policy = {});
// True when `b` itself (not a backend below it) is a router.
bool is_router(const Backend& b);
// The routed backends of router `b`, in order; throws an Error when `b` is not one.
std::vector<std::shared_ptr<Backend>> backends_of(const Backend& b);
// Where router `b`'s tensor `p` lives: the index of its backend, or -1 while it is held on the
// host (written, not yet used by an op). Throws an Error when `b` is not a router.
int location(const Backend& b, const PrimitivePtr& p);

// What the router did since it was made (or since reset_stats).
struct Stats {
  int64_t transfers = 0;               // tensors moved from one backend to another
  int64_t bytes_transferred = 0;       // their dense bytes
  int64_t placements = 0;              // host-held tensors written to the backend of their first op
  std::vector<int64_t> ops_per_backend;  // ops run, per routed backend
};
// The counters of router `b`; throws ember::Error when `b` is not one.
Stats stats(const Backend& b);
// Zeroes the counters of router `b`; throws ember::Error when `b` is not one.
void reset_stats(const Backend& b);

}  // namespace ember::router
