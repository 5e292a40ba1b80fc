#include "jit.hpp"

#include "ember/core/atomic_write.hpp"
#include "ember/core/hash.hpp"

#include <nvrtc.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "autotune.hpp"
#include "runtime.hpp"

namespace ember::cuda {

namespace {

const char* kPrelude = R"CUDA(
typedef long long int64_t;
typedef unsigned long long uint64_t;
typedef int int32_t;
typedef unsigned int uint32_t;
typedef short int16_t;
typedef unsigned short uint16_t;
typedef signed char int8_t;
typedef unsigned char uint8_t;

// f16 and bf16 storage types: arithmetic happens in float (they convert implicitly). Every
// conversion to them goes through float (round to nearest even), as PyTorch's does.
struct half_t {
  uint16_t bits;
  half_t() = default;
  __device__ half_t(float f) { asm("cvt.rn.f16.f32 %0, %1;" : "=h"(bits) : "f"(f)); }
  __device__ half_t(double d) : half_t(float(d)) {}
  __device__ half_t(bool v) : half_t(float(v)) {}
  __device__ half_t(int8_t v) : half_t(float(v)) {}
  __device__ half_t(uint8_t v) : half_t(float(v)) {}
  __device__ half_t(int16_t v) : half_t(float(v)) {}
  __device__ half_t(uint16_t v) : half_t(float(v)) {}
  __device__ half_t(int v) : half_t(float(v)) {}
  __device__ half_t(unsigned v) : half_t(float(v)) {}
  __device__ half_t(long v) : half_t(float(v)) {}
  __device__ half_t(long long v) : half_t(float(v)) {}
  __device__ half_t(unsigned long long v) : half_t(float(v)) {}
  __device__ operator float() const { float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(bits)); return f; }
  static __device__ half_t from_bits(uint16_t b) { half_t h; h.bits = b; return h; }
};
struct bf16_t {
  uint16_t bits;
  bf16_t() = default;
  __device__ bf16_t(float f) { asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(bits) : "f"(f)); }
  __device__ bf16_t(double d) : bf16_t(float(d)) {}
  __device__ bf16_t(bool v) : bf16_t(float(v)) {}
  __device__ bf16_t(int8_t v) : bf16_t(float(v)) {}
  __device__ bf16_t(uint8_t v) : bf16_t(float(v)) {}
  __device__ bf16_t(int16_t v) : bf16_t(float(v)) {}
  __device__ bf16_t(uint16_t v) : bf16_t(float(v)) {}
  __device__ bf16_t(int v) : bf16_t(float(v)) {}
  __device__ bf16_t(unsigned v) : bf16_t(float(v)) {}
  __device__ bf16_t(long v) : bf16_t(float(v)) {}
  __device__ bf16_t(long long v) : bf16_t(float(v)) {}
  __device__ bf16_t(unsigned long long v) : bf16_t(float(v)) {}
  __device__ operator float() const { return __uint_as_float(uint32_t(bits) << 16); }
  static __device__ bf16_t from_bits(uint16_t b) { bf16_t h; h.bits = b; return h; }
};

__device__ __forceinline__ float ember_inf() { return __int_as_float(0x7f800000); }
__device__ __forceinline__ float ember_nan() { return __int_as_float(0x7fc00000); }
__device__ __forceinline__ double ember_inf_d() { return __longlong_as_double(0x7ff0000000000000LL); }
__device__ __forceinline__ double ember_nan_d() { return __longlong_as_double(0x7ff8000000000000LL); }

template <class T> struct ember_compute { typedef T type; };  // arithmetic type of a storage type
template <> struct ember_compute<half_t> { typedef float type; };
template <> struct ember_compute<bf16_t> { typedef float type; };
template <class T> struct ember_is_float { static const bool value = false; };
template <> struct ember_is_float<float> { static const bool value = true; };
template <> struct ember_is_float<double> { static const bool value = true; };
template <> struct ember_is_float<half_t> { static const bool value = true; };
template <> struct ember_is_float<bf16_t> { static const bool value = true; };
template <class T> struct ember_is_int { static const bool value = false; };
template <> struct ember_is_int<int64_t> { static const bool value = true; };
template <> struct ember_is_int<int32_t> { static const bool value = true; };
template <> struct ember_is_int<int16_t> { static const bool value = true; };
template <> struct ember_is_int<int8_t> { static const bool value = true; };
template <> struct ember_is_int<uint8_t> { static const bool value = true; };

