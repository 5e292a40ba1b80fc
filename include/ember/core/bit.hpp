// ember::bit_cast: std::bit_cast's meaning (the object representation of `from`, read as a To),
// built on the compiler's builtin. The standard library of the wasm build (emscripten 3.1.6's
// libc++) has no std::bit_cast; GCC and Clang both have the builtin.
//
//   uint32_t bits = ember::bit_cast<uint32_t>(1.0f);  // 0x3f800000
//   # run
#pragma once

#include <type_traits>

namespace ember {

// The bits of `from` as a To (std::bit_cast).
template <class To, class From>
  requires(sizeof(To) == sizeof(From) && std::is_trivially_copyable_v<To> && std::is_trivially_copyable_v<From>)
constexpr To bit_cast(const From& from) noexcept {
  return __builtin_bit_cast(To, from);
}

}  // namespace ember
