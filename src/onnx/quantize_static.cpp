// Static quantization of an ONNX model into QOperator form (see include/ember/onnx/quantize.hpp).
#include "ember/onnx/quantize.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "ember/core/error.hpp"
#include "ember/onnx/runtime.hpp"

namespace ember::onnx {
namespace {

bool default_domain(const NodeProto& n) { return n.domain.empty() || n.domain == "ai.onnx"; }
bool is_op(const NodeProto& n, const char* op) { return default_domain(n) && n.op_type == op; }

struct Range {
  float min = std::numeric_limits<float>::infinity();
  float max = -std::numeric_limits<float>::infinity();
};

// The observed range of every f32 value of the main graph: its inputs and what its nodes compute.
// With percentile < 100 every value is kept and the range is [quantile(1 - p), quantile(p)].
std::map<std::string, Range> calibrate(const ModelProto& model, const std::vector<CalibrationSample>& samples,
                                       double percentile) {
  ModelProto probe = model;
  std::set<std::string> listed;
  for (const ValueInfoProto& v : probe.graph.outputs) listed.insert(v.name);
  for (const NodeProto& n : model.graph.nodes)
    for (const std::string& out : n.outputs)
      if (!out.empty() && listed.insert(out).second) {
        ValueInfoProto v;
        v.name = out;
        probe.graph.outputs.push_back(std::move(v));
      }
  Model runner = Model::from_proto(std::move(probe), Device::cpu(), model.base_dir);

  std::map<std::string, Range> ranges;
  std::map<std::string, std::vector<float>> kept;  // percentile < 100: every non-NaN value seen
  auto observe = [&](const std::string& name, const DynTensor& t) {
    if (!t.defined() || t.dtype() != DType::f32 || t.numel() == 0) return;
    TensorData d = t.into_data();
    Range& r = ranges[name];
    std::vector<float>* all = percentile < 100 ? &kept[name] : nullptr;
    for (float v : d.as<float>()) {
      if (std::isnan(v)) continue;
      r.min = std::min(r.min, v);
      r.max = std::max(r.max, v);
      if (all) all->push_back(v);
    }
  };
  for (size_t i = 0; i < samples.size(); ++i) {
    std::map<std::string, Value> fed(samples[i].begin(), samples[i].end());
    std::map<std::string, Value> values;
    try {
      values = runner.run_values(fed);
    } catch (const Error& e) {
      EMBER_FAIL("onnx: quantize_static: calibration sample ", i, ": ", e.what());
    }
    for (const auto& [name, t] : samples[i]) observe(name, t);
    for (const auto& [name, v] : values)
      if (v.is_tensor()) observe(name, v.tensor());
  }
  for (auto& [name, sampled] : kept) {
    if (sampled.empty()) continue;
    auto& all = sampled;  // (a lambda may not capture a structured binding before clang 16: the fuzz build)
    auto at = [&](double q) {
      auto k = all.begin() + std::ptrdiff_t(std::llround(q * double(all.size() - 1)));
      std::nth_element(all.begin(), k, all.end());
      return *k;
    };
    ranges[name] = Range{at(1 - percentile / 100), at(percentile / 100)};
  }
  return ranges;
}

// u8 affine parameters of a range: PyTorch's MinMaxObserver formula (docs/quantization.md).
std::pair<float, uint8_t> activation_params(const Range& r) {
  const float lo = std::min(r.min, 0.0f), hi = std::max(r.max, 0.0f);
  float scale = (hi - lo) / 255.0f;
  if (!(scale > 0) || !std::isfinite(scale)) scale = 1.0f;
  const float zp = std::clamp(std::nearbyint(-lo / scale), 0.0f, 255.0f);
  return {scale, uint8_t(zp)};
}

TensorProto make_tensor(const std::string& name, const TensorData& d) {
  TensorProto t;
  t.name = name;
  t.data_type = from_dtype(d.dtype());
  for (int64_t s : d.shape()) t.dims.push_back(s);
  t.raw_data = std::vector<std::byte>(d.bytes().begin(), d.bytes().end());
  return t;
}

NodeProto make_node(std::string op, std::string domain, std::vector<std::string> inputs, std::string output,
                    std::string name) {
  NodeProto n;
  n.op_type = std::move(op);
  n.domain = std::move(domain);
  n.inputs = std::move(inputs);
  n.outputs = {std::move(output)};
  n.name = std::move(name);
  return n;
}

// Where a quantized value lives: its u8 tensor and its scale and zero point initializers.
struct QValue {
  std::string data, scale, zero_point;
  float scale_value = 1;  // the value of the scale initializer
};

// Calls read(name) for each value a node reads: its inputs, and the names its subgraphs (If
// branches, Loop bodies) read, which may come from the enclosing graph.
template <class F>
void for_each_read(const NodeProto& node, const F& read) {
  for (const std::string& in : node.inputs)
    if (!in.empty()) read(in);
  std::vector<const GraphProto*> subgraphs;
  for (const AttributeProto& a : node.attributes) {
    if (a.g) subgraphs.push_back(a.g.get());
    for (const GraphProto& sg : a.graphs) subgraphs.push_back(&sg);
  }
  for (const GraphProto* sg : subgraphs)
    for (const NodeProto& inner : sg->nodes) for_each_read(inner, read);
}

void count_reads(const GraphProto& g, std::map<std::string, int>& reads) {
  for (const NodeProto& n : g.nodes) for_each_read(n, [&](const std::string& name) { ++reads[name]; });
}

class Rewriter {
 public:
  Rewriter(const ModelProto& model, std::map<std::string, Range> ranges, const QuantizeOptions& options,
           QuantizeReport& report)
      : model_(model), src_(model.graph), ranges_(std::move(ranges)), report_(report) {
    excluded_.insert(options.exclude_nodes.begin(), options.exclude_nodes.end());
    count_reads(src_, reads_);
    for (const ValueInfoProto& v : src_.outputs) graph_outputs_.insert(v.name);
    for (size_t i = 0; i < src_.nodes.size(); ++i)
      for (const std::string& in : src_.nodes[i].inputs) reader_[in] = i;
    for (const ValueInfoProto& v : src_.inputs) float_.insert(v.name);
    for (const TensorProto& t : src_.initializers) {
      float_.insert(t.name);
      initializer_[t.name] = &t;
    }
  }

