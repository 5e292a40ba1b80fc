// FNV-1a, 64-bit: the cheap, stable hash of ember's cache keys and cache-file checksums
// (kernel cache, autotune store, fused-kernel names). Not for anything adversarial.
//
//   uint64_t h = ember::fnv1a("sm_90");
//   # std::string source = "extern \"C\" __global__ void k() {}";
//   h = ember::fnv1a(source, h);  // continues the hash over more bytes
//   # run
#pragma once

#include <cstdint>
#include <string_view>

namespace ember {

inline constexpr uint64_t kFnv1aOffset = 0xcbf29ce484222325ULL;  // FNV-1a's 64-bit offset basis: the empty hash

// Hashes the bytes of `s` into `h` (start: the offset basis; pass a previous result to continue).
inline uint64_t fnv1a(std::string_view s, uint64_t h = kFnv1aOffset) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

}  // namespace ember
