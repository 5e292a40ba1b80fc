// The C functions that web/ember.js calls in the wasm module (docs/web.md "The module's
// functions"). A model is an integer id. Every function catches what ember throws: a failing call
// returns 0 (or null), and ember_web_error() gives the message, which the JavaScript side raises
// as an Error.
//
//   id = ember_web_load(bytes, size, "resnet18.onnx");      // ONNX or safetensors, sniffed
//   ember_web_set_input(id, 0, values, "f32", shape, rank);  // copied
//   ember_web_run(id);
//   ember_web_output_data(id, 0);  ember_web_output_info(id, 0);  // {"name","dtype","shape"}
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "ember/backends/cpu.hpp"
#include "ember/core/error.hpp"
#include "ember/onnx/runtime.hpp"
#include "ember/store/safetensors.hpp"
#include "ember/version.hpp"
#include "ember/web.hpp"

#define EMBER_WEB_EXPORT extern "C" __attribute__((used, visibility("default")))

namespace ember::web {
namespace {

struct Session {
  std::string source;  // the name the page gave the file, for messages
  std::optional<onnx::Model> onnx;
  Forward forward;     // a registered architecture's (when onnx is empty)
  std::string arch;
  std::vector<std::string> input_names, output_names;
  std::vector<DynTensor> inputs;
  std::vector<TensorData> outputs;  // of the last run, contiguous on the host
  std::vector<std::string> output_info;
};

std::map<int, Session>& sessions() {
  static std::map<int, Session> s;
  return s;
}
int g_next_id = 1;
std::string g_error, g_text;

Session& session(int id) {
  auto it = sessions().find(id);
  EMBER_CHECK(it != sessions().end(), "ember.js: no model with id ", id, " (freed, or its load failed)");
  return it->second;
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\', out += c;
    else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else out += c;
  }
  return out + "\"";
}

std::string shape_json(const Shape& s) {
  std::string out = "[";
  for (int i = 0; i < s.rank(); ++i) {
    if (i) out += ",";  // not `"," + std::string`: GCC 12 warns about it at -O3 (-Wrestrict, a false positive)
    out += std::to_string(s[i]);
  }
  return out + "]";
}

// Runs f; on an exception stores its message and returns `failed`.
template <class R, class F>
R guarded(F&& f, R failed) {
  try {
    g_error.clear();
    return f();
  } catch (const std::exception& e) {
    g_error = e.what();
  } catch (...) {
    g_error = "ember.js: unknown C++ exception";
  }
  return failed;
}

bool is_safetensors(std::span<const std::byte> b) {
  // 8 bytes of little-endian header length, then the JSON header's '{'
  return b.size() >= 9 && static_cast<char>(b[8]) == '{';
}

Session load(std::span<const std::byte> bytes, const std::string& source) {
  const Device device = Device::cpu();
  Session s;
  s.source = source;
  EMBER_CHECK(!bytes.empty(), "ember.js: ", source, " is empty");
  if (is_safetensors(bytes)) {
    const store::SafetensorsHeader header = store::read_safetensors_header_from_memory(bytes, source);
    auto it = header.metadata.find("model");
    EMBER_CHECK(it != header.metadata.end(), "ember.js: ", source,
                " has no \"model\" metadata naming its architecture (nn::save(model, path, {{\"model\", NAME}}))");
    s.arch = it->second;
    const Loader& loader = architecture(s.arch);
    const store::TensorMap weights = store::load_safetensors_from_memory(bytes, source, device);
    s.forward = loader(nn::NamedTensors(weights.begin(), weights.end()), device);
    s.input_names = {"input"};
    s.output_names = {"output"};
  } else {
    s.onnx = onnx::Model::from_proto(onnx::parse_model(bytes), device);
    const std::vector<std::string> missing = s.onnx->unsupported_ops();
    if (!missing.empty()) {
      std::string list;
      for (const auto& op : missing) list += (list.empty() ? "" : ", ") + op;
      throw NotImplemented("ember.js: " + source + " uses ONNX ops this build lacks: " + list);
    }
    for (const auto& in : s.onnx->inputs()) s.input_names.push_back(in.name);
    for (const auto& out : s.onnx->outputs()) s.output_names.push_back(out.name);
  }
  s.inputs.resize(s.input_names.size());
  return s;
}

// Checks an input against the ONNX declaration (dtype, rank, fixed sizes).
void check_input(const Session& s, size_t index, DType dtype, const Shape& shape) {
  if (!s.onnx) return;
  const onnx::ValueInfo& v = s.onnx->inputs()[index];
  if (v.dtype && *v.dtype != dtype)
    EMBER_FAIL("ember.js: input '", v.name, "' of ", s.source, " is ", dtype_name(*v.dtype), ", got ", dtype_name(dtype));
  if (!v.shape) return;
  bool ok = int64_t(v.shape->size()) == shape.rank();
  std::string want = "[";
  for (size_t d = 0; d < v.shape->size(); ++d) {
    const onnx::Dimension& dim = (*v.shape)[d];
    want += (d ? ", " : "") + (dim.value ? std::to_string(*dim.value) : dim.param.empty() ? "?" : dim.param);
    if (ok && dim.value && *dim.value != shape[int(d)]) ok = false;
  }
  want += "]";
  EMBER_CHECK(ok, "ember.js: input '", v.name, "' of ", s.source, " must have shape ", want, ", got ", shape);
}

}  // namespace
}  // namespace ember::web