  GraphProto run() {
    out_.name = src_.name;
    out_.doc_string = src_.doc_string;
    out_.inputs = src_.inputs;
    out_.outputs = src_.outputs;
    for (size_t i = 0; i < src_.nodes.size(); ++i) {
      if (consumed_.count(i)) continue;
      const NodeProto& n = src_.nodes[i];
      const bool excluded = excluded_.count(n.name) || (!n.outputs.empty() && excluded_.count(n.outputs[0]));
      if (excluded || !(quantize_conv(n) || quantize_add(n) || quantize_max_pool(n))) copy_float(n);
    }
    for (const ValueInfoProto& v : src_.outputs) need_float(v.name);
    keep_read_initializers();
    return std::move(out_);
  }

  bool used_ms_domain() const { return report_.quantized_adds > 0; }

 private:
  const ModelProto& model_;
  const GraphProto& src_;
  std::map<std::string, Range> ranges_;
  QuantizeReport& report_;
  GraphProto out_;
  std::set<std::string> excluded_, graph_outputs_, float_;
  std::map<std::string, int> reads_;
  std::map<std::string, size_t> reader_;  // the last node reading a value (meaningful when read once)
  std::map<std::string, const TensorProto*> initializer_;
  std::map<std::string, QValue> quantized_;
  std::set<size_t> consumed_;  // Relu nodes folded into the quantized node before them
  std::vector<TensorProto> new_initializers_;

  bool has_range(const std::string& v) const {
    auto it = ranges_.find(v);
    return it != ranges_.end() && it->second.min <= it->second.max;
  }

