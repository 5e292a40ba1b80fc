// Load-time fusion of a Conv with what follows it (see shape_inference.hpp): the same rewrite as
// ONNX Runtime's Conv+Activation and Conv+Add(+Activation) fusions, into the node type it writes
// for them, com.microsoft's FusedConv (Y = activation(Conv(X, W, B) + Z)).
#include <map>
#include <set>
#include <utility>

#include "ember/onnx/runtime.hpp"
#include "ember/onnx/shape_inference.hpp"

namespace ember::onnx {
namespace {

bool default_domain(const NodeProto& n) { return n.domain.empty() || n.domain == "ai.onnx"; }

void count_reads(const GraphProto& g, std::map<std::string, int>& reads) {
  for (const NodeProto& n : g.nodes) {
    for (const std::string& in : n.inputs)
      if (!in.empty()) ++reads[in];
    for (const AttributeProto& a : n.attributes) {
      if (a.g) count_reads(*a.g, reads);
      for (const GraphProto& sg : a.graphs) count_reads(sg, reads);
    }
  }
}

// The value of a one-element float initializer or Constant node output (nullopt: not one).
std::optional<double> constant_scalar(const GraphProto& g, const std::string& name, const std::string& base_dir) {
  const TensorProto* t = nullptr;
  for (const TensorProto& i : g.initializers)
    if (i.name == name) t = &i;
  for (const NodeProto& n : g.nodes)
    if (default_domain(n) && n.op_type == "Constant" && n.outputs.size() == 1 && n.outputs[0] == name &&
        n.attributes.size() == 1 && n.attributes[0].name == "value" && n.attributes[0].type == AttributeType::tensor)
      t = &n.attributes[0].t;
  if (!t || !to_dtype(t->data_type)) return std::nullopt;
  TensorData d = to_tensor_data(*t, base_dir);
  if (d.shape().numel() != 1 || !is_float(d.dtype())) return std::nullopt;
  return d.to_doubles()[0];
}

// The activation a FusedConv can take over from node `n` (which reads the value being fused):
// "Relu", or "Clip" with constant bounds (an absent bound as +-inf); false otherwise.
bool activation_of(const GraphProto& g, const NodeProto& n, const std::string& base_dir, int64_t opset,
                   std::string& act, std::vector<float>& params) {
  if (!default_domain(n) || n.outputs.size() != 1) return false;
  if (n.op_type == "Relu" && n.inputs.size() == 1) {
    act = "Relu";
    params.clear();
    return true;
  }
  if (n.op_type != "Clip") return false;
  float lo = -std::numeric_limits<float>::infinity(), hi = std::numeric_limits<float>::infinity();
  if (opset < 11) {
    if (const AttributeProto* a = n.attribute("min")) lo = a->f;
    if (const AttributeProto* a = n.attribute("max")) hi = a->f;
  } else {
    for (size_t i = 1; i < n.inputs.size() && i < 3; ++i) {
      if (n.inputs[i].empty()) continue;
      std::optional<double> v = constant_scalar(g, n.inputs[i], base_dir);
      if (!v) return false;
      (i == 1 ? lo : hi) = float(*v);
    }
  }
  act = "Clip";
  params = {lo, hi};
  return true;
}

}  // namespace

int64_t fuse_conv_epilogues(GraphProto& graph, int64_t opset, const std::string& base_dir,
                            const std::function<bool(const NodeProto&)>& accept) {
  std::map<std::string, int> reads;
  count_reads(graph, reads);
  std::set<std::string> outputs;
  for (const ValueInfoProto& v : graph.outputs) outputs.insert(v.name);
  // the node reading value v, when it is read once and not a graph output
  std::map<std::string, size_t> reader;
  for (size_t i = 0; i < graph.nodes.size(); ++i)
    for (const std::string& in : graph.nodes[i].inputs)
      if (!in.empty()) reader[in] = i;
  auto sole_reader = [&](const std::string& v) -> std::optional<size_t> {
    if (v.empty() || outputs.count(v) || reads[v] != 1 || !reader.count(v)) return std::nullopt;
    return reader[v];
  };

  std::vector<bool> removed(graph.nodes.size(), false);
  int64_t fused = 0;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const NodeProto& conv = graph.nodes[i];
    if (removed[i] || !default_domain(conv) || conv.op_type != "Conv" || conv.outputs.size() != 1 ||
        conv.inputs.size() < 2 || (accept && !accept(conv)))
      continue;
    std::optional<size_t> next = sole_reader(conv.outputs[0]);
    if (!next || removed[*next]) continue;
    std::string act, z;
    std::vector<float> params;
    size_t last = *next;
    const NodeProto& n = graph.nodes[*next];
    if (default_domain(n) && n.op_type == "Add" && n.inputs.size() == 2 && n.outputs.size() == 1 &&
        n.inputs[0] != n.inputs[1]) {
      z = n.inputs[0] == conv.outputs[0] ? n.inputs[1] : n.inputs[0];
      if (std::optional<size_t> a = sole_reader(n.outputs[0]);
          a && !removed[*a] && activation_of(graph, graph.nodes[*a], base_dir, opset, act, params)) {
        removed[*next] = true;
        last = *a;
      }
    } else if (!activation_of(graph, n, base_dir, opset, act, params)) {
      continue;
    }
    NodeProto f;
    f.name = conv.name;
    f.op_type = "FusedConv";
    f.domain = "com.microsoft";
    f.inputs = {conv.inputs[0], conv.inputs[1], conv.inputs.size() > 2 ? conv.inputs[2] : "", z};
    f.outputs = graph.nodes[last].outputs;
    f.attributes = conv.attributes;
    if (!act.empty()) {
      AttributeProto a;
      a.name = "activation";
      a.type = AttributeType::string;
      a.s = act;
      f.attributes.push_back(a);
      if (!params.empty()) {
        AttributeProto p;
        p.name = "activation_params";
        p.type = AttributeType::floats;
        p.floats = params;
        f.attributes.push_back(std::move(p));
      }
    }
    // At the last absorbed node's place: Z may be made after the Conv.
    removed[i] = true;
    graph.nodes[last] = std::move(f);
    ++fused;
  }
  std::vector<NodeProto> kept;
  kept.reserve(graph.nodes.size());
  for (size_t i = 0; i < graph.nodes.size(); ++i)
    if (!removed[i]) kept.push_back(std::move(graph.nodes[i]));
  graph.nodes = std::move(kept);
  return fused;
}

}  // namespace ember::onnx