using namespace ember;
using namespace ember::web;

// The message of the last failed call ("" after a call that succeeded).
EMBER_WEB_EXPORT const char* ember_web_error() { return g_error.c_str(); }

// The version and the build's threads, as JSON: {"version": "0.x.y", "threads": N}.
EMBER_WEB_EXPORT const char* ember_web_about() {
  g_text = std::string("{\"version\":\"") + EMBER_VERSION_STRING + "\",\"threads\":" +
           std::to_string(cpu::num_threads()) + "}";
  return g_text.c_str();
}

// Uses n threads for the CPU backend (the multi-threaded build; 1 elsewhere). Returns the count set.
EMBER_WEB_EXPORT int ember_web_set_threads(int n) {
  return guarded([&] {
    cpu::set_num_threads(n);
    return cpu::num_threads();
  }, 0);
}

// The registered architectures (EMBER_WEB_MODEL), as a JSON array of names.
EMBER_WEB_EXPORT const char* ember_web_architectures() {
  g_text = "[";
  for (const std::string& a : architectures()) {
    if (g_text.size() > 1) g_text += ",";
    g_text += json_string(a);
  }
  g_text += "]";
  return g_text.c_str();
}

// Loads a model file from memory: ONNX, or safetensors of a registered architecture. `name` is
// used in messages. Returns the model's id, or 0.
EMBER_WEB_EXPORT int ember_web_load(const uint8_t* bytes, int size, const char* name) {
  return guarded([&] {
    EMBER_CHECK(size >= 0 && (bytes || size == 0), "ember.js: bad buffer for ", name);
    Session s = load({reinterpret_cast<const std::byte*>(bytes), static_cast<size_t>(size)}, name ? name : "<model>");
    const int id = g_next_id++;
    sessions().emplace(id, std::move(s));
    return id;
  }, 0);
}

// The model's inputs and outputs as JSON: {"kind": "onnx"|"module", "arch": ..., "inputs":
// [{"name", "dtype", "shape"}], "outputs": [{"name"}]}; unknown sizes are null, or their name.
EMBER_WEB_EXPORT const char* ember_web_info(int id) {
  return guarded<const char*>([&]() -> const char* {
    const Session& s = session(id);
    std::ostringstream o;
    o << "{\"kind\":\"" << (s.onnx ? "onnx" : "module") << "\",\"arch\":" << json_string(s.arch) << ",\"inputs\":[";
    for (size_t i = 0; i < s.input_names.size(); ++i) {
      o << (i ? "," : "") << "{\"name\":" << json_string(s.input_names[i]);
      if (s.onnx) {
        const onnx::ValueInfo& v = s.onnx->inputs()[i];
        o << ",\"dtype\":" << (v.dtype ? json_string(std::string(dtype_name(*v.dtype))) : "null") << ",\"shape\":";
        if (!v.shape) o << "null";
        else {
          o << "[";
          for (size_t d = 0; d < v.shape->size(); ++d) {
            const onnx::Dimension& dim = (*v.shape)[d];
            o << (d ? "," : "") << (dim.value ? std::to_string(*dim.value) : dim.param.empty() ? "null" : json_string(dim.param));
          }
          o << "]";
        }
      }
      o << "}";
    }
    o << "],\"outputs\":[";
    for (size_t i = 0; i < s.output_names.size(); ++i) o << (i ? "," : "") << "{\"name\":" << json_string(s.output_names[i]) << "}";
    o << "]}";
    g_text = o.str();
    return g_text.c_str();
  }, nullptr);
}