  // The sole reader of v when it is a Relu that can be folded (v read once, not a graph output).
  std::optional<size_t> folded_relu(const std::string& v) const {
    if (graph_outputs_.count(v) || reads_.count(v) == 0 || reads_.at(v) != 1) return std::nullopt;
    const size_t r = reader_.at(v);
    const NodeProto& n = src_.nodes[r];
    if (!is_op(n, "Relu") || n.outputs.size() != 1 || excluded_.count(n.name) || excluded_.count(n.outputs[0]))
      return std::nullopt;
    return r;
  }

  // Registers the u8 parameters of an activation value (from its calibrated range).
  QValue activation(const std::string& v) {
    auto [scale, zp] = activation_params(ranges_.at(v));
    QValue q{v + "_quantized", v + "_scale", v + "_zero_point", scale};
    new_initializers_.push_back(make_tensor(q.scale, TensorData::from_vector<float>({scale}, Shape{})));
    new_initializers_.push_back(make_tensor(q.zero_point, TensorData::from_vector<uint8_t>({zp}, Shape{})));
    return q;
  }

  // The u8 form of an f32 value, quantizing it here if it has none yet; nullopt when it cannot be.
  std::optional<QValue> need_quantized(const std::string& v) {
    if (auto it = quantized_.find(v); it != quantized_.end()) return it->second;
    if (!float_.count(v) || initializer_.count(v) || !has_range(v)) return std::nullopt;
    QValue q = activation(v);
    out_.nodes.push_back(make_node("QuantizeLinear", "", {v, q.scale, q.zero_point}, q.data, v + "_QuantizeLinear"));
    ++report_.quantize_nodes;
    return quantized_[v] = q;
  }

  // Makes the f32 value v available, dequantizing its u8 form if that is all there is.
  void need_float(const std::string& v) {
    if (v.empty() || float_.count(v)) return;
    auto it = quantized_.find(v);
    if (it == quantized_.end()) return;  // computed inside a subgraph or not at all: not ours to fix
    const QValue& q = it->second;
    out_.nodes.push_back(make_node("DequantizeLinear", "", {q.data, q.scale, q.zero_point}, v, v + "_DequantizeLinear"));
    ++report_.dequantize_nodes;
    float_.insert(v);
  }

  void copy_float(const NodeProto& n) {
    // Subgraphs read outer values by name: those must be f32 too.
    for_each_read(n, [&](const std::string& name) { need_float(name); });
    out_.nodes.push_back(n);
    for (const std::string& o : n.outputs) float_.insert(o);
  }

  const TensorProto* float_initializer(const std::string& name) const {
    auto it = initializer_.find(name);
    if (it == initializer_.end() || it->second->data_type != int32_t(DataType::float32)) return nullptr;
    return it->second;
  }

