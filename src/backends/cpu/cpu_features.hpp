// Runtime CPU feature detection for the cpu backend's SIMD dispatch.
//
//   if (cpu::features().avx512) gemm_avx512(...); else if (cpu::features().avx2) ...
//
// Kernels compiled for a wider instruction set live in files named *_avx512.cpp or
// *_avx2.cpp; the build compiles those files (only) with the matching -m flags, so a
// caller must check features() before calling into them. EMBER_CPU_ISA=scalar|avx2|avx512
// in the environment caps the level (for testing every path on one machine); amx_int8 also needs
// EMBER_CPU_ISA unset or amx.
#pragma once

namespace ember::cpu {

struct CpuFeatures {
  bool avx2 = false;    // AVX2 + FMA
  bool avx512 = false;  // AVX-512 F, BW, DQ, VL
  bool avx512vnni = false;  // AVX-512 VNNI (vpdpbusd) on top of avx512
  bool amx_int8 = false;    // AMX tiles with tdpbusd on top of avx512vnni, and the kernel lets us use them
  bool amd = false;  // the vendor is AMD (for the few tuning choices measured to differ by vendor)
};

#if defined(__x86_64__)
const CpuFeatures& features();
#else
// Targets without x86 (wasm): none of the x86 kernel files is compiled, and features() is a
// constant, so every `if (features().avx512) ...` folds away with the call it guards.
inline constexpr CpuFeatures kNoX86Features{};
constexpr const CpuFeatures& features() { return kNoX86Features; }
#endif

}  // namespace ember::cpu
