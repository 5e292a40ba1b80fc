// Run-time compilation of generated CUDA C++ with NVRTC.
//
//   CUfunction f = be.jit().get("exp/f32/contig", "k", [&] { return source; });
//   be.launch(f, grid, block, 0, out_ptr, in_ptr, n);
//
// Every source is compiled after the shared prelude (kernel_prelude(): fixed-width integer
// types, half_t/bf16_t storage types that convert to and from float, Shape/Strides argument
// structs and index helpers), for the device's own architecture (sm_XY). Modules are cached in
// memory by key and on disk by a hash of the full source, the architecture, the NVRTC and
// driver versions and ember's version, so a program compiles each kernel once per machine. A source that fails to compile
// throws an Error naming the key (which starts with the op) and the generated source's line.
#pragma once

#include <cuda.h>

#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ember/core/dtype.hpp"

namespace ember::cuda {

// The code every generated source is compiled after.
const std::string& kernel_prelude();
// The prelude's name of the storage type of `dt`: double, float, half_t, bf16_t, int64_t,
// int32_t, int16_t, int8_t, uint8_t, bool.
const char* device_type(DType dt);
// The type arithmetic on `dt` runs in: float for half_t/bf16_t, else the storage type.
const char* compute_type(DType dt);

// Device helpers for sources that stage global memory in shared memory with cp.async (sm_80+;
// attention, softmax): smem_addr, cp_async16 (zero fill when !pred), cp_async_commit and
// cp_async_wait<N>. Each is a compiler memory barrier, so ordinary shared-memory reads before a
// copy into the same slots stay before it.
const std::string& async_copy_helpers();

// One generated kernel: what the compile tests and compile_cubin() take.
struct KernelSource {
  std::string key;     // the Jit cache key (starts with the op name)
  std::string source;  // compiled after the prelude
};

// Compiles prelude + `source` for sm_<arch> to a cubin (no GPU needed) and stores it in the disk
// cache, so a machine can be warmed by compiling ahead (the compile tests do). `name` appears in
// the error message (use the cache key). Throws Error on failure.
std::vector<char> compile_cubin(std::string_view name, const std::string& source, int arch);

class Jit {
 public:
  Jit(int device, int arch);  // arch = 10 * major + minor
  ~Jit();
  Jit(const Jit&) = delete;
  Jit& operator=(const Jit&) = delete;

  // The kernel `entry` (an extern "C" __global__ function) of the module `key`, compiled from
  // make_source() the first time the key is seen. `key` must determine the source.
  CUfunction get(const std::string& key, const char* entry, const std::function<std::string()>& make_source);
  int arch() const { return arch_; }
  // Number of NVRTC compilations and disk-cache hits so far (statistics for tests).
  int compiles() const { return compiles_; }
  int disk_hits() const { return disk_hits_; }

 private:
  struct Module {
    CUmodule module = nullptr;
    std::vector<std::pair<std::string, CUfunction>> functions;  // entries looked up so far
  };
  Module& module_for(const std::string& key, const std::function<std::string()>& make_source);
  int device_, arch_;
  std::mutex mu_;
  std::unordered_map<std::string, Module> modules_;
  int compiles_ = 0, disk_hits_ = 0;
};

// The directory of ember's caches: $EMBER_CACHE_DIR, else $XDG_CACHE_HOME/ember, else
// ~/.cache/ember (created on demand; empty string when none can be made).
std::string cache_dir();
// Where the cubin of `source` for sm_<arch> is cached ("" when there is no cache directory).
std::string disk_cache_path(const std::string& source, int arch);
// The disk cache's file format: a checked header (magic, size, hash) before the payload.
// read_cache_file is false, never throws, for a missing, truncated, corrupt or foreign file;
// write_cache_file writes atomically (a unique temporary file renamed into place) and ignores
// failures (the cache is an optimisation).
bool read_cache_file(const std::string& path, std::vector<char>& out);
void write_cache_file(const std::string& path, const std::vector<char>& data);

}  // namespace ember::cuda
