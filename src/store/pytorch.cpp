// PyTorch checkpoints: the file and device side of pytorch_format.
#include "ember/store/pytorch.hpp"

#include "file_io.hpp"
#include "pytorch_format.hpp"

namespace ember::store {

const CheckpointValue* PytorchCheckpoint::find_value(std::string_view name) const {
  for (const auto& [key, value] : values)
    if (key == name) return &value;
  return nullptr;
}

PytorchCheckpoint load_pytorch_from_memory(std::span<const std::byte> bytes, std::string_view source,
                                           const Device& device) {
  PytorchCheckpoint out;
  detail::decode_pytorch(
      bytes, source, {},
      [&](const std::string& name, TensorData&& data) { out.tensors.insert(name, DynTensor::from_data(data, device)); },
      [&](const std::string& name, CheckpointValue&& value) { out.values.emplace_back(name, std::move(value)); });
  return out;
}

PytorchCheckpoint load_pytorch_checkpoint(const std::string& path, const Device& device) {
  detail::MappedFile file(path);
  return load_pytorch_from_memory(file.bytes(), path, device);
}

TensorMap load_pytorch(const std::string& path, const Device& device) {
  return std::move(load_pytorch_checkpoint(path, device).tensors);
}

}  // namespace ember::store
