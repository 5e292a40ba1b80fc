#include "cpu_features.hpp"

#include <cstdlib>
#include <string_view>

namespace ember::cpu {

static CpuFeatures detect() {
  CpuFeatures f;
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  f.avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  f.avx512 = f.avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
  f.avx512vnni = f.avx512 && __builtin_cpu_supports("avx512vnni");
#endif
  if (const char* cap = std::getenv("EMBER_CPU_ISA")) {
    std::string_view c(cap);
    if (c == "scalar") f.avx2 = f.avx512 = false;
    if (c == "avx2") f.avx512 = false;
    f.avx512vnni = f.avx512vnni && f.avx512;
  }
  return f;
}

const CpuFeatures& features() {
  static const CpuFeatures f = detect();
  return f;
}

}  // namespace ember::cpu
