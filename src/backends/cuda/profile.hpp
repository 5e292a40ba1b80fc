// The CUDA backend's op timing, with two views (docs/profiling.md):
// - the table: with EMBER_CUDA_PROFILE=1 in the environment, a table goes to stderr at exit: GPU
//   time per op and input signature (name, dtype, input shapes, a mark for strided inputs, output
//   shape), sorted by total time. It answers "which ops of my training step cost what" without
//   an external profiler.
// - the trace: while a trace session records (ember/core/trace.hpp, EMBER_TRACE=trace.json),
//   each op's GPU interval is an event on the device's "cuda:N stream" track, named by the op,
//   with its signature as the event's detail, on the host's clock.
// Either way every op that reaches a CUDA backend is bracketed by two CUDA events on its stream;
// they cost a few microseconds of host time per op, so leave both off when timing the host
// side. With both off a Scope costs a branch. The events are read later, in batches (at the
// trace's write, at exit, or when 4096 are pending), never by synchronising per op.
//
//   EMBER_CUDA_PROFILE=1 ./build/examples/char_transformer --device cuda --steps 50
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>

#include "ember/core/op.hpp"

namespace ember::cuda {

class OpProfiler {
 public:
  // The process's profiler while EMBER_CUDA_PROFILE=1 (read once) or a trace session records;
  // null otherwise.
  static OpProfiler* get();

  // What one timed interval is called: the trace event's name, the table's row (the signature),
  // and the trace event's detail (the row when empty).
  struct Label {
    std::string name, key, detail;
  };

  // Brackets one op on `stream`: begin() before its kernels are enqueued, end() after.
  // Nested ops (an op run inside another's kernel) are timed as part of the outer one.
  struct Mark {
    cudaEvent_t start = nullptr;
    int key = -1;
    int device = 0;
    uint64_t session = 0;  // the trace session it goes to (0: the table only)
  };
  Mark begin(const Op& op, cudaStream_t stream);
  Mark begin(Label label, cudaStream_t stream);
  void end(const Mark& m, cudaStream_t stream);

  // begin() on construction and end() on destruction while profiling; nothing otherwise.
  //   OpProfiler::Scope timed(op, stream);
  //   OpProfiler::Scope timed([&] { return OpProfiler::Label{name, key, detail}; }, stream);
  class Scope {
   public:
    Scope(const Op& op, cudaStream_t stream) : prof_(get()), stream_(stream) {
      if (prof_) [[unlikely]]
        mark_ = prof_->begin(op, stream);
    }
    template <class MakeLabel>
      requires std::is_invocable_r_v<Label, MakeLabel>
    Scope(MakeLabel&& make_label, cudaStream_t stream) : prof_(get()), stream_(stream) {
      if (prof_) [[unlikely]]
        mark_ = prof_->begin(std::forward<MakeLabel>(make_label)(), stream);
    }
    ~Scope() {
      if (prof_) [[unlikely]]
        prof_->end(mark_, stream_);
    }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    OpProfiler* prof_;
    cudaStream_t stream_;
    Mark mark_;
  };

  // Reads every recorded event pair (waiting for the GPU to reach them) into the table and the
  // trace. The trace session calls it before writing its file.
  void flush();

 private:
  OpProfiler() = default;
  struct Impl;
  Impl* impl_ = nullptr;
};

// The signature an op is grouped under in the report, e.g. "sum f32 [8, 1024, 768] -> [768]".
std::string profile_key(const Op& op);

}  // namespace ember::cuda