// Conversion with PyTorch's (x86) rules, as the CPU backend's cast: floating -> int64 truncates
// (NaN / out of range: INT64_MIN); floating -> narrower ints truncates to int32 first (NaN / out
// of range: INT32_MIN) and wraps; ints wrap modulo 2^bits; anything -> bool is x != 0.
template <class To, class From>
__device__ __forceinline__ To cast_value(From v) {
  if constexpr (ember_is_float<From>::value && ember_is_int<To>::value) {
    typedef typename ember_compute<From>::type C;
    C d = C(v);
    if constexpr (sizeof(To) == 8) {
      bool ok = d >= C(-9223372036854775808.0) && d < C(9223372036854775808.0);
      return ok ? To((long long)d) : To((long long)0x8000000000000000ULL);
    } else {
      bool ok = d > C(-2147483649.0) && d < C(2147483648.0);
      int i = ok ? int(d) : int(0x80000000u);
      return To((unsigned)i);
    }
  } else if constexpr (ember_is_int<From>::value && ember_is_int<To>::value) {
    return To(v);
  } else {
    return To(v);
  }
}

// Iteration spaces and operand strides (host: ShapeArg / StridesArg in cuda_tensor.hpp).
#define EMBER_MAX_RANK 8
// Kernel parameters of these types are declared EMBER_GC: read in place (__grid_constant__,
// sm_70 and later) where a kernel indexes them by a loop variable or passes them by reference,
// instead of being copied to every thread's local memory first (136-272 bytes a thread: at
// [64M] f32 that copy took a sum from 67 to 78 us on an H200).
#if __CUDA_ARCH__ >= 700
#define EMBER_GC const __grid_constant__
#else
#define EMBER_GC const
#endif
struct Shape {
  int rank;
  int pad;
  int64_t size[EMBER_MAX_RANK];
};
struct Strides {
  int64_t v[EMBER_MAX_RANK];
};
// Element offset of the row-major linear index `i` of `sh` in an operand with strides `s`.
// The loops are unrolled over the fixed maximum rank so that the argument arrays are indexed
// by constants (a run-time index would copy them to local memory in every thread).
__device__ __forceinline__ int64_t offset_of(int64_t i, const Shape& sh, const Strides& s) {
  int64_t off = 0;
#pragma unroll
  for (int d = EMBER_MAX_RANK - 1; d >= 0; --d) {
    if (d < sh.rank) {
      int64_t q = i / sh.size[d];
      off += (i - q * sh.size[d]) * s.v[d];
      i = q;
    }
  }
  return off;
}
// The same with 32-bit index arithmetic (the caller checks that numel < 2^31).
__device__ __forceinline__ int64_t offset_of32(uint32_t i, const Shape& sh, const Strides& s) {
  int64_t off = 0;
#pragma unroll
  for (int d = EMBER_MAX_RANK - 1; d >= 0; --d) {
    if (d < sh.rank) {
      uint32_t n = uint32_t(sh.size[d]);
      uint32_t q = i / n;
      off += int64_t(i - q * n) * s.v[d];
      i = q;
    }
  }
  return off;
}
)CUDA";

void nvrtc_check(nvrtcResult r, const char* what) {
  if (r != NVRTC_SUCCESS) throw Error(std::string("cuda: ") + what + " failed: " + nvrtcGetErrorString(r));
}

// "name(LINE): error: ..." -> the first error line of the log and the source line it names.
std::string explain_log(std::string_view name, const std::string& log, const std::string& full_source) {
  std::ostringstream os;
  std::string first_error;
  std::istringstream in(log);
  for (std::string line; std::getline(in, line);) {
    if (line.find("error") != std::string::npos) {
      first_error = line;
      break;
    }
  }
  if (first_error.empty()) first_error = log.substr(0, 400);
  os << first_error;
  size_t open = first_error.find('(');
  size_t close = first_error.find(')', open == std::string::npos ? 0 : open);
  if (open != std::string::npos && close != std::string::npos) {
    int line_no = std::atoi(first_error.c_str() + open + 1);
    std::istringstream src(full_source);
    std::string text;
    for (int i = 1; std::getline(src, text); ++i) {
      if (i == line_no) {
        os << "\n  generated source line " << line_no << ": " << text;
        break;
      }
    }
  }
  (void)name;
  return os.str();
}

bool make_dirs(const std::string& path) {
  for (size_t i = 1; i <= path.size(); ++i) {
    if (i == path.size() || path[i] == '/') {
      std::string p = path.substr(0, i);
      if (::mkdir(p.c_str(), 0755) != 0 && errno != EEXIST) return false;
    }
  }
  return true;
}

}  // namespace

