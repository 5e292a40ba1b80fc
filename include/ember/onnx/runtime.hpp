// Running ONNX models: load a file, bind the graph inputs, get the graph outputs.
//
//   auto m = onnx::Model::load("mlp.onnx", Device::cpu());
//   for (const onnx::ValueInfo& in : m.inputs()) std::cout << in.name << " " << in.type << "\n";
//   std::map<std::string, DynTensor> out = m.run({{"x", DynTensor::from_vector<float>({1, 2}, {1, 2})}});
//
//   // Graphs with sequence- or optional-typed inputs or outputs run through run_values():
//   auto seq = onnx::Value::sequence({DynTensor::from_vector<float>({1, 2}, {2})});
//   std::map<std::string, onnx::Value> res = m.run_values({{"xs", seq}});
//   for (const DynTensor& t : res.at("ys").elements()) std::cout << t.str() << "\n";
//
// The graph is constant-folded once at load (src/onnx/constant_folding.cpp), then initializers
// become tensors of the model's device. run() executes the remaining nodes in
// file order; each node's op type maps to ember tensor ops through a table of handlers that
// honour the model's opset (axes as attributes before opset 13, Slice/Pad/Clip inputs, ...).
// Values flowing between nodes are tensors, sequences of tensors or optionals (Value below);
// sequences and optionals cross If / Loop / Scan / SequenceMap bodies like tensors do.
// Errors are ember::Errors. What is valid ONNX that ember lacks (an op without a handler, an
// attribute combination, mode or dtype a handler does not cover, a value ember has no type
// for) throws ember::NotImplemented, says "onnx: unsupported ..." and names the op type and the
// node; an invalid model or input throws a plain Error: missing inputs, inputs of the wrong
// dtype, rank or kind (a sequence where a tensor belongs) name the input.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ember/core/device.hpp"
#include "ember/onnx/model.hpp"
#include "ember/tensor/dyn_tensor.hpp"

namespace ember::onnx {

// A value of a graph: a tensor, a sequence of tensors, or an optional (empty, or holding a
// tensor or a sequence). A DynTensor converts to a tensor Value implicitly.
class Value {
 public:
  // What a Value holds.
  enum class Kind : uint8_t { tensor, sequence, optional };

  Value() = default;  // an undefined tensor
  Value(DynTensor tensor) : tensor_(std::move(tensor)) {}  // NOLINT(google-explicit-constructor)
  // elem_dtype: the element dtype of an empty sequence (SequenceEmpty's dtype); taken from the
  // first element otherwise. Elements must share one dtype.
  static Value sequence(std::vector<DynTensor> elements, std::optional<DType> elem_dtype = std::nullopt);
  // An optional: empty (nullopt) or holding a tensor or a sequence.
  static Value optional(std::optional<Value> element = std::nullopt);

  Kind kind() const { return kind_; }  // what the value holds
  bool is_tensor() const { return kind_ == Kind::tensor; }  // kind() == Kind::tensor (an undefined tensor too)
  bool is_sequence() const { return kind_ == Kind::sequence; }  // kind() == Kind::sequence
  bool is_optional() const { return kind_ == Kind::optional; }  // kind() == Kind::optional (empty or not)
  bool defined() const { return kind_ != Kind::tensor || tensor_.defined(); }  // false: an undefined tensor

  // The parts; each is an Error for a value of another kind.
  const DynTensor& tensor() const;
  const std::vector<DynTensor>& elements() const;  // of a sequence
  std::optional<DType> elem_dtype() const;         // of a sequence (nullopt: empty and not declared)
  bool has_element() const;                        // of an optional
  const Value& element() const;                    // of an optional that holds one

  Value to(const Device& device) const;  // the same value with its tensors on `device`
  std::string describe() const;  // for messages: "a tensor(f32)[2, 3]", "a sequence of 3 i64 tensors", ...

 private:
  Kind kind_ = Kind::tensor;
  DynTensor tensor_;
  std::vector<DynTensor> elements_;
  std::optional<DType> elem_dtype_;
  std::shared_ptr<const Value> element_;  // an optional's value; null when empty
};

// Converts the test data of sequence / optional values (see parse_sequence_proto) to a Value
// on `device`. Sequences of sequences and optionals inside sequences are unsupported.
Value to_value(const SequenceProto& sequence, const Device& device = Device::default_device());
// The same for an optional's test data: an empty optional, or one holding a tensor or a sequence.
Value to_value(const OptionalProto& optional, const Device& device = Device::default_device());

// A graph input or output: its name, element type and shape (dims may be symbolic).
struct ValueInfo {
  std::string name;  // the value's name in the graph (the key of run()'s maps)
  TypeProto::Kind kind = TypeProto::Kind::tensor;  // tensor, sequence, optional, ... (undefined: not declared)
  int32_t elem_type = 0;             // the ONNX DataType (0: not declared)
  std::optional<DType> dtype;        // the ember dtype, when ember has one
  std::optional<std::vector<Dimension>> shape;  // nullopt: rank unknown
  std::string type;                  // type_string() of the declaration, for messages
};

// A loaded ONNX model ready to run on one device (see the file's comment). run() and run_values()
// are const and leave the model unchanged.
class Model {
 public:
  // Reads a model file (external data relative to its directory).
  static Model load(const std::string& path, Device device = Device::default_device());
  // A parsed model; base_dir is where external data files are found ("" = the proto's own).
  static Model from_proto(ModelProto proto, Device device = Device::default_device(), std::string base_dir = "");

  // Runs the graph. Every graph input without an initializer must be given (by name); inputs
  // are moved to the model's device. Returns every graph output by name.
  // Every output must be a tensor (an Error names an output that is a sequence or optional).
  std::map<std::string, DynTensor> run(const std::map<std::string, DynTensor>& inputs) const;
  // The same for any values: sequence- and optional-typed inputs and outputs. A tensor or a
  // sequence given for an optional-typed input is taken as a present optional.
  std::map<std::string, Value> run_values(const std::map<std::string, Value>& inputs) const;

  // The graph inputs that must be fed (initializer-backed inputs excluded) and the outputs.
  const std::vector<ValueInfo>& inputs() const { return inputs_; }
  const std::vector<ValueInfo>& outputs() const { return outputs_; }  // the graph outputs, in graph order
  // Op types of the graph (by "domain::op" for other domains) that have no handler, sorted.
  std::vector<std::string> unsupported_ops() const;

  const ModelProto& proto() const { return proto_; }  // the model as parsed, after constant folding
  const Device& device() const { return device_; }  // where initializers live and the graph runs
  int64_t opset() const { return opset_; }  // the default domain's imported opset (1 when the file has none)

 private:
  explicit Model(Device device) : device_(std::move(device)) {}
  ModelProto proto_;
  Device device_;
  std::string base_dir_;
  int64_t opset_ = 0;
  std::map<std::string, DynTensor> initializers_;
  std::vector<ValueInfo> inputs_, outputs_;
  std::vector<std::vector<std::string>> release_;  // per node, the values it reads last (computed at load)
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
