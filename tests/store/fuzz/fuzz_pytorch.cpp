// libFuzzer target: the input is a whole torch.save file (zip + pickle). CRC checks are off so
// that mutations reach the pickle interpreter; allocation bounds are tightened to fit the
// fuzzer's memory limit. Any outcome but success or an ember::Error is a finding.
#include <cstddef>
#include <cstdint>

#include "pytorch_format.hpp"

using namespace ember;
using namespace ember::store;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  store::detail::PytorchDecodeOptions options;
  options.verify_crc = false;
  options.max_tensor_bytes = 64 << 20;
  options.pickle_limits.max_nodes = 1 << 20;
  options.pickle_limits.max_memo = 1 << 16;
  options.pickle_limits.max_string = 16 << 20;
  try {
    uint64_t checksum = 0;
    store::detail::decode_pytorch(
        bytes, "fuzz.pt", options,
        [&](const std::string&, TensorData&& t) {
          if (t.bytes().size() != size_t(t.numel()) * dtype_size(t.dtype())) __builtin_trap();
          for (std::byte b : t.bytes()) checksum += std::to_integer<uint8_t>(b);
        },
        [&](const std::string&, CheckpointValue&&) {});
    (void)checksum;
  } catch (const Error&) {
  }
  return 0;
}
