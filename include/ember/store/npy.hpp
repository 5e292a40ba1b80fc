// NumPy .npy files (https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html):
// the magic "\x93NUMPY", a format version (1.0, 2.0 or 3.0), a little-endian header length
// (2 bytes for 1.0, 4 bytes otherwise), a Python dict literal
//   {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
// padded with spaces and a newline, then the array's bytes.
//
//   # TensorData y = TensorData::from_vector<float>({1, 2, 3}, Shape{3});
//   TensorData x = store::read_npy("x.npy");           // what np.save wrote
//   store::write_npy("y.npy", y);                       // np.load reads it back
//
// Reading accepts the descrs '<f2' '<f4' '<f8' '|i1' '<i2' '<i4' '<i8' '|u1' '|b1' ('?'), in
// either byte order ('>' data is byte-swapped; '=' means little-endian), C order or Fortran
// order (transposed into row-major on load), and 0-d arrays (shape ()). Everything is
// validated: the magic, the version, the header length against the file, the dict's syntax
// and keys, the dtype (unsigned types wider than a byte, complex, strings, objects and
// structured dtypes have no ember dtype and are refused by name), ranks above 64, negative
// dims, element counts that overflow, and the data size, which must match the file exactly.
// Each problem is an ember::Error naming the file. Bool bytes other than 0 read as true.
//
// Writing produces format 1.0 (2.0 when the header needs it), little-endian, C order, with
// the header padded so the data starts at a multiple of 64 bytes, like np.save. bf16 has no
// NumPy dtype: bf16 tensors are written as float32 ('<f4'). Saving is atomic (a temporary
// file next to the destination, fsynced, then renamed over it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ember/core/tensor_data.hpp"

namespace ember::store {

// Headers longer than this are refused before anything is allocated (np.load's default
// limit is 10,000 bytes).
inline constexpr uint64_t kMaxNpyHeaderBytes = 1u << 20;

// The array of a .npy file, validated as described above.
TensorData read_npy(const std::string& path);
// Writes `data` to `path` as a .npy file, atomically (bf16 as float32).
void write_npy(const std::string& path, const TensorData& data);

// The same format in memory; `source` names the buffer in error messages.
TensorData read_npy_from_memory(std::span<const std::byte> bytes, std::string_view source = "<memory>");
std::vector<std::byte> write_npy_to_memory(const TensorData& data);  // the bytes write_npy writes

// The dtype write_npy stores a tensor of `dtype` as (bf16 -> f32; every other dtype as is),
// and the NumPy name of a dtype ("float32", "int64", "bool", ...; "bfloat16" for bf16).
DType npy_stored_dtype(DType dtype);
std::string_view npy_dtype_name(DType dtype);  // NumPy's name of `dtype`

}  // namespace ember::store
