// safetensors: ember's native model file (https://github.com/huggingface/safetensors format):
// an 8-byte little-endian header length N, N bytes of JSON
//   {"__metadata__": {"k": "v"}, "name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]}, ...}
// then the tensors' bytes (little-endian, row-major, offsets relative to the end of the header).
//
//   # DynTensor w = randn({2, 3}), b = DynTensor::zeros({2});
//   store::save_safetensors("model.safetensors", {{"weight", w}, {"bias", b}}, {{"epoch", "3"}});
//   store::TensorMap m = store::load_safetensors("model.safetensors");
//   store::SafetensorsHeader h = store::read_safetensors_header("model.safetensors");  // no data read
//   # run
//
// Saving is atomic: the file is written next to its destination under a temporary name,
// fsynced, then renamed over it, so a crash or an error leaves the previous file intact.
// The writer lists tensors by name in the header, pads it with spaces to a multiple of 8 bytes,
// and lays the data out widest dtype first (then by name), so each tensor is aligned to its
// element size in the file.
// Loading maps the file read-only and validates everything (header length, JSON, dtypes,
// shapes against byte ranges, ranges that must tile the data buffer exactly, duplicate names);
// each problem is an ember::Error naming the file and the tensor. BOOL bytes other than 0
// read as true.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ember/store/tensor_map.hpp"

namespace ember::store {

// One tensor's entry of a safetensors header. Offsets count from the start of the data
// buffer (file offset header.data_offset).
struct SafetensorsTensorInfo {
  std::string name;  // its key in the file
  DType dtype = DType::f32;  // element type
  Shape shape;  // sizes per dim
  uint64_t data_begin = 0;  // offset of its first byte
  uint64_t data_end = 0;  // offset one past its last byte
};

// A safetensors file's header, as read_safetensors_header gives it.
struct SafetensorsHeader {
  std::vector<SafetensorsTensorInfo> tensors;  // sorted by name
  std::map<std::string, std::string> metadata;  // the `__metadata__` strings
  uint64_t data_offset = 0;  // 8 + header length: where the data buffer starts in the file
};

// Headers longer than this are refused before anything is allocated.
inline constexpr uint64_t kMaxSafetensorsHeaderBytes = 100ull << 20;

// Writes `tensors` and the string `metadata` to `path`, atomically (see above); throws ember::Error for an
// undefined tensor or one named `__metadata__`.
void save_safetensors(const std::string& path, const TensorMap& tensors,
                      const std::map<std::string, std::string>& metadata = {});
// The tensors of a safetensors file, in the header's (name) order, on `device`; where the backend can, they
// use the read-only mapping of the file in place instead of a copy.
TensorMap load_safetensors(const std::string& path, const Device& device = Device::default_device());
// Reads and validates the header only (names, dtypes, shapes, offsets, metadata).
SafetensorsHeader read_safetensors_header(const std::string& path);

// The same format in memory (embedded resources, network buffers, tests). `source` names the
// buffer in error messages.
std::vector<std::byte> save_safetensors_to_memory(const TensorMap& tensors,
                                                  const std::map<std::string, std::string>& metadata = {});
// The tensors of a safetensors file's bytes, copied onto `device`.
TensorMap load_safetensors_from_memory(std::span<const std::byte> bytes, std::string_view source = "<memory>",
                                       const Device& device = Device::default_device());
// The header of a safetensors file's bytes.
SafetensorsHeader read_safetensors_header_from_memory(std::span<const std::byte> bytes,
                                                      std::string_view source = "<memory>");

// safetensors dtype names ("F32", "BF16", "BOOL", ...) and back; the latter throws on names
// ember has no dtype for.
std::string_view safetensors_dtype_name(DType dtype);
DType dtype_from_safetensors_name(std::string_view name);  // the inverse

}  // namespace ember::store
