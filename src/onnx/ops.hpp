// The op handlers of the ONNX runtime (internal): one table from op type to a function of the
// node's inputs and attributes, filled by one register_* function per op family.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "ember/core/error.hpp"
#include "ember/onnx/model.hpp"
#include "ember/onnx/runtime.hpp"
#include "ember/tensor/ops.hpp"

namespace ember::onnx::detail {

struct OpContext {
  const NodeProto& node;
  int64_t opset;
  const Device& device;
  std::string base_dir;
  std::vector<std::optional<Value>> inputs;  // nullopt: omitted optional input
  const std::map<std::string, Value>* scope = nullptr;  // the values visible to subgraphs

  // Runs a graph attribute (If / Loop / Scan / SequenceMap body) with its inputs bound in order;
  // the names of the enclosing scopes stay visible. Returns its outputs in order.
  std::vector<Value> run_subgraph(const GraphProto& g, const std::vector<Value>& graph_inputs) const;
  const GraphProto& graph_attr(const char* name) const;

  size_t num_inputs() const { return inputs.size(); }
  bool has(size_t i) const { return i < inputs.size() && inputs[i].has_value(); }
  const DynTensor& in(size_t i) const;  // a tensor input; throws when missing or not a tensor
  const Value& value(size_t i) const;   // an input of any kind; throws when missing
  const std::vector<DynTensor>& sequence(size_t i) const;  // a sequence input; throws otherwise
  size_t num_outputs() const { return node.outputs.size(); }
  bool wants_output(size_t i) const { return i < node.outputs.size() && !node.outputs[i].empty(); }

  const AttributeProto* attr(const char* name) const { return node.attribute(name); }
  int64_t attr_i(const char* name, int64_t def) const;
  float attr_f(const char* name, float def) const;
  std::string attr_s(const char* name, const std::string& def) const;
  std::optional<std::vector<int64_t>> attr_ints(const char* name) const;
  std::optional<std::vector<float>> attr_floats(const char* name) const;

  // A shape-valued input read on the host (nullopt when omitted).
  std::optional<std::vector<int64_t>> ints_input(size_t i) const;
  std::vector<int64_t> required_ints(size_t i) const;  // the same; an error when omitted
  // An attribute, mode, dtype or input the handler does not implement: ember::NotImplemented,
  // "onnx: unsupported <what> in op '<type>' (node '<name>')".
  [[noreturn]] void unsupported(const std::string& what) const;
  // An invalid node (a plain ember::Error naming the op and the node).
  [[noreturn]] void fail(const std::string& what) const;
};

// Rethrows an Error raised while running `node`, prefixed with "onnx: op '<type>' (node
// '<name>'): " unless it already starts with "onnx:"; a NotImplemented stays one.
[[noreturn]] void rethrow_naming_node(const Error& e, const NodeProto& node);

using OpResult = std::vector<Value>;  // undefined tensors for outputs not produced
using OpHandler = std::function<OpResult(OpContext&)>;
using OpTable = std::unordered_map<std::string, OpHandler>;

const OpTable& op_table();
// Every name that a node of `g`, or of its subgraphs at any depth, reads.
void collect_reads(const GraphProto& g, std::set<std::string>& reads);
// Every name that the subgraphs of `n` (If branches, Loop and Scan bodies) read, at any depth.
void collect_subgraph_reads(const NodeProto& n, std::set<std::string>& reads);
// For each node of `graph`, the values whose last reader it is, except those in `keep` (the names
// the caller reads afterwards, e.g. the graph's outputs) and those a subgraph reads (an If branch or
// a Loop body reads outer values by name, so they stay to the end). It depends only on the graph, so
// a Model computes it once at load.
std::vector<std::vector<std::string>> release_schedule(const GraphProto& graph, const std::set<std::string>& keep);
// Runs a graph's nodes in order over `values` (inputs and initializers already bound). With
// `release` (release_schedule of the graph), each value is dropped from `values` after its last
// reader has run, so that its buffer goes back to the backend's pool while it is still in cache, for
// the next node's output (without it, every value stays).
void run_nodes(const GraphProto& graph, std::map<std::string, Value>& values, int64_t opset, const Device& device,
               const std::string& base_dir, const std::vector<std::vector<std::string>>* release = nullptr);
void register_control_ops(OpTable& t);
void register_elementwise_ops(OpTable& t);
void register_reduce_ops(OpTable& t);
void register_nn_ops(OpTable& t);
void register_shape_ops(OpTable& t);
void register_resize_ops(OpTable& t);
void register_misc_ops(OpTable& t);
void register_rnn_ops(OpTable& t);
void register_sequence_ops(OpTable& t);

// Helpers.
int normalize_axis(int64_t axis, int rank, const OpContext& c);
Scalar scalar_of(const DynTensor& t);                 // first element, integral for int dtypes
DType dtype_of_onnx(int32_t elem_type, const OpContext& c);  // unsupported -> error
DynTensor tensor_from_proto(const TensorProto& t, const OpContext& c);

}  // namespace ember::onnx::detail
