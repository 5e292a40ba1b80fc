// The pieces every generated compute shader is made of: the header (version, the extensions
// its dtypes need, the workgroup size, the KernelParams block at binding 6 and the index
// function), buffer declarations, and loads/stores between a dtype's storage type and the type
// kernels compute in (float for f32/f16/bf16, double, int64_t, int for the narrower integers
// and bool). bf16 is stored as uint16_t bits and rounded to nearest even on store, as the CPU
// backend does.
#pragma once

#include <string>
#include <vector>

#include "ember/core/dtype.hpp"

namespace ember::vulkan::glsl {

inline constexpr int kLocalSize = 128;  // invocations per workgroup of the generic kernels

// The backend's error record at binding 7 and ember_record_error(op, dim, index, size), which
// keeps the first bad index a kernel meets (read()/sync() raise it); needs int64.
extern const char* const kErrorRecord;
std::string storage_type(DType dt);  // the element type of a buffer of dt
std::string compute_type(DType dt);  // the type a kernel computes dt in
// "#version 450", the extensions for `dtypes`, local_size_x, the parameter block `p` (binding 6), the math
// helpers and ember_index(i, k): the element of operand k at linear index i. Without
// `generic_params` the kernel declares its own parameter block at binding 6.
std::string header(const std::vector<DType>& dtypes, bool generic_params = true);
// layout(std430, binding = b) buffer B<b> { T name[]; };
std::string buffer(int binding, DType dt, const std::string& name, bool readonly);
// The same for raw elements of `bytes` bytes (1, 2, 4 or 8; 8 as uvec2), for copies.
std::string raw_buffer(int binding, size_t bytes, const std::string& name, bool readonly);
std::string raw_type(size_t bytes);
// `e` (a storage value of dt) in the compute type, and back (e of the compute type).
std::string load(DType dt, const std::string& e);
std::string store(DType dt, const std::string& e);
// `e`, a value of from's compute type, converted to to's compute type by PyTorch's rules (the
// CPU backend's cast): floating -> integer truncates (NaN and out of range give the minimum of
// int64, or of int32 then wrapped); anything -> bool is x != 0.
std::string convert(DType from, DType to, const std::string& e);

}  // namespace ember::vulkan::glsl
