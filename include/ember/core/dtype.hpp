// Element types and the one dtype-dispatch helper.
//
//   DType dt = DType::f32;
//   visit_dtype(dt, [&]<class T>() { std::cout << sizeof(T); });   // T is float, f16, int64_t, bool, ...
//   # run
//
// Type promotion follows PyTorch (bool < integers < floating; see promote_types).
#pragma once

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string_view>

#include "ember/core/error.hpp"
#include "ember/core/half.hpp"

namespace ember {

// A tensor's element type: 64/32/16-bit IEEE floats, bfloat16, signed 64 to 8-bit integers, unsigned
// 8-bit integers and bool (torch.float64 ... torch.bool). The values are stable (serialised formats use them).
enum class DType : uint8_t { f64, f32, f16, bf16, i64, i32, i16, i8, u8, boolean };
inline constexpr int kNumDTypes = 10;  // the number of DType values

// Tensor kinds: the compile-time category of a Tensor<D, K>.
enum class Kind : uint8_t { Float, Int, Bool };

// Bytes per element (bool takes one byte).
constexpr size_t dtype_size(DType dt) {
  switch (dt) {
    case DType::f64: case DType::i64: return 8;
    case DType::f32: case DType::i32: return 4;
    case DType::f16: case DType::bf16: case DType::i16: return 2;
    case DType::i8: case DType::u8: case DType::boolean: return 1;
  }
  return 0;
}
// True for f64, f32, f16 and bf16 (torch.is_floating_point).
constexpr bool is_float(DType dt) { return dt == DType::f64 || dt == DType::f32 || dt == DType::f16 || dt == DType::bf16; }
constexpr bool is_int(DType dt) { return !is_float(dt) && dt != DType::boolean; }  // an integer type, u8 included
constexpr bool is_bool(DType dt) { return dt == DType::boolean; }  // DType::boolean
constexpr bool is_signed_int(DType dt) { return is_int(dt) && dt != DType::u8; }  // i64, i32, i16 or i8
// The tensor kind a dtype belongs to (Float, Int or Bool).
constexpr Kind kind_of(DType dt) { return is_float(dt) ? Kind::Float : is_int(dt) ? Kind::Int : Kind::Bool; }

std::string_view dtype_name(DType dt);         // "f32", "bool", ...
DType dtype_from_name(std::string_view name);  // inverse; throws Error on unknown names
inline std::ostream& operator<<(std::ostream& os, DType dt) { return os << dtype_name(dt); }  // writes dtype_name

// PyTorch's promotion of two tensor dtypes of the same priority (torch.promote_types): bool < integers
// < floats; the wider type of the same kind; u8 with i8 gives i16 and f16 with bf16 gives f32.
DType promote_types(DType a, DType b);
inline constexpr DType kDefaultFloat = DType::f32;  // the dtype of floating tensors made without one (torch's default)
inline constexpr DType kDefaultInt = DType::i64;  // the dtype of integer tensors made without one (arange, indices)

// The DType of C++ element type T, in `value`; defined for the ten element types only.
template <class T> struct dtype_of;
template <> struct dtype_of<double> { static constexpr DType value = DType::f64; };  // double: f64
template <> struct dtype_of<float> { static constexpr DType value = DType::f32; };  // float: f32
template <> struct dtype_of<f16> { static constexpr DType value = DType::f16; };  // f16: f16
template <> struct dtype_of<bf16> { static constexpr DType value = DType::bf16; };  // bf16: bf16
template <> struct dtype_of<int64_t> { static constexpr DType value = DType::i64; };  // int64_t: i64
template <> struct dtype_of<int32_t> { static constexpr DType value = DType::i32; };  // int32_t: i32
template <> struct dtype_of<int16_t> { static constexpr DType value = DType::i16; };  // int16_t: i16
template <> struct dtype_of<int8_t> { static constexpr DType value = DType::i8; };  // int8_t: i8
template <> struct dtype_of<uint8_t> { static constexpr DType value = DType::u8; };  // uint8_t: u8
template <> struct dtype_of<bool> { static constexpr DType value = DType::boolean; };  // bool: boolean
template <class T> inline constexpr DType dtype_v = dtype_of<T>::value;  // dtype_of<T>::value

// The type a kernel computes in: float for the 16-bit floats, the type itself otherwise.
template <class T> struct compute_type { using type = T; };
template <> struct compute_type<f16> { using type = float; };  // f16 computes in float
template <> struct compute_type<bf16> { using type = float; };  // bf16 computes in float
template <class T> using compute_t = typename compute_type<T>::type;  // compute_type<T>::type

// True for the 16-bit float types f16 and bf16.
template <class T> constexpr bool is_half_v = std::is_same_v<T, f16> || std::is_same_v<T, bf16>;
// True for the C++ floating types and the 16-bit ones.
template <class T> constexpr bool is_floating_v = std::is_floating_point_v<T> || is_half_v<T>;

// Converts between element types with C++/PyTorch semantics (half types through float).
template <class To, class From>
inline To convert_scalar(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (is_half_v<From>) {
    return convert_scalar<To>(static_cast<float>(v));
  } else if constexpr (is_half_v<To>) {
    if constexpr (std::is_same_v<From, bool>) return To(v ? 1.0f : 0.0f);
    else return To(static_cast<float>(v));
  } else if constexpr (std::is_same_v<To, bool>) {
    return v != From(0);
  } else {
    return static_cast<To>(v);
  }
}

// Calls `f.template operator()<T>()` with T the C++ type of `dt` (double, float, f16, bf16, int64_t,
// int32_t, int16_t, int8_t, uint8_t, bool) and returns its result; every branch must return the same type.
template <class F>
decltype(auto) visit_dtype(DType dt, F&& f) {
  switch (dt) {
    case DType::f64: return f.template operator()<double>();
    case DType::f32: return f.template operator()<float>();
    case DType::f16: return f.template operator()<f16>();
    case DType::bf16: return f.template operator()<bf16>();
    case DType::i64: return f.template operator()<int64_t>();
    case DType::i32: return f.template operator()<int32_t>();
    case DType::i16: return f.template operator()<int16_t>();
    case DType::i8: return f.template operator()<int8_t>();
    case DType::u8: return f.template operator()<uint8_t>();
    case DType::boolean: return f.template operator()<bool>();
  }
  EMBER_FAIL("visit_dtype: invalid dtype ", static_cast<int>(dt));
}

// Dispatch restricted to floating types; others raise an Error naming `op`.
template <class F>
decltype(auto) visit_float_dtype(DType dt, std::string_view op, F&& f) {
  switch (dt) {
    case DType::f64: return f.template operator()<double>();
    case DType::f32: return f.template operator()<float>();
    case DType::f16: return f.template operator()<f16>();
    case DType::bf16: return f.template operator()<bf16>();
    default: EMBER_FAIL(op, ": expected a floating dtype, got ", dtype_name(dt));
  }
}

}  // namespace ember
