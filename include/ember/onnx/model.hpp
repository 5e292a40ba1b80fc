// ONNX model files: the parts of onnx.proto a runtime or code generator needs, as plain structs.
//
//   onnx::ModelProto m = onnx::load_model("resnet18.onnx");
//   for (const onnx::NodeProto& n : m.graph.nodes) std::cout << n.op_type << "\n";
//   TensorData w = onnx::to_tensor_data(m.graph.initializers[0], m.base_dir);
//
// The reader is ember's own protobuf wire-format decoder (no protobuf library): it checks every
// length against the bytes that remain, limits nesting, refuses absurd shapes and reports each
// problem as an ember::Error naming the message path, the field and its byte offset. Unknown
// fields of any wire type are skipped, so files of newer IR versions load as long as the
// fields below keep their meaning. After parsing, the graph is validated: every node input
// must be a graph input, an initializer or an output of an earlier node (in subgraphs a name
// may also come from an enclosing scope), no name is produced twice, and cycles are reported.
//
// Not supported (a clear Error): sparse initializers and SPARSE_TENSOR(S) attributes, tensor
// segments. FunctionProtos and training info are skipped (only function names are kept).
// Tensor data stays as stored in the file until to_tensor_data() converts it; external data
// (data_location = EXTERNAL) is read then, from a file relative to the model's directory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ember/core/dtype.hpp"
#include "ember/core/tensor_data.hpp"

namespace ember::onnx {

// TensorProto.DataType (the element types of tensors and of tensor type declarations).
enum class DataType : int32_t {
  undefined = 0,
  float32 = 1,
  uint8 = 2,
  int8 = 3,
  uint16 = 4,
  int16 = 5,
  int32 = 6,
  int64 = 7,
  string = 8,
  boolean = 9,
  float16 = 10,
  float64 = 11,
  uint32 = 12,
  uint64 = 13,
  complex64 = 14,
  complex128 = 15,
  bfloat16 = 16,
};
// "FLOAT", "UINT16", ... as onnx.proto spells them; "DataType(N)" for values it does not know.
std::string data_type_name(int32_t data_type);
// The ember dtype of an ONNX element type, or nullopt (uint16/32/64, complex, string, ...).
std::optional<DType> to_dtype(int32_t data_type);
// The ONNX element type of an ember dtype.
int32_t from_dtype(DType dtype);

// AttributeProto.AttributeType.
enum class AttributeType : int32_t {
  undefined = 0,
  float_ = 1,
  int_ = 2,
  string = 3,
  tensor = 4,
  graph = 5,
  floats = 6,
  ints = 7,
  strings = 8,
  tensors = 9,
  graphs = 10,
  sparse_tensor = 11,
  sparse_tensors = 12,
  type_proto = 13,
  type_protos = 14,
};
std::string attribute_type_name(AttributeType type);  // "FLOAT", "INTS", ...

struct GraphProto;

// One entry of metadata_props or external_data.
struct StringStringEntry {
  std::string key;    // the entry's key
  std::string value;  // its value
  bool operator==(const StringStringEntry&) const = default;  // same key and value
};

// A tensor of the file (an initializer, a Constant's or attribute's value, test data), with its
// data still as stored; to_tensor_data() converts it.
struct TensorProto {
  std::string name;        // the value name it initialises ("" for attribute values)
  std::string doc_string;  // free-form documentation from the file
  std::vector<int64_t> dims;  // each >= 0; their product fits in int64 (checked while parsing)
  int32_t data_type = 0;      // a DataType value; unknown values are kept
  // The data, exactly one of these (or none for a tensor without elements):
  std::optional<std::vector<std::byte>> raw_data;  // little-endian, row-major
  std::vector<float> float_data;                   // FLOAT, COMPLEX64
  std::vector<int32_t> int32_data;  // INT32, INT16, INT8, UINT16, UINT8, BOOL, FLOAT16/BFLOAT16 bits
  std::vector<int64_t> int64_data;  // INT64
  std::vector<double> double_data;  // DOUBLE, COMPLEX128
  std::vector<uint64_t> uint64_data;  // UINT32, UINT64
  std::vector<std::string> string_data;  // STRING (bytes)
  // data_location = EXTERNAL: keys "location" (a path relative to the model's directory),
  // "offset", "length", "checksum".
  bool external = false;
  std::vector<StringStringEntry> external_data;  // the external_data entries, in file order
  bool has_segment = false;  // segmented tensors are refused by to_tensor_data