  // Conv (+Relu) or com.microsoft FusedConv (Relu or no activation, no residual) -> QLinearConv.
  bool quantize_conv(const NodeProto& n) {
    const bool fused = n.domain == "com.microsoft" && n.op_type == "FusedConv";
    size_t inputs_given = n.inputs.size();  // omitted trailing inputs (FusedConv's Z: "") do not count
    while (inputs_given > 0 && n.inputs[inputs_given - 1].empty()) --inputs_given;
    if (!(is_op(n, "Conv") || fused) || inputs_given < 2 || inputs_given > 3 || n.outputs.size() != 1) return false;
    std::string activation_kind;
    if (fused) {
      const AttributeProto* a = n.attribute("activation");
      activation_kind = a ? a->s : "";
      if (!activation_kind.empty() && activation_kind != "Relu") return false;
    }
    const TensorProto* w = float_initializer(n.inputs[1]);
    const bool has_bias = inputs_given == 3;
    const TensorProto* b = has_bias ? float_initializer(n.inputs[2]) : nullptr;
    if (!w || w->dims.size() < 3 || (has_bias && !b)) return false;
    std::string y = n.outputs[0];
    std::optional<size_t> relu = activation_kind.empty() ? folded_relu(y) : std::nullopt;
    if (relu) y = src_.nodes[*relu].outputs[0];
    if (!has_range(y)) return false;
    std::optional<QValue> x = need_quantized(n.inputs[0]);
    if (!x) return false;

    TensorData wd = to_tensor_data(*w, model_.base_dir);
    const int64_t m = w->dims[0], per = m ? wd.numel() / m : 0;
    std::span<const float> wv = wd.as<float>();
    std::vector<int8_t> wq(static_cast<size_t>(wd.numel()));
    std::vector<float> ws(static_cast<size_t>(m));
    for (int64_t c = 0; c < m; ++c) {
      float amax = 0;
      for (int64_t k = 0; k < per; ++k) amax = std::max(amax, std::fabs(wv[size_t(c * per + k)]));
      const float s = amax > 0 ? amax / 127.0f : 1.0f;
      ws[size_t(c)] = s;
      for (int64_t k = 0; k < per; ++k)
        wq[size_t(c * per + k)] = int8_t(std::clamp(std::nearbyint(wv[size_t(c * per + k)] / s), -127.0f, 127.0f));
    }
    const std::string& wname = n.inputs[1];
    new_initializers_.push_back(make_tensor(wname + "_quantized", TensorData::from_vector(wq, wd.shape())));
    new_initializers_.push_back(make_tensor(wname + "_scale", TensorData::from_vector(ws, Shape{m})));
    new_initializers_.push_back(
        make_tensor(wname + "_zero_point", TensorData::from_vector(std::vector<int8_t>(size_t(m), 0), Shape{m})));
    QValue yq = activation(y);
    std::vector<std::string> inputs = {x->data,         x->scale,           x->zero_point,
                                       wname + "_quantized", wname + "_scale", wname + "_zero_point",
                                       yq.scale,        yq.zero_point};
    if (has_bias) {
      TensorData bd = to_tensor_data(*b, model_.base_dir);
      EMBER_CHECK(bd.numel() == m, "onnx: quantize_static: Conv '", n.name, "' has a bias of ", bd.numel(),
                  " values for ", m, " output channels");
      std::vector<int32_t> bq(static_cast<size_t>(m));
      std::span<const float> bv = bd.as<float>();
      for (int64_t c = 0; c < m; ++c) {
        const double q = std::nearbyint(double(bv[size_t(c)]) / double(x->scale_value * ws[size_t(c)]));
        bq[size_t(c)] = int32_t(std::clamp(q, -2147483648.0, 2147483647.0));
      }
      new_initializers_.push_back(make_tensor(n.inputs[2] + "_quantized", TensorData::from_vector(bq, Shape{m})));
      inputs.push_back(n.inputs[2] + "_quantized");
    }
    NodeProto q = make_node("QLinearConv", "", std::move(inputs), yq.data, n.name.empty() ? y + "_QLinearConv" : n.name + "_quant");
    for (const AttributeProto& a : n.attributes)
      if (a.name != "activation" && a.name != "activation_params") q.attributes.push_back(a);
    out_.nodes.push_back(std::move(q));
    quantized_[y] = yq;
    if (relu) consumed_.insert(*relu);
    ++report_.quantized_convs;
    return true;
  }

  // Add (+Relu) of two computed f32 values -> com.microsoft QLinearAdd.
  bool quantize_add(const NodeProto& n) {
    if (!is_op(n, "Add") || n.inputs.size() != 2 || n.outputs.size() != 1) return false;
    std::string y = n.outputs[0];
    std::optional<size_t> relu = folded_relu(y);
    if (relu) y = src_.nodes[*relu].outputs[0];
    if (!has_range(y) || !has_range(n.inputs[0]) || !has_range(n.inputs[1])) return false;
    std::optional<QValue> a = need_quantized(n.inputs[0]);
    std::optional<QValue> b = a ? need_quantized(n.inputs[1]) : std::nullopt;
    if (!a || !b) return false;
    QValue yq = activation(y);
    out_.nodes.push_back(make_node("QLinearAdd", "com.microsoft",
                                   {a->data, a->scale, a->zero_point, b->data, b->scale, b->zero_point, yq.scale,
                                    yq.zero_point},
                                   yq.data, n.name.empty() ? y + "_QLinearAdd" : n.name + "_quant"));
    quantized_[y] = yq;
    if (relu) consumed_.insert(*relu);
    ++report_.quantized_adds;
    return true;
  }

