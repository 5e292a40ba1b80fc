#include "ember/core/dtype.hpp"

#include <array>

namespace ember {

static constexpr std::array<std::string_view, kNumDTypes> kNames = {"f64", "f32", "f16", "bf16", "i64",
                                                                      "i32", "i16", "i8",  "u8",   "bool"};

std::string_view dtype_name(DType dt) {
  auto i = static_cast<size_t>(dt);
  return i < kNames.size() ? kNames[i] : std::string_view("?");
}

DType dtype_from_name(std::string_view name) {
  for (size_t i = 0; i < kNames.size(); ++i)
    if (kNames[i] == name) return static_cast<DType>(i);
  EMBER_FAIL("unknown dtype name '", name, "' (expected one of f64 f32 f16 bf16 i64 i32 i16 i8 u8 bool)");
}

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  if (is_bool(a)) return b;
  if (is_bool(b)) return a;
  if (is_float(a) != is_float(b)) return is_float(a) ? a : b;
  if (is_float(a)) {
    // f16 + bf16 -> f32; otherwise the wider one.
    if ((a == DType::f16 && b == DType::bf16) || (a == DType::bf16 && b == DType::f16)) return DType::f32;
    return dtype_size(a) >= dtype_size(b) ? a : b;
  }
  // integers: u8 with a signed type needs the next wider signed type.
  if (a == DType::u8 || b == DType::u8) {
    DType s = a == DType::u8 ? b : a;
    return s == DType::i8 ? DType::i16 : s;
  }
  return dtype_size(a) >= dtype_size(b) ? a : b;
}

}  // namespace ember
