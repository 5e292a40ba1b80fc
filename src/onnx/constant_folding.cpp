// Constant folding over an ONNX graph: nodes whose inputs are all constants run once through
// the runtime's handlers and become initializers (see shape_inference.hpp).
#include <algorithm>
#include <cstring>
#include <set>
#include <utility>

#include "ember/core/error.hpp"
#include "ember/onnx/runtime.hpp"
#include "ember/onnx/shape_inference.hpp"
#include "ops.hpp"

namespace ember::onnx {
namespace {

bool default_domain(const std::string& d) { return d.empty() || d == "ai.onnx"; }

// Ops whose result is not a function of their inputs, or that run subgraphs or sequences.
bool never_folds(const NodeProto& n) {
  static const std::set<std::string> ops = {
      "RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Bernoulli", "Multinomial", "If",
      "Loop",         "Scan"};
  if (!default_domain(n.domain) || ops.count(n.op_type)) return true;
  if (n.op_type.find("Sequence") != std::string::npos || n.op_type.rfind("Optional", 0) == 0) return true;
  for (const AttributeProto& a : n.attributes)
    if (a.g || !a.graphs.empty()) return true;
  return !has_op_handler(n.op_type);
}

TensorProto to_proto(const std::string& name, const DynTensor& t) {
  TensorData d = t.into_data();
  TensorProto p;
  p.name = name;
  p.dims = d.shape().dims();
  p.data_type = from_dtype(d.dtype());
  std::vector<std::byte> bytes(d.bytes().begin(), d.bytes().end());
  p.raw_data = std::move(bytes);
  return p;
}

// Shape (with opset 15's start/end) or Size of a value of static shape `dims`, as i64.
DynTensor shape_value(const NodeProto& n, const std::vector<int64_t>& dims, int64_t opset, const Device& device) {
  if (n.op_type == "Size") {
    int64_t numel = 1;
    for (int64_t d : dims) numel *= d;
    return DynTensor::from_vector<int64_t>({numel}, Shape{}, device);
  }
  const int64_t r = int64_t(dims.size());
  int64_t start = 0, end = r;
  if (opset >= 15)
    for (const AttributeProto& a : n.attributes) {
      if (a.name == "start") start = a.i;
      if (a.name == "end") end = a.i;
    }
  start = std::clamp<int64_t>(start < 0 ? start + r : start, 0, r);
  end = std::clamp<int64_t>(end < 0 ? end + r : end, 0, r);
  std::vector<int64_t> picked(dims.begin() + start, dims.begin() + std::max(start, end));
  const int64_t len = int64_t(picked.size());
  return DynTensor::from_vector<int64_t>(picked, Shape{len}, device);
}

class Folder {
 public:
  Folder(GraphProto& g, int64_t opset, const Device& device, const std::string& base_dir)
      : g_(g), opset_(opset), device_(device), base_dir_(base_dir) {
    for (const ValueInfoProto& v : g.inputs) graph_inputs_.insert(v.name);
    for (const TensorProto& t : g.initializers)
      if (!graph_inputs_.count(t.name)) constant_protos_[t.name] = &t;
  }

  // One pass over the nodes; returns how many folded.
  int64_t pass() {
    std::map<std::string, InferredType> types;
    try {
      types = infer_shapes(g_, opset_, base_dir_);
    } catch (const Error&) {
      // Declared types that contradict the inferred ones: fold without shapes (no Shape
      // folding); the declarations are the model's problem, not a reason to refuse it.
    }
    std::vector<NodeProto> kept;
    std::vector<TensorProto> added;
    int64_t folded = 0;
    std::set<std::string> kept_names;  // graph outputs and names subgraphs read keep their value
    for (const ValueInfoProto& v : g_.outputs) kept_names.insert(v.name);
    for (const NodeProto& n : g_.nodes) detail::collect_subgraph_reads(n, kept_names);
    std::map<std::string, std::string> aliases;  // Identity outputs read as their constant input
    for (NodeProto& n : g_.nodes) {
      for (std::string& in : n.inputs)
        if (auto a = aliases.find(in); a != aliases.end()) in = a->second;
      // An Identity of a constant (PyTorch's shared weights) is an alias, not a copy.
      if (n.op_type == "Identity" && default_domain(n.domain) && n.inputs.size() == 1 && n.outputs.size() == 1 &&
          is_constant(n.inputs[0]) && !kept_names.count(n.outputs[0])) {
        aliases[n.outputs[0]] = n.inputs[0];
        ++folded;
        continue;
      }
      std::optional<std::vector<DynTensor>> outs = evaluate(n, types);
      if (!outs) {
        kept.push_back(std::move(n));
        continue;
      }
      ++folded;
      for (size_t k = 0; k < n.outputs.size(); ++k) {
        if (n.outputs[k].empty()) continue;
        values_[n.outputs[k]] = (*outs)[k];
        added.push_back(to_proto(n.outputs[k], (*outs)[k]));
      }
    }
    g_.nodes = std::move(kept);
    stats_.initializers_added += int64_t(added.size());
    for (TensorProto& t : added) g_.initializers.push_back(std::move(t));
    // The vector may have moved: point at the initializers again.
    constant_protos_.clear();
    for (const TensorProto& t : g_.initializers)
      if (!graph_inputs_.count(t.name)) constant_protos_[t.name] = &t;
    return folded;
  }