const std::string& async_copy_helpers() {
  static const std::string s = R"CUDA(
__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  uint32_t r;
  asm("{ .reg .u64 a; cvta.to.shared.u64 a, %1; cvt.u32.u64 %0, a; }" : "=r"(r) : "l"(p));
  return r;
}
// 16-byte global -> shared copy; zero fill when !pred (src is then not read).
__device__ __forceinline__ void cp_async16(uint32_t dst, const void* src, bool pred) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(pred ? 16 : 0) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
// All but the N most recently committed groups have landed.
template <int N>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory"); }
)CUDA";
  return s;
}

const std::string& kernel_prelude() {
  static const std::string s(kPrelude);
  return s;
}

const char* device_type(DType dt) {
  switch (dt) {
    case DType::f64: return "double";
    case DType::f32: return "float";
    case DType::f16: return "half_t";
    case DType::bf16: return "bf16_t";
    case DType::i64: return "int64_t";
    case DType::i32: return "int32_t";
    case DType::i16: return "int16_t";
    case DType::i8: return "int8_t";
    case DType::u8: return "uint8_t";
    case DType::boolean: return "bool";
  }
  return "void";
}

const char* compute_type(DType dt) {
  return (dt == DType::f16 || dt == DType::bf16) ? "float" : device_type(dt);
}

// ---- the disk cache's files ----
// A file is "EMBC", the payload's size (8 bytes, little-endian), its FNV-1a hash (8 bytes), then
// the payload. A file that is short, long, or fails the hash (an interrupted write by a process
// that died, a disk error, someone else's file) reads as absent: the kernel is compiled again
// and the file rewritten. Writes go to a unique temporary file renamed over the target, so
// processes sharing the directory never see half a file.
namespace {
constexpr char kCacheMagic[4] = {'E', 'M', 'B', 'C'};
constexpr size_t kCacheHeader = 4 + 8 + 8;
uint64_t bytes_hash(const char* p, size_t n) { return fnv1a(std::string_view(p, n)); }
}  // namespace