  // MaxPool of a value that is already u8 runs on u8 (max commutes with the monotonic mapping).
  bool quantize_max_pool(const NodeProto& n) {
    if (!is_op(n, "MaxPool") || n.inputs.size() != 1 || n.outputs.empty() ||
        (n.outputs.size() > 1 && !n.outputs[1].empty()))
      return false;
    auto it = quantized_.find(n.inputs[0]);
    if (it == quantized_.end()) return false;
    QValue yq = it->second;
    yq.data = n.outputs[0] + "_quantized";
    NodeProto p = n;
    p.inputs = {it->second.data};
    p.outputs = {yq.data};
    out_.nodes.push_back(std::move(p));
    quantized_[n.outputs[0]] = yq;
    ++report_.u8_max_pools;
    return true;
  }

  // Keeps the initializers the new graph reads (inline), then the new ones.
  void keep_read_initializers() {
    std::map<std::string, int> read;
    count_reads(out_, read);
    for (const ValueInfoProto& v : out_.outputs) ++read[v.name];
    std::vector<TensorProto> kept;
    for (const TensorProto& t : src_.initializers) {
      if (!read.count(t.name)) continue;
      kept.push_back(t.external ? make_tensor(t.name, to_tensor_data(t, model_.base_dir)) : t);
    }
    std::set<std::string> kept_names;
    for (const TensorProto& t : kept) kept_names.insert(t.name);
    for (TensorProto& t : new_initializers_) kept.push_back(std::move(t));
    // IR < 4 lists initializers among the inputs: drop those whose initializer is gone.
    std::erase_if(out_.inputs, [&](const ValueInfoProto& v) { return initializer_.count(v.name) && !kept_names.count(v.name); });
    out_.initializers = std::move(kept);
  }
};

}  // namespace

ModelProto quantize_static(const ModelProto& model, const std::vector<CalibrationSample>& calibration,
                           const QuantizeOptions& options, QuantizeReport* report) {
  EMBER_CHECK(!calibration.empty(), "onnx: quantize_static: the calibration set is empty (give at least one sample)");
  EMBER_CHECK(options.percentile > 50 && options.percentile <= 100, "onnx: quantize_static: percentile ",
              options.percentile, " is outside (50, 100]");
  const int64_t opset = model.opset("");
  EMBER_CHECK(opset >= 10, "onnx: quantize_static: the model imports opset ", opset,
              " of the default domain; QLinearConv and QuantizeLinear need at least 10");
  QuantizeReport local;
  QuantizeReport& r = report ? *report : local;
  r = QuantizeReport{};
  r.samples = int(calibration.size());
  Rewriter rewriter(model, calibrate(model, calibration, options.percentile), options, r);
  ModelProto out;
  out.ir_version = model.ir_version;
  out.opset_import = model.opset_import;
  out.producer_name = "ember quantize_static";
  out.producer_version = model.producer_version;
  out.domain = model.domain;
  out.model_version = model.model_version;
  out.doc_string = model.doc_string;
  out.metadata = model.metadata;
  out.graph = rewriter.run();
  if (rewriter.used_ms_domain() && model.opset("com.microsoft") == 0)
    out.opset_import.push_back(OperatorSetId{.domain = "com.microsoft", .version = 1});
  return out;
}

QuantizeReport quantize_static(const std::string& in_path, const std::string& out_path,
                               const std::vector<CalibrationSample>& calibration, const QuantizeOptions& options) {
  ModelProto model = load_model(in_path);
  QuantizeReport report;
  ModelProto q = quantize_static(model, calibration, options, &report);
  save_model(q, out_path);
  return report;
}

}  // namespace ember::onnx
