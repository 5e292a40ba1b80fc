// 16-bit floating point storage types: f16 (IEEE binary16) and bf16 (bfloat16).
//
//   f16 h = f16(1.5f);  float x = float(h);
//   # run
//
// Conversions from float round to nearest, ties to even; NaN stays NaN; overflow gives inf.
// Arithmetic is done by converting to float (the backends compute half types in f32).
#pragma once

#include "ember/core/bit.hpp"
#include <cstdint>

namespace ember {

// IEEE binary16 (torch.float16): 1 sign, 5 exponent, 10 mantissa bits; a plain 2-byte value.
struct f16 {
  uint16_t bits = 0;  // the raw binary16 encoding
  f16() = default;  // +0
  explicit f16(float f) : bits(from_float(f)) {}  // f rounded to nearest even
  explicit f16(double d) : f16(static_cast<float>(d)) {}  // d, rounded to float first, then to f16
  explicit operator float() const { return to_float(bits); }  // the exact float value
  static f16 from_bits(uint16_t b) { f16 h; h.bits = b; return h; }  // the value with encoding b

  // The binary16 encoding of f: round to nearest even, NaN kept (quiet), overflow to inf.
  static uint16_t from_float(float f) {
    uint32_t x = ember::bit_cast<uint32_t>(f);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t abs = x & 0x7fffffffu;
    if (abs >= 0x7f800000u)  // inf or nan
      return static_cast<uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u | ((abs >> 13) & 0x3ffu) : 0u));
    if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to >= 65520: inf
    if (abs < 0x38800000u) {  // result is subnormal (or zero) in f16
      // value = abs_float; f16 subnormal unit is 2^-24. Scale mantissa with rounding.
      uint32_t exp = abs >> 23;
      if (exp < 102) return static_cast<uint16_t>(sign);  // < 2^-25: rounds to 0
      uint32_t mant = (abs & 0x7fffffu) | 0x800000u;
      uint32_t shift = 126 - exp;  // so that result = mant >> shift in units of 2^-24
      uint32_t q = mant >> shift;
      uint32_t rem = mant & ((1u << shift) - 1u);
      uint32_t half = 1u << (shift - 1);
      if (rem > half || (rem == half && (q & 1u))) ++q;
      return static_cast<uint16_t>(sign | q);
    }
    // normal: rebias exponent 127 -> 15, round mantissa 23 -> 10 bits
    uint32_t r = abs - 0x38000000u;  // exponent rebias (112 << 23)
    uint32_t q = r >> 13;
    uint32_t rem = r & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (q & 1u))) ++q;  // carry may overflow into inf: correct
    return static_cast<uint16_t>(sign | q);
  }
  // The float value of binary16 encoding h (exact: every f16 is a float).
  static float to_float(uint16_t h) {
    uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;
    uint32_t out;
    if (exp == 0x1f) {
      out = sign | 0x7f800000u | (mant << 13);
    } else if (exp == 0) {
      if (mant == 0) {
        out = sign;
      } else {  // subnormal: normalise
        float v = static_cast<float>(mant) * 0x1p-24f;
        return sign ? -v : v;
      }
    } else {
      out = sign | ((exp + 112) << 23) | (mant << 13);
    }
    return ember::bit_cast<float>(out);
  }
};

// bfloat16 (torch.bfloat16): the top 16 bits of a float (8 exponent, 7 mantissa bits); a plain 2-byte value.
struct bf16 {
  uint16_t bits = 0;  // the raw bfloat16 encoding
  bf16() = default;  // +0
  explicit bf16(float f) : bits(from_float(f)) {}  // f rounded to nearest even
  explicit bf16(double d) : bf16(static_cast<float>(d)) {}  // d, rounded to float first, then to bf16
  explicit operator float() const { return to_float(bits); }  // the exact float value
  static bf16 from_bits(uint16_t b) { bf16 h; h.bits = b; return h; }  // the value with encoding b

  // The bfloat16 encoding of f: round to nearest even, NaN kept (quiet).
  static uint16_t from_float(float f) {
    uint32_t x = ember::bit_cast<uint32_t>(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet nan
    uint32_t rounding = 0x7fffu + ((x >> 16) & 1u);
    return static_cast<uint16_t>((x + rounding) >> 16);
  }
  // The float value of bfloat16 encoding b (exact).
  static float to_float(uint16_t b) { return ember::bit_cast<float>(static_cast<uint32_t>(b) << 16); }
};

}  // namespace ember