bool read_cache_file(const std::string& path, std::vector<char>& out) {
  out.clear();
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  std::vector<char> all((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (all.size() < kCacheHeader || std::memcmp(all.data(), kCacheMagic, 4) != 0) return false;
  uint64_t size = 0, hash = 0;
  std::memcpy(&size, all.data() + 4, 8);
  std::memcpy(&hash, all.data() + 12, 8);
  if (size == 0 || size != all.size() - kCacheHeader || hash != bytes_hash(all.data() + kCacheHeader, size)) return false;
  out.assign(all.begin() + kCacheHeader, all.end());
  return true;
}

void write_cache_file(const std::string& path, const std::vector<char>& data) {
  const uint64_t size = data.size(), hash = bytes_hash(data.data(), data.size());
  std::string file(kCacheMagic, 4);
  file.append(reinterpret_cast<const char*>(&size), 8);
  file.append(reinterpret_cast<const char*>(&hash), 8);
  file.append(data.data(), data.size());
  (void)write_file_atomically(path, file);  // a cache: not written is only slower next time
}

std::string cache_dir() {
  static const std::string dir = [] {
    std::string d;
    if (const char* e = std::getenv("EMBER_CACHE_DIR"); e && *e) d = e;
    else if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) d = std::string(x) + "/ember";
    else if (const char* h = std::getenv("HOME"); h && *h) d = std::string(h) + "/.cache/ember";
    if (!d.empty() && !make_dirs(d)) d.clear();
    return d;
  }();
  return dir;
}

std::vector<char> compile_cubin(std::string_view name, const std::string& source, int arch) {
  std::string full = kernel_prelude() + source;
  nvrtcProgram prog = nullptr;
  std::string file = std::string(name) + ".cu";
  for (char& c : file)
    if (c == '/' || c == ' ') c = '_';
  nvrtc_check(nvrtcCreateProgram(&prog, full.c_str(), file.c_str(), 0, nullptr, nullptr), "nvrtcCreateProgram");
  std::string arch_opt = "--gpu-architecture=sm_" + std::to_string(arch);
  // EMBER_JIT_VERBOSE=1 (diagnostics): ptxas prints each kernel's registers, spills and
  // shared memory to stderr
  static const bool verbose = [] {
    const char* e = std::getenv("EMBER_JIT_VERBOSE");
    return e && *e == '1';
  }();
  const char* opts[] = {arch_opt.c_str(), "--std=c++17", "-default-device", "--ptxas-options=-v"};
  nvrtcResult r = nvrtcCompileProgram(prog, verbose ? 4 : 3, opts);
  if (verbose && r == NVRTC_SUCCESS) {
    size_t n = 0;
    nvrtcGetProgramLogSize(prog, &n);
    std::string log(n, '\0');
    if (n) nvrtcGetProgramLog(prog, log.data());
    std::fprintf(stderr, "[ember jit] %.*s\n%s\n", int(name.size()), name.data(), log.c_str());
  }
  if (r != NVRTC_SUCCESS) {
    size_t n = 0;
    nvrtcGetProgramLogSize(prog, &n);
    std::string log(n, '\0');
    if (n) nvrtcGetProgramLog(prog, log.data());
    nvrtcDestroyProgram(&prog);
    throw Error(std::string(name) + ": generated CUDA kernel failed to compile (NVRTC): " +
                explain_log(name, log, full));
  }
  size_t n = 0;
  nvrtc_check(nvrtcGetCUBINSize(prog, &n), "nvrtcGetCUBINSize");
  std::vector<char> cubin(n);
  nvrtc_check(nvrtcGetCUBIN(prog, cubin.data()), "nvrtcGetCUBIN");
  nvrtcDestroyProgram(&prog);
  std::string path = disk_cache_path(source, arch);
  if (!path.empty()) write_cache_file(path, cubin);
  return cubin;
}

std::string disk_cache_path(const std::string& source, int arch) {
  std::string dir = cache_dir();
  if (dir.empty() || !make_dirs(dir + "/cuda")) return "";
  // what else decides the cubin, or whether the driver takes it: the compiler, the driver (0
  // without one: a cache warmed on a machine without a driver is not used with one) and ember
  static const std::string environment = [] {
    int major = 0, minor = 0, driver = 0;
    nvrtcVersion(&major, &minor);
    if (cudaDriverGetVersion(&driver) != cudaSuccess) driver = 0;
    return " nvrtc " + std::to_string(major) + "." + std::to_string(minor) + " driver " + std::to_string(driver) +
           " ember " + ember_version();
  }();
  uint64_t h = fnv1a(kernel_prelude());
  h = fnv1a(source, h);
  h = fnv1a("sm_" + std::to_string(arch) + environment, h);
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  return dir + "/cuda/" + hex + ".cubin";
}

Jit::Jit(int device, int arch) : device_(device), arch_(arch) {}

Jit::~Jit() {
  for (auto& [k, m] : modules_) (void)driver().cuModuleUnload(m.module);
}

Jit::Module& Jit::module_for(const std::string& key, const std::function<std::string()>& make_source) {
  auto it = modules_.find(key);
  if (it != modules_.end()) return it->second;
  std::string source = make_source();
  std::string path = disk_cache_path(source, arch_);
  std::vector<char> cubin;
  const bool from_disk = !path.empty() && read_cache_file(path, cubin);
  if (from_disk) {
    ++disk_hits_;
  } else {
    cubin = compile_cubin(key, source, arch_);
    ++compiles_;
  }
  set_device(device_);
  CUmodule m = nullptr;
  if (from_disk && driver().cuModuleLoadData(&m, cubin.data()) != CUDA_SUCCESS) {
    // a cached cubin the driver refuses (made for another driver or toolkit): compile again,
    // which rewrites the file
    m = nullptr;
    cubin = compile_cubin(key, source, arch_);
    ++compiles_;
  }
  if (!m) EMBER_CU_CHECK(driver().cuModuleLoadData(&m, cubin.data()));
  Module& mod = modules_[key];
  mod.module = m;
  return mod;
}

// Called for every launch: a hash lookup of the key (no allocation) and a scan of the few
// entries of its module.
CUfunction Jit::get(const std::string& key, const char* entry, const std::function<std::string()>& make_source) {
  std::lock_guard<std::mutex> lock(mu_);
  Module& m = module_for(key, make_source);
  for (const auto& [name, f] : m.functions)
    if (name == entry) return f;
  CUfunction f = nullptr;
  CUresult r = driver().cuModuleGetFunction(&f, m.module, entry);
  if (r != CUDA_SUCCESS) throw Error(key + ": generated module has no kernel named " + entry);
  m.functions.emplace_back(entry, f);
  return f;
}

}  // namespace ember::cuda
