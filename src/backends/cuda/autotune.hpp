// Autotune winners that persist across processes: the cuBLASLt algorithm of a matrix product,
// the cuDNN plan or algorithm of a convolution (later: the variant of a fused kernel).
//
//   AutotuneStore& s = autotune_store("cublaslt", autotune_environment(be.props(), "cublasLt 130000"));
//   if (auto v = s.get(problem_key)) ...use *v...  else { time the candidates; s.put(problem_key, winner); }
//
// One file per kind, <cache_dir>/autotune-<kind>.txt. Its first line names the environment the
// winners were measured in (GPU model, compute capability, driver, CUDA runtime, the library's
// version, ember's version); a file written in another environment is ignored as a whole and
// replaced at the next write. Every other line is "<key>\t<value>\t<checksum>"; a line that does
// not check (a truncated or damaged file, garbage) is skipped, never fatal. Writes read the file,
// merge in this process's winners, write a temporary file unique to the process and the write
// (pid + counter) in the same directory and rename it over the file, so processes sharing the
// directory never see a partial file (two writing at once may lose one's update: it is timed
// again later). A GPU with another model in the same process keeps its own winners in memory; the
// file holds one environment at a time.
//
// Autotuning is on by default. EMBER_AUTOTUNE=off (or 0, false) turns it off at start-up: each
// library's first choice runs, nothing is timed and no saved winner is read. EMBER_CUDA_AUTOTUNE=0
// is the older name for the same; ember::cuda::set_autotune changes it at run time.
// EMBER_AUTOTUNE_VERBOSE=1 prints each problem that is timed or takes a saved winner.
//
// The file functions take the directory and the environment key as strings, so they are
// tested without a GPU.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

namespace ember::cuda {

// "<dir>/autotune-<kind>.txt"
std::string autotune_file_path(const std::string& dir, std::string_view kind);

// The entries of the file at `path` written for environment `env`: empty when the file is
// missing, unreadable, or written for another environment; lines that fail their checksum are
// skipped. Never throws.
std::map<std::string, std::string> read_autotune_file(const std::string& path, const std::string& env);
// The same for the file's contents `text` (may throw std::bad_alloc).
std::map<std::string, std::string> parse_autotune_text(std::string_view text, const std::string& env);

// Writes `entries` for `env` to `path` atomically (a unique temporary file in the same
// directory, renamed over `path`). False, with nothing left behind, on failure. Never throws.
// Tabs and line breaks in keys and values are written as spaces.
bool write_autotune_file(const std::string& path, const std::string& env,
                         const std::map<std::string, std::string>& entries);

// The winners of one kind for one environment, in memory and (when `dir` is not empty) on disk.
// Thread-safe. The file is read on first use.
class AutotuneStore {
 public:
  AutotuneStore(std::string dir, std::string_view kind, std::string env);
  AutotuneStore(const AutotuneStore&) = delete;
  AutotuneStore& operator=(const AutotuneStore&) = delete;

  std::optional<std::string> get(const std::string& key);
  // Keeps `value` for `key` and writes the file: what is on disk now, merged with every entry
  // this store has put (a write by another process in between is kept where the keys differ).
  void put(const std::string& key, const std::string& value);

  const std::string& path() const { return path_; }
  const std::string& environment() const { return env_; }

 private:
  void load_locked();
  std::mutex mu_;
  std::string path_, env_;
  bool loaded_ = false;
  std::map<std::string, std::string> entries_;  // the file's when loaded, and this store's
  std::map<std::string, std::string> mine_;     // put through this store
};

// The process-wide store of `kind` for `env`, in cache_dir() (memory only when there is none).
AutotuneStore& autotune_store(std::string_view kind, const std::string& env);

// The environment key of winners measured on the GPU `props` with `library` (e.g. "cuDNN 91100"):
// "<name> sm_<major><minor> driver <v> runtime <v> <library> ember <version>".
std::string autotune_environment(const cudaDeviceProp& props, std::string_view library);

// The start-up setting: EMBER_AUTOTUNE's value when set (off, 0, false, no turn autotuning off;
// any other value turns it on), else EMBER_CUDA_AUTOTUNE's (0 turns it off). Null: unset.
bool autotune_setting(const char* ember_autotune, const char* ember_cuda_autotune);

// EMBER_AUTOTUNE_VERBOSE=1 (diagnostics): "[ember autotune] <kind> <what>: <key>" on stderr for
// each problem that is timed ("timed") or takes a saved winner ("saved").
void autotune_note(std::string_view kind, std::string_view what, const std::string& key);

// ember's version (ember::version(), include/ember/version.hpp): part of the autotune and JIT
// cache keys, so that a new version re-tunes and recompiles.
const char* ember_version();

}  // namespace ember::cuda
