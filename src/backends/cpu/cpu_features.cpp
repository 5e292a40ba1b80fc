#include "cpu_features.hpp"

#include <cstdlib>
#include <string_view>

#if defined(__x86_64__)
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace ember::cpu {

#if defined(__x86_64__)

// AMX-TILE and AMX-INT8 (CPUID.(7, 0):EDX bits 24 and 25), the OS saving the tile state (XCR0
// bits 17 and 18), and Linux granting this process the tile data (arch_prctl ARCH_REQ_XCOMP_PERM
// for XFEATURE_XTILEDATA, Linux 5.16 on); a tile instruction without that grant is a SIGILL.
static bool amx_int8_usable() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(d & (1u << 24)) || !(d & (1u << 25))) return false;
  if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27))) return false;  // OSXSAVE
  unsigned lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  if ((lo & (3u << 17)) != (3u << 17)) return false;
  constexpr long kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
}

static CpuFeatures detect() {
  CpuFeatures f;
  __builtin_cpu_init();
  f.avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  f.avx512 = f.avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
  f.avx512vnni = f.avx512 && __builtin_cpu_supports("avx512vnni");
  f.amd = __builtin_cpu_is("amd");
  const char* cap = std::getenv("EMBER_CPU_ISA");
  f.amx_int8 = f.avx512vnni && (!cap || std::string_view(cap) == "amx") && amx_int8_usable();
  if (cap) {
    std::string_view c(cap);
    if (c == "scalar") f.avx2 = f.avx512 = false;
    if (c == "avx2") f.avx512 = false;
    f.avx512vnni = f.avx512vnni && f.avx512;
    f.amx_int8 = f.amx_int8 && f.avx512vnni;
  }
  return f;
}

const CpuFeatures& features() {
  static const CpuFeatures f = detect();
  return f;
}

#endif  // __x86_64__ (elsewhere features() is a constant: cpu_features.hpp)

}  // namespace ember::cpu
