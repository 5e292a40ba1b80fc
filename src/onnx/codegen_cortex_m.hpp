// The Cortex-M generator's internals, shared by its two sources: codegen_cortex_m_lower.cpp
// (lowering: ONNX nodes to kernel calls on buffers) and codegen_cortex_m.cpp (planning the arena,
// emitting the files, the entry point). docs/embedded.md describes the generator.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "ember/core/error.hpp"
#include "ember/onnx/codegen.hpp"
#include "ember/onnx/shape_inference.hpp"
#include "onnx_internal.hpp"

namespace ember::onnx::cortex_m {

using detail::comment_text;

namespace fs = std::filesystem;

constexpr int64_t kArenaAlignFloats = 4;  // buffers start on 16-byte boundaries

inline bool default_domain(const NodeProto& n) { return n.domain.empty() || n.domain == "ai.onnx"; }

inline std::string shape_str(const std::vector<int64_t>& s) {
  std::ostringstream o;
  o << "[";
  for (size_t i = 0; i < s.size(); ++i) o << (i ? "," : "") << s[i];
  o << "]";
  return o.str();
}

// The product of s[from .. to) (clipped to s).
inline int64_t product(const std::vector<int64_t>& s, size_t from = 0, size_t to = SIZE_MAX) {
  const auto first = s.begin() + std::ptrdiff_t(std::min(from, s.size()));
  const auto last = s.begin() + std::ptrdiff_t(std::min(to, s.size()));
  int64_t p = 1;
  for (auto it = first; it < last; ++it) p *= *it;
  return p;
}

// A float literal that reads back as exactly `v` ("kInfinity" for infinities).
inline std::string literal(float v) {
  if (std::isinf(v)) return v > 0 ? "kInfinity" : "-kInfinity";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", double(v));
  std::string s = buf;
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s + "f";
}

inline std::string clamp_literal(float lo, float hi) { return "Clamp{" + literal(lo) + ", " + literal(hi) + "}"; }

// The generated code's variable for buffer b ("b3"). (Not `"b" + std::to_string(b)`: GCC 12
// at -O3 warns about that concatenation, -Wrestrict, falsely.)
inline std::string buffer_name(int b) {
  std::string s = std::to_string(b);
  s.insert(s.begin(), 'b');
  return s;
}

struct Buffer {
  int64_t floats = 0;           // its size in the arena's floats (u8 buffers: bytes / 4, rounded up)
  int first = -1, last = -1;    // steps that write it first and read it last
  int64_t offset = -1;          // in floats, in the arena
  int external = -1;            // >= 0: graph input number (not in the arena)
  std::string ctype = "float";  // its elements: float or uint8_t
};

struct Weight {
  std::string name, origin;     // C++ name, what it came from
  std::string ctype = "float";  // float, int8_t or int32_t
  std::vector<double> values;   // exact for each ctype
  int64_t bytes() const { return int64_t(values.size()) * (ctype == "int8_t" ? 1 : 4); }
};

class CortexMEmitter {
 public:
  CortexMEmitter(const ModelProto& model, std::string name) : model_(model), name_(std::move(name)) {}

  CortexMReport run(const std::string& out_dir);

 private:
  // ---- the graph ----
  const ModelProto& model_;
  std::string name_;
  GraphProto graph_;
  int64_t opset_ = 0;
  std::map<std::string, InferredType> types_;
  std::map<std::string, TensorData> constants_;
  std::map<std::string, std::vector<size_t>> readers_;  // value -> nodes that read it
  std::set<std::string> graph_outputs_;

  // ---- lowering ----
  std::vector<Buffer> buffers_;
  std::map<std::string, int> value_buffer_;  // value -> its buffer
  std::vector<std::string> steps_;           // the code of each step
  std::vector<Weight> weights_;
  std::set<std::string> kernel_headers_;
  std::vector<bool> done_;  // nodes lowered (fused into an earlier step included)