  int64_t numel() const;  // product of dims (1 for a scalar)
  std::optional<std::string> external_value(std::string_view key) const;  // external_data's last value for key
};

// One dimension of a tensor type: a fixed size, a symbolic name, or unknown (both empty).
struct Dimension {
  std::optional<int64_t> value;  // dim_value
  std::string param;             // dim_param, e.g. "batch"
  std::string denotation;        // the dimension's denotation (e.g. "DATA_BATCH"), informational
  bool is_symbolic() const { return !value && !param.empty(); }  // a named size without a value
  bool is_unknown() const { return !value && param.empty(); }  // neither a value nor a name
};

// TypeProto: a tensor type (element type + optional shape), or a sequence / optional / map of
// another type, or a sparse tensor type.
struct TypeProto {
  // Which member of TypeProto's oneof the type is (undefined: none was given).
  enum class Kind : uint8_t { undefined, tensor, sequence, map, optional, sparse_tensor };
  Kind kind = Kind::undefined;  // which kind of type this is
  int32_t elem_type = 0;                  // tensor / sparse_tensor: element type (DataType)
  int32_t key_type = 0;                   // map: key element type
  std::optional<std::vector<Dimension>> shape;  // tensor / sparse_tensor; nullopt = rank unknown
  std::shared_ptr<TypeProto> elem;        // sequence / optional: element type; map: value type
  std::string denotation;                 // the type's denotation (e.g. "IMAGE"), informational
};
std::string type_string(const TypeProto& type);  // "tensor(FLOAT)[batch,3,224,224]", "seq(tensor(INT64))"

// A named value's declaration: a graph input, output or value_info entry.
struct ValueInfoProto {
  std::string name;        // the value's name
  std::string doc_string;  // free-form documentation from the file
  TypeProto type;          // its declared type (Kind::undefined when has_type is false)
  bool has_type = false;   // whether the file gave a type
  // Shortcuts for tensor types (elem_type 0 and no shape otherwise).
  int32_t elem_type() const { return type.kind == TypeProto::Kind::tensor ? type.elem_type : 0; }
  const std::optional<std::vector<Dimension>>& shape() const { return type.shape; }  // the type's shape
};

// A node attribute: its name, type and value (the value lives in the field that matches `type`).
struct AttributeProto {
  std::string name;  // the attribute's name ("axis", "kernel_shape", ...)
  std::string ref_attr_name;  // set inside function bodies: the value comes from the caller
  std::string doc_string;  // free-form documentation from the file
  AttributeType type = AttributeType::undefined;  // which field below holds the value
  // The value: the field that matches `type`.
  float f = 0;
  int64_t i = 0;  // INT
  std::string s;  // bytes
  TensorProto t;  // TENSOR
  std::shared_ptr<GraphProto> g;  // GRAPH (a subgraph: If branches, Loop and Scan bodies)
  TypeProto tp;  // TYPE_PROTO
  std::vector<float> floats;  // FLOATS
  std::vector<int64_t> ints;  // INTS
  std::vector<std::string> strings;  // STRINGS (bytes each)
  std::vector<TensorProto> tensors;  // TENSORS
  std::vector<GraphProto> graphs;  // GRAPHS
  std::vector<TypeProto> type_protos;  // TYPE_PROTOS
};

// One operator application of a graph.
struct NodeProto {
  std::string name;  // the node's name (may be empty; not required to be unique)
  std::string op_type;  // the operator ("Conv", "MatMul", ...)
  std::string domain;  // "" (or "ai.onnx") is the default domain
  std::string doc_string;  // free-form documentation from the file
  std::vector<std::string> inputs;   // "" marks an omitted optional input
  std::vector<std::string> outputs;  // "" marks an omitted optional output
  std::vector<AttributeProto> attributes;  // the node's attributes, in file order

  const AttributeProto* attribute(std::string_view name) const;  // nullptr when absent
};

// A computation graph: the model's main graph or a subgraph held by an attribute.
struct GraphProto {
  std::string name;  // the graph's name
  std::string doc_string;  // free-form documentation from the file
  std::vector<NodeProto> nodes;  // topologically sorted (checked)
  std::vector<TensorProto> initializers;  // the constant tensors (weights), each named after its value
  std::vector<ValueInfoProto> inputs;  // may include initializers (IR < 4 style defaults)
  std::vector<ValueInfoProto> outputs;  // the graph's results, in order
  std::vector<ValueInfoProto> value_info;  // declared types of intermediate values (optional hints)

