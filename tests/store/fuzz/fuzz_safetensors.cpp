// libFuzzer target: the input is a whole .safetensors file. Any outcome but success or an
// ember::Error (a crash, a sanitizer report, another exception, a leak) is a finding. A file
// that parses must also survive re-encoding its header.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "safetensors_format.hpp"

using namespace ember;
using namespace ember::store;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  try {
    uint64_t checksum = 0;
    store::detail::decode_safetensors(bytes, "fuzz.safetensors",
                                      [&](const SafetensorsTensorInfo& info, TensorData&& t) {
                                        if (t.bytes().size() != info.data_end - info.data_begin) __builtin_trap();
                                        for (std::byte b : t.bytes()) checksum += std::to_integer<uint8_t>(b);
                                      });
    // Parsed: the header re-encoded by the writer must parse to the same tensors.
    const uint64_t n = store::detail::safetensors_header_length(bytes, size, "fuzz");
    std::string_view text(reinterpret_cast<const char*>(data) + 8, n);
    SafetensorsHeader header = store::detail::parse_safetensors_header(text, size, "fuzz");
    const std::string again = store::detail::encode_safetensors_header(header.tensors, header.metadata);
    const uint64_t buffer = size - header.data_offset;
    SafetensorsHeader back =
        store::detail::parse_safetensors_header(again, 8 + again.size() + buffer, "fuzz (re-encoded)");
    if (back.tensors.size() != header.tensors.size() || back.metadata != header.metadata) __builtin_trap();
    for (size_t i = 0; i < back.tensors.size(); ++i) {
      const auto &a = header.tensors[i], &b = back.tensors[i];
      if (a.name != b.name || a.dtype != b.dtype || a.shape != b.shape || a.data_begin != b.data_begin ||
          a.data_end != b.data_end)
        __builtin_trap();
    }
    (void)checksum;
  } catch (const Error&) {
  }
  return 0;
}