// Sets input `index` to a copy of `data`: dtype by ember's name ("f32", "i64", ...), shape of
// `rank` sizes. Returns 1, or 0 (wrong index, dtype or shape).
EMBER_WEB_EXPORT int ember_web_set_input(int id, int index, const void* data, const char* dtype, const int32_t* shape,
                                         int rank) {
  return guarded([&] {
    Session& s = session(id);
    EMBER_CHECK(index >= 0 && size_t(index) < s.inputs.size(), "ember.js: ", s.source, " has ", s.inputs.size(),
                " input(s), no input ", index);
    EMBER_CHECK(rank >= 0 && rank <= 8, "ember.js: input rank ", rank, " out of range");
    std::vector<int64_t> dims(shape, shape + rank);
    for (int64_t d : dims) EMBER_CHECK(d >= 0, "ember.js: negative size in input shape");
    const Shape sh(dims);
    const DType dt = dtype_from_name(dtype);
    check_input(s, size_t(index), dt, sh);
    const size_t n = size_t(sh.numel()) * dtype_size(dt);
    std::vector<std::byte> bytes(n);
    if (n) std::memcpy(bytes.data(), data, n);
    s.inputs[size_t(index)] = DynTensor::from_data(TensorData(sh, dt, std::move(bytes)), Device::cpu());
    return 1;
  }, 0);
}

// Runs the model on its inputs. Returns the number of outputs, or 0.
EMBER_WEB_EXPORT int ember_web_run(int id) {
  return guarded([&] {
    Session& s = session(id);
    for (size_t i = 0; i < s.inputs.size(); ++i)
      EMBER_CHECK(s.inputs[i].defined(), "ember.js: input '", s.input_names[i], "' of ", s.source, " was not set");
    std::vector<DynTensor> outs;
    if (s.onnx) {
      std::map<std::string, DynTensor> feed;
      for (size_t i = 0; i < s.inputs.size(); ++i) feed.emplace(s.input_names[i], s.inputs[i]);
      std::map<std::string, DynTensor> res = s.onnx->run(feed);
      for (const std::string& name : s.output_names) outs.push_back(res.at(name));
    } else {
      outs.push_back(s.forward(s.inputs[0]));
    }
    s.outputs.clear();
    s.output_info.clear();
    for (size_t i = 0; i < outs.size(); ++i) {
      s.outputs.push_back(outs[i].into_data());
      const TensorData& d = s.outputs.back();
      s.output_info.push_back("{\"name\":" + json_string(s.output_names[i]) + ",\"dtype\":\"" +
                              std::string(dtype_name(d.dtype())) + "\",\"shape\":" + shape_json(d.shape()) + "}");
    }
    return static_cast<int>(outs.size());
  }, 0);
}

// Output `index` of the last run: {"name", "dtype", "shape"}, or null.
EMBER_WEB_EXPORT const char* ember_web_output_info(int id, int index) {
  return guarded<const char*>([&]() -> const char* {
    Session& s = session(id);
    EMBER_CHECK(index >= 0 && size_t(index) < s.outputs.size(), "ember.js: no output ", index, " (run the model first)");
    return s.output_info[size_t(index)].c_str();
  }, nullptr);
}

// The values of output `index` of the last run (row-major, valid until the next run or free).
EMBER_WEB_EXPORT const void* ember_web_output_data(int id, int index) {
  return guarded<const void*>([&]() -> const void* {
    Session& s = session(id);
    EMBER_CHECK(index >= 0 && size_t(index) < s.outputs.size(), "ember.js: no output ", index, " (run the model first)");
    return s.outputs[size_t(index)].bytes().data();
  }, nullptr);
}

// Frees the model and its tensors.
EMBER_WEB_EXPORT void ember_web_free(int id) { sessions().erase(id); }