  const TensorProto* initializer(std::string_view name) const;  // nullptr when absent
};

// An opset_import entry: the version of an operator set the model uses.
struct OperatorSetId {
  std::string domain;  // "" = ai.onnx
  int64_t version = 0;  // the operator set's version (opset)
  bool operator==(const OperatorSetId&) const = default;  // same domain and version
};

// A FunctionProto, skipped but for its identity.
struct FunctionInfo {
  std::string domain;  // the function's domain
  std::string name;  // the function's name (its op_type in nodes)
};

// A parsed model file (load_model, parse_model).
struct ModelProto {
  int64_t ir_version = 0;  // the ONNX IR version the file declares
  std::vector<OperatorSetId> opset_import;  // the operator sets (and versions) the model imports
  std::string producer_name;  // the tool that wrote the file ("pytorch", ...)
  std::string producer_version;  // that tool's version
  std::string domain;  // the model's namespace (reverse-DNS), informational
  int64_t model_version = 0;  // the model's own version number
  std::string doc_string;  // free-form documentation from the file
  GraphProto graph;  // the main graph
  std::vector<StringStringEntry> metadata;  // metadata_props, in file order
  std::vector<FunctionInfo> functions;      // model-local functions (bodies not read)
  std::string base_dir;  // where external data is resolved ("" for models parsed from memory)

  // The imported version of an operator set ("" and "ai.onnx" are the same); 0 when absent.
  int64_t opset(std::string_view domain = "") const;
};

// Nesting of protobuf messages deeper than this is refused (a graph inside an attribute of a
// node inside a graph takes 3 levels).
inline constexpr int kMaxMessageDepth = 96;
// Tensor ranks above this are refused.
inline constexpr size_t kMaxTensorRank = 64;

// Reads and validates a model file; external data is resolved relative to its directory.
ModelProto load_model(const std::string& path);
// The same from bytes in memory; base_dir is where external data files are looked up ("" means
// external data cannot be read).
ModelProto parse_model(std::span<const std::byte> bytes, const std::string& base_dir = "");

// A serialized TensorProto on its own (the input_N.pb / output_N.pb files of ONNX test cases).
TensorProto parse_tensor_proto(std::span<const std::byte> bytes);

// SequenceProto.DataType / OptionalProto.DataType: what a sequence or an optional holds.
enum class ValueKind : int32_t { undefined = 0, tensor = 1, sparse_tensor = 2, sequence = 3, map = 4, optional = 5 };

struct OptionalProto;

// A sequence value (the test data of sequence-typed graph inputs and outputs). Sparse tensors
// and maps are refused by the parser.
struct SequenceProto {
  std::string name;  // the value's name
  int32_t elem_type = 0;  // a ValueKind value: what the elements are
  std::vector<TensorProto> tensor_values;  // the elements when elem_type is tensor
  std::vector<SequenceProto> sequence_values;  // the elements when elem_type is sequence
  std::vector<OptionalProto> optional_values;  // the elements when elem_type is optional
};

// An optional value: empty (elem_type UNDEFINED and no value) or holding one value.
struct OptionalProto {
  std::string name;  // the value's name
  int32_t elem_type = 0;  // a ValueKind value
  std::optional<TensorProto> tensor_value;  // the value when elem_type is tensor
  std::shared_ptr<SequenceProto> sequence_value;  // the value when elem_type is sequence
  std::shared_ptr<OptionalProto> optional_value;  // the value when elem_type is optional
  bool has_value() const { return tensor_value || sequence_value || optional_value; }  // not empty
};

// A serialized SequenceProto / OptionalProto on its own (test data files of sequence- and
// optional-typed inputs and outputs). Errors name the field and its byte offset; nesting is
// limited like a model's.
SequenceProto parse_sequence_proto(std::span<const std::byte> bytes);
// The OptionalProto counterpart of parse_sequence_proto.
OptionalProto parse_optional_proto(std::span<const std::byte> bytes);

// Converts a tensor's data (raw, typed fields or external file) to host TensorData. Errors
// name the tensor: unsupported dtypes (UINT16, UINT32, UINT64, complex, STRING: an
// ember::NotImplemented), data that does not match the dims, external files outside base_dir or
// too short (plain Errors).
TensorData to_tensor_data(const TensorProto& tensor, const std::string& base_dir = "");

}  // namespace ember::onnx
