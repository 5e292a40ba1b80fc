// Running ONNX models: load a file, bind the graph inputs, get the graph outputs.
//
//   auto m = onnx::Model::load("mlp.onnx", Device::cpu());
//   for (const onnx::ValueInfo& in : m.inputs()) std::cout << in.name << " " << in.type << "\n";
//   std::map<std::string, DynTensor> out = m.run({{"x", DynTensor::from_vector<float>({1, 2}, {1, 2})}});
//
// Initializers become tensors of the model's device when it loads. run() executes the nodes in
// file order; each node's op type maps to ember tensor ops through a table of handlers that
// honour the model's opset (axes as attributes before opset 13, Slice/Pad/Clip inputs, ...).
// Errors are ember::Errors: an op without a handler, or an attribute combination a handler
// does not implement, says "onnx: unsupported ..." and names the op type and the node;
// missing inputs, inputs of the wrong dtype or rank name the input.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ember/core/device.hpp"
#include "ember/onnx/model.hpp"
#include "ember/tensor/dyn_tensor.hpp"

namespace ember::onnx {

// A graph input or output: its name, element type and shape (dims may be symbolic).
struct ValueInfo {
  std::string name;
  int32_t elem_type = 0;             // the ONNX DataType (0: not declared)
  std::optional<DType> dtype;        // the ember dtype, when ember has one
  std::optional<std::vector<Dimension>> shape;  // nullopt: rank unknown
  std::string type;                  // type_string() of the declaration, for messages
};

class Model {
 public:
  // Reads a model file (external data relative to its directory).
  static Model load(const std::string& path, Device device = Device::default_device());
  // A parsed model; base_dir is where external data files are found ("" = the proto's own).
  static Model from_proto(ModelProto proto, Device device = Device::default_device(), std::string base_dir = "");

  // Runs the graph. Every graph input without an initializer must be given (by name); inputs
  // are moved to the model's device. Returns every graph output by name.
  std::map<std::string, DynTensor> run(const std::map<std::string, DynTensor>& inputs) const;

  // The graph inputs that must be fed (initializer-backed inputs excluded) and the outputs.
  const std::vector<ValueInfo>& inputs() const { return inputs_; }
  const std::vector<ValueInfo>& outputs() const { return outputs_; }
  // Op types of the graph (by "domain::op" for other domains) that have no handler, sorted.
  std::vector<std::string> unsupported_ops() const;

  const ModelProto& proto() const { return proto_; }
  const Device& device() const { return device_; }
  int64_t opset() const { return opset_; }

 private:
  explicit Model(Device device) : device_(std::move(device)) {}
  ModelProto proto_;
  Device device_;
  std::string base_dir_;
  int64_t opset_ = 0;
  std::map<std::string, DynTensor> initializers_;
  std::vector<ValueInfo> inputs_, outputs_;
};

// Whether the runtime has a handler for an op type: "Conv" for the default domain,
// "ai.onnx.preview.training::Adam" for another one.
bool has_op_handler(const std::string& op_type);

// Runs one node through the runtime's handler for its op type, outside any model (the code
// that `ember-onnx generate` writes calls it for ops it does not spell as tensor ops). Inputs
// are in the node's order; an undefined tensor marks an omitted optional input. Returns one
// tensor per node output (undefined for outputs the node does not produce). Graph attributes
// (If, Loop, Scan) see only their own inputs.
std::vector<DynTensor> run_node(const NodeProto& node, const std::vector<DynTensor>& inputs, int64_t opset,
                                const Device& device = Device::default_device());

}  // namespace ember::onnx
