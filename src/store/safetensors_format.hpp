// The safetensors byte format without files or devices (internal): what the file API, the
// tests and the fuzz target share.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ember/core/tensor_data.hpp"
#include "ember/store/safetensors.hpp"

namespace ember::store::detail {

// Reads N from the 8-byte prefix and checks it against the cap and the total size.
uint64_t safetensors_header_length(std::span<const std::byte> prefix, uint64_t total_size, std::string_view source);

// Parses and validates the JSON header of a file of `total_size` bytes.
SafetensorsHeader parse_safetensors_header(std::string_view json, uint64_t total_size, std::string_view source);

// Validates a whole file held in memory and hands every tensor, in name order, to `on_tensor`.
void decode_safetensors(std::span<const std::byte> file, std::string_view source,
                        const std::function<void(const SafetensorsTensorInfo&, TensorData&&)>& on_tensor);
// The same, handing each tensor's bytes in place (inside `file`) instead of a copy. BOOL bytes
// are not normalised here: callers pass BOOL tensors through TensorData (normalize_bool_bytes).
void decode_safetensors_spans(std::span<const std::byte> file, std::string_view source,
                              const std::function<void(const SafetensorsTensorInfo&, std::span<const std::byte>)>& on_tensor);

// The header JSON padded with spaces to a multiple of 8 bytes; `tensors` carry their offsets.
std::string encode_safetensors_header(const std::vector<SafetensorsTensorInfo>& tensors,
                                      const std::map<std::string, std::string>& metadata);

// Turns every BOOL byte other than 0 into 1 (a C++ bool holding another value is undefined).
void normalize_bool_bytes(std::span<std::byte> bytes);

}  // namespace ember::store::detail
