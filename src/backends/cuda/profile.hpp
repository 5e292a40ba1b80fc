// The CUDA backend's op profiler: with EMBER_CUDA_PROFILE=1 in the environment, every op that
// reaches a CUDA backend is bracketed by two CUDA events on its stream, and at exit a table goes to
// stderr: GPU time per op and input signature (name, dtype, input shapes, a mark for strided
// inputs, output shape), sorted by total time. It answers "which ops of my training step cost
// what" without an external profiler; the events cost a few microseconds of host time per op, so
// leave it off when timing the host side.
//
//   EMBER_CUDA_PROFILE=1 ./build/examples/char_transformer --device cuda --steps 50
#pragma once

#include <cuda_runtime.h>

#include <string>

#include "ember/core/op.hpp"

namespace ember::cuda {

class OpProfiler {
 public:
  // The process's profiler; null unless EMBER_CUDA_PROFILE=1 (read once).
  static OpProfiler* get();

  // Brackets one op on `stream`: begin() before its kernels are enqueued, end() after.
  // Nested ops (an op run inside another's kernel) are timed as part of the outer one.
  struct Mark {
    cudaEvent_t start = nullptr;
    int key = -1;
  };
  Mark begin(const Op& op, cudaStream_t stream);
  void end(const Mark& m, cudaStream_t stream);

  // begin() on construction and end() on destruction when profiling is on; nothing otherwise.
  class Scope {
   public:
    Scope(const Op& op, cudaStream_t stream);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    OpProfiler* prof_;
    cudaStream_t stream_;
    Mark mark_;
  };

 private:
  OpProfiler() = default;
  struct Impl;
  Impl* impl_ = nullptr;
};

// The signature an op is grouped under in the report, e.g. "sum f32 [8, 1024, 768] -> [768]".
std::string profile_key(const Op& op);

}  // namespace ember::cuda