  FoldStats run() {
    stats_.nodes_before = int64_t(g_.nodes.size());
    for (;;) {
      ++stats_.passes;
      const int64_t n = pass();
      stats_.nodes_folded += n;
      if (n == 0) break;
    }
    remove_dead_initializers();
    return stats_;
  }

 private:
  bool is_constant(const std::string& name) const { return values_.count(name) || constant_protos_.count(name); }

  const DynTensor& value(const std::string& name) {
    auto it = values_.find(name);
    if (it != values_.end()) return it->second;
    const TensorProto& t = *constant_protos_.at(name);
    return values_[name] = DynTensor::from_data(to_tensor_data(t, base_dir_), device_);
  }

  // The node's outputs when it folds, else nullopt.
  std::optional<std::vector<DynTensor>> evaluate(const NodeProto& n, const std::map<std::string, InferredType>& types) {
    if (n.outputs.empty() || never_folds(n)) return std::nullopt;
    // Shape and Size of a value whose shape is static, whatever computes it.
    if ((n.op_type == "Shape" || n.op_type == "Size") && !n.inputs.empty() && n.outputs.size() == 1) {
      auto it = types.find(n.inputs[0]);
      if (it != types.end() && it->second.fully_static()) {
        std::vector<int64_t> dims;
        for (const Dimension& d : *it->second.shape) dims.push_back(*d.value);
        return std::vector<DynTensor>{shape_value(n, dims, opset_, device_)};
      }
    }
    for (const std::string& in : n.inputs)
      if (!in.empty() && !is_constant(in)) return std::nullopt;
    int64_t in_elems = 0;
    std::vector<DynTensor> inputs;
    try {
      for (const std::string& in : n.inputs) {
        inputs.push_back(in.empty() ? DynTensor() : value(in));
        if (!in.empty()) in_elems += inputs.back().numel();
      }
    } catch (const Error&) {
      return std::nullopt;  // unreadable constant: the runtime reports it
    }
    // Dropout folds as the identity only outside training mode.
    if (n.op_type == "Dropout" && inputs.size() > 2 && inputs[2].defined() && inputs[2].numel() > 0 &&
        inputs[2].to_vector<double>()[0] != 0)
      return std::nullopt;
    const int64_t limit = std::max(in_elems, kMaxFoldGrowth);
    for (const std::string& out : n.outputs) {
      auto it = types.find(out);
      if (it == types.end() || !it->second.fully_static()) continue;
      int64_t numel = 1;
      for (const Dimension& d : *it->second.shape) numel *= *d.value;
      if (numel > limit) return std::nullopt;
    }
    std::vector<DynTensor> outs;
    try {
      outs = run_node(n, inputs, opset_, device_);
    } catch (const Error&) {
      return std::nullopt;  // the runtime will report it when the graph runs
    }
    for (const DynTensor& t : outs)
      if (t.defined() && t.numel() > limit) return std::nullopt;
    return outs;
  }

  void remove_dead_initializers() {
    std::set<std::string> reads;
    detail::collect_reads(g_, reads);
    for (const ValueInfoProto& v : g_.outputs) reads.insert(v.name);
    std::vector<TensorProto> kept;
    for (TensorProto& t : g_.initializers) {
      if (reads.count(t.name) || graph_inputs_.count(t.name))
        kept.push_back(std::move(t));
      else
        ++stats_.initializers_removed;
    }
    g_.initializers = std::move(kept);
  }

  GraphProto& g_;
  int64_t opset_;
  const Device& device_;
  std::string base_dir_;
  std::set<std::string> graph_inputs_;
  std::map<std::string, const TensorProto*> constant_protos_;
  std::map<std::string, DynTensor> values_;  // constants read or computed so far
  FoldStats stats_;
};

}  // namespace

FoldStats fold_constants(GraphProto& graph, int64_t opset, const Device& device, const std::string& base_dir) {
  return Folder(graph, opset, device, base_dir).run();
}

}  // namespace ember::onnx
