// torch.save archives without files or devices (internal): zip + pickle -> named host tensors.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>

#include "ember/core/tensor_data.hpp"
#include "ember/store/pytorch.hpp"
#include "pickle.hpp"

namespace ember::store::detail {

struct PytorchDecodeOptions {
  bool verify_crc = true;
  // Bytes all materialised tensors may take together; 0 means 4 x the file size + 1 GiB. Views
  // with zero strides or many references to one storage can exceed the file size; this bounds
  // what a hostile file can make the loader allocate.
  uint64_t max_tensor_bytes = 0;
  pickle::Limits pickle_limits;
};

void decode_pytorch(std::span<const std::byte> file, std::string_view source, const PytorchDecodeOptions& options,
                    const std::function<void(const std::string&, TensorData&&)>& on_tensor,
                    const std::function<void(const std::string&, CheckpointValue&&)>& on_value);

}  // namespace ember::store::detail