  const TensorData* constant(const std::string& v) const {
    auto it = constants_.find(v);
    return it == constants_.end() ? nullptr : &it->second;
  }
  [[noreturn]] void unsupported(const NodeProto& n, const std::string& why) const {
    EMBER_NOT_IMPLEMENTED("cortex-m codegen: node '", n.name, "' (", n.op_type, "): ", why);
  }
  std::vector<int64_t> shape_of(const NodeProto& n, const std::string& v) const {
    auto it = types_.find(v);
    if (it == types_.end() || !it->second.fully_static())
      unsupported(n, "the shape of '" + v + "' is not static (" +
                         (it == types_.end() ? std::string("unknown") : it->second.str()) +
                         "); export the model with fixed input shapes");
    std::vector<int64_t> s;
    for (const Dimension& d : *it->second.shape) s.push_back(*d.value);
    return s;
  }
  std::vector<float> floats_of(const TensorData& d) const { return d.to_vector<float>(); }

  int64_t attr_int(const NodeProto& n, const char* a, int64_t fallback) const {
    const AttributeProto* p = n.attribute(a);
    return p ? p->i : fallback;
  }
  float attr_float(const NodeProto& n, const char* a, float fallback) const {
    const AttributeProto* p = n.attribute(a);
    return p ? p->f : fallback;
  }
  std::vector<int64_t> attr_ints(const NodeProto& n, const char* a, std::vector<int64_t> fallback) const {
    const AttributeProto* p = n.attribute(a);
    return p ? p->ints : fallback;
  }
  std::string attr_string(const NodeProto& n, const char* a, std::string fallback) const {
    const AttributeProto* p = n.attribute(a);
    return p ? p->s : fallback;
  }

  std::string add_weight(std::string origin, const std::vector<float>& values) {
    for (float v : values)
      EMBER_CHECK(std::isfinite(v), "cortex-m codegen: weight '", origin, "' holds a non-finite value");
    return add_weight(std::move(origin), "float", std::vector<double>(values.begin(), values.end()));
  }
  std::string add_weight(std::string origin, std::string ctype, std::vector<double> values) {
    std::string cname = "w" + std::to_string(weights_.size());
    weights_.push_back({cname, std::move(origin), std::move(ctype), std::move(values)});
    return cname;
  }

  int new_buffer(int64_t floats) {
    buffers_.push_back({.floats = floats});
    return int(buffers_.size() - 1);
  }
  // The pointer expression of a value (its buffer's variable), whose elements must be `ctype`.
  std::string ptr(const NodeProto& n, const std::string& v, const std::string& ctype = "float") {
    auto it = value_buffer_.find(v);
    if (it == value_buffer_.end()) {
      if (constant(v)) unsupported(n, "input '" + v + "' is a constant where this op needs a computed value");
      unsupported(n, "input '" + v + "' has no value");
    }
    const std::string& has = buffers_[size_t(it->second)].ctype;
    if (has != ctype)
      unsupported(n, "input '" + v + "' is " + (has == "float" ? "FLOAT" : "UINT8") + "; this op takes " +
                         (ctype == "float" ? "FLOAT" : "UINT8"));
    use(it->second);
    return buffer_name(it->second);
  }
  // Whether value v lives in a u8 buffer.
  bool is_u8(const std::string& v) const {
    auto it = value_buffer_.find(v);
    return it != value_buffer_.end() && buffers_[size_t(it->second)].ctype == "uint8_t";
  }
  // A fresh u8 buffer for output value v of `count` bytes.
  std::string define_u8(const std::string& v, int64_t count) {
    const std::string b = define(v, (count + 3) / 4);
    buffers_[size_t(value_buffer_.at(v))].ctype = "uint8_t";
    return b;
  }
  void use(int buffer) {
    Buffer& b = buffers_[size_t(buffer)];
    const int step = int(steps_.size());
    if (b.first < 0) b.first = step;
    b.last = std::max(b.last, step);
  }
  // A fresh buffer for output value v of `floats` floats; returns its pointer expression.
  std::string define(const std::string& v, int64_t floats) {
    const int b = new_buffer(floats);
    value_buffer_[v] = b;
    use(b);
    return buffer_name(b);
  }
  // Output value `out` of an elementwise op on `in`: in's buffer when no later node reads a value
  // of that buffer (and it is not a graph input or output), a fresh one otherwise.
  std::string define_in_place(size_t node, const std::string& in, const std::string& out, int64_t floats) {
    auto it = value_buffer_.find(in);
    if (it != value_buffer_.end() && buffers_[size_t(it->second)].external < 0 &&
        buffers_[size_t(it->second)].floats == floats && buffers_[size_t(it->second)].ctype == "float" &&
        !read_later(it->second, node)) {
      value_buffer_[out] = it->second;
      use(it->second);
      return buffer_name(it->second);
    }
    return define(out, floats);
  }
  bool read_later(int buffer, size_t node) const {
    for (const auto& [v, b] : value_buffer_) {
      if (b != buffer) continue;
      if (graph_outputs_.count(v)) return true;
      auto r = readers_.find(v);
      if (r != readers_.end())
        for (size_t k : r->second)
          if (k > node && !done_[k]) return true;
    }
    return false;
  }
  void alias(const std::string& in, const std::string& out) {
    auto it = value_buffer_.find(in);
    EMBER_CHECK(it != value_buffer_.end(), "cortex-m codegen: '", in, "' has no value");
    value_buffer_[out] = it->second;
  }

