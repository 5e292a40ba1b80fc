// PyTorch checkpoints: the zip files of torch.save (PyTorch >= 1.6), read without PyTorch.
//
//   store::TensorMap sd = store::load_pytorch("resnet18.pth");          // a state_dict
//   store::PytorchCheckpoint ck = store::load_pytorch_checkpoint("ckpt.pt");
//   const DynTensor& w = ck.tensors.at("model.fc.weight");              // {"model": sd, "epoch": 3}
//   int64_t epoch = std::get<int64_t>(*ck.find_value("epoch"));
//   sd.rename_prefix("module.", "");                                     // DataParallel keys
//
// Nested dicts, lists and tuples are flattened into dotted keys ("optimizer.state.0.exp_avg");
// a file holding a single tensor gives one entry named "". Tensors that are views of a shared
// storage (offset, strides) are materialised as contiguous copies; each tensor gets its own
// buffer. The pickle is read by a restricted interpreter that knows only what state dicts use
// (dicts, lists, tuples, numbers, strings, tensors, parameters); any other Python object is an
// ember::Error naming the global and its byte offset, and nothing is ever executed. Corrupt
// and hostile files (truncated, wrong offsets, huge sizes, CRC mismatches, compressed entries)
// give an Error naming the file, never a crash.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "ember/store/tensor_map.hpp"

namespace ember::store {

// A non-tensor leaf of a checkpoint: None, bool, int, float or str.
using CheckpointValue = std::variant<std::monostate, bool, int64_t, double, std::string>;

// What a torch.save file holds: its tensors and its other leaves, by dotted key.
struct PytorchCheckpoint {
  TensorMap tensors;  // every tensor, by dotted key
  std::vector<std::pair<std::string, CheckpointValue>> values;  // in pickle order
  const CheckpointValue* find_value(std::string_view name) const;  // the value of key `name`, or nullptr
};

// The tensors of a torch.save file (the state_dict, or every tensor of a nested checkpoint).
TensorMap load_pytorch(const std::string& path, const Device& device = Device::default_device());
// Tensors and non-tensor values.
PytorchCheckpoint load_pytorch_checkpoint(const std::string& path, const Device& device = Device::default_device());
// load_pytorch_checkpoint of a file's bytes; `source` names them in error messages.
PytorchCheckpoint load_pytorch_from_memory(std::span<const std::byte> bytes, std::string_view source = "<memory>",
                                           const Device& device = Device::default_device());

}  // namespace ember::store