  // The only reader of v when there is exactly one and v is not a graph output.
  const NodeProto* sole_reader(const std::string& v, size_t* index = nullptr) const {
    if (graph_outputs_.count(v)) return nullptr;
    auto it = readers_.find(v);
    if (it == readers_.end() || it->second.size() != 1) return nullptr;
    const NodeProto& r = graph_.nodes[it->second[0]];
    if (!default_domain(r)) return nullptr;
    if (index) *index = it->second[0];
    return &r;
  }
  // Relu, or Clip with constant bounds: the bounds; nullopt for anything else.
  std::optional<std::pair<float, float>> activation_bounds(const NodeProto& r) const {
    if (r.op_type == "Relu") return std::pair{0.0f, INFINITY};
    if (r.op_type != "Clip") return std::nullopt;
    float lo = -INFINITY, hi = INFINITY;
    if (opset_ < 11) {
      lo = attr_float(r, "min", lo);
      hi = attr_float(r, "max", hi);
    } else {
      for (size_t i = 1; i < r.inputs.size() && i < 3; ++i) {
        if (r.inputs[i].empty()) continue;
        const TensorData* c = constant(r.inputs[i]);
        if (!c || c->numel() != 1) return std::nullopt;
        (i == 1 ? lo : hi) = floats_of(*c)[0];
      }
    }
    return std::pair{lo, hi};
  }
  // Fuses a Relu / Clip that alone reads `value` into the step: returns the clamp and updates
  // `value` to the activation's output.
  std::string fuse_activation(std::string& value, std::string& fused_names) {
    size_t k = 0;
    const NodeProto* r = sole_reader(value, &k);
    if (!r) return "kNoClamp";
    std::optional<std::pair<float, float>> b = activation_bounds(*r);
    if (!b) return "kNoClamp";
    done_[k] = true;
    value = r->outputs[0];
    fused_names += " + '" + comment_text(r->name) + "' (" + r->op_type + ")";
    return clamp_literal(b->first, b->second);
  }

  void lower(size_t k);
  void lower_conv(size_t k);
  void lower_dense(size_t k);
  void lower_add(size_t k);
  void lower_pool(size_t k);
  void lower_rnn(size_t k);
  void lower_quantized(size_t k);
  std::string conv_shape(const NodeProto& n, std::vector<int64_t> x, std::vector<int64_t> ws, std::vector<int64_t> y);
  void plan();
  std::string emit_header(const CortexMReport& r) const;
  std::string emit_source(const CortexMReport& r) const;

  std::string comment(const NodeProto& n, const std::string& extra, const std::vector<int64_t>& in,
                      const std::vector<int64_t>& out) const {
    return "  // node '" + comment_text(n.name) + "' (" + n.op_type + ")" + extra + ": " + shape_str(in) + " -> " +
           shape_str(out) + "\n";
  }
  void add_step(std::string code) { steps_.push_back(std::move(code)); }
};

}  // namespace ember::onnx::cortex_m
