// ember-onnx: inspect and run ONNX models from the command line (issue 7).
//
//   ember-onnx info MODEL.onnx [--values]
//   ember-onnx run MODEL.onnx --input NAME=FILE.npy ... --output-dir DIR [--device cpu|cuda|cuda:N|cuda,cpu]
//   ember-onnx generate MODEL.onnx --out DIR [--name NAME] [--target ember|cortex-m]
//   ember-onnx quantize IN.onnx OUT.onnx --calibration DIR_or_FILE.npy ... [--exclude NODE ...] [--percentile P]
//
// Exit status: 0 on success, 1 when the model or an input cannot be read or run (the message
// is an ember::Error), 2 for usage errors.
#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ember/backends/cpu.hpp"
#include "ember/core/device.hpp"
#include "ember/core/error.hpp"
#include "ember/onnx/codegen.hpp"
#include "ember/onnx/model.hpp"
#include "ember/onnx/quantize.hpp"
#include "ember/onnx/runtime.hpp"
#include "ember/onnx/shape_inference.hpp"
#include "ember/store/npy.hpp"
#include "ember/tensor/dyn_tensor.hpp"

namespace {

namespace fs = std::filesystem;
using namespace ember;

constexpr int kExitError = 1;
constexpr int kExitUsage = 2;

const char kUsage[] =
    "usage:\n"
    "  ember-onnx info MODEL.onnx [--values]\n"
    "      print the IR version, producer, opsets, inputs, outputs, initializers, op histogram,\n"
    "      the ops the runtime does not support, the inferred type of every graph output (with\n"
    "      --values: of every value a node computes) and how many nodes constant folding removes\n"
    "  ember-onnx run MODEL.onnx --input NAME=FILE.npy ... --output-dir DIR [--device cpu|cuda|cuda:N]\n"
    "      run the model on NumPy inputs; writes each output as DIR/<output name>.npy; a list of\n"
    "      devices (--device cuda,cpu) runs each op on the first that supports it\n"
    "  ember-onnx generate MODEL.onnx --out DIR [--name NAME]\n"
    "      write C++ code for the model: DIR/NAME.hpp, DIR/NAME.cpp (a struct NAME with load() and\n"
    "      forward()) and DIR/NAME.safetensors (the initializers); NAME defaults to the model's\n"
    "      file name as an identifier\n"
    "  ember-onnx generate MODEL.onnx --target cortex-m --out DIR [--name NAME]\n"
    "      freestanding C++ for a microcontroller (docs/embedded.md): DIR/NAME.hpp and DIR/NAME.cpp\n"
    "      (weights as const arrays, one static activation arena planned by liveness, calls into\n"
    "      include/ember/kernels/; no heap, exceptions or threads) and DIR/NAME.json; prints the\n"
    "      flash (weights) and RAM (arena) it takes. --target ember (the default) is the above\n"
    "  ember-onnx generate --batch LIST --out DIR\n"
    "      the same for many models: each line of LIST is 'NAME MODEL.onnx'; prints 'ok NAME' or\n"
    "      'refused NAME: why' per model (the codegen conformance test uses it)\n"
    "  ember-onnx quantize IN.onnx OUT.onnx --calibration PATH ... [--exclude NODE ...] [--percentile P]\n"
    "      static int8 quantization, QOperator form (QLinearConv, QLinearAdd, u8 MaxPool; the rest\n"
    "      stays f32), calibrated on the model's single input: PATH is a .npy file (one sample) or\n"
    "      a directory whose *.npy files (sorted by name) are the samples; --exclude keeps a node\n"
    "      (by name or first output) in f32; --percentile P (e.g. 99.99) clips activation ranges to\n"
    "      the P-th percentile instead of min-max\n";

struct UsageError {
  std::string message;
};

// ---- info -------------------------------------------------------------------------------

// Bytes per element of an ONNX element type (0 for STRING and unknown types).
uint64_t element_bytes(int32_t data_type) {
  switch (static_cast<onnx::DataType>(data_type)) {
    case onnx::DataType::uint8:
    case onnx::DataType::int8:
    case onnx::DataType::boolean:
      return 1;
    case onnx::DataType::uint16:
    case onnx::DataType::int16:
    case onnx::DataType::float16:
    case onnx::DataType::bfloat16:
      return 2;
    case onnx::DataType::float32:
    case onnx::DataType::int32:
    case onnx::DataType::uint32:
      return 4;
    case onnx::DataType::float64:
    case onnx::DataType::int64:
    case onnx::DataType::uint64:
    case onnx::DataType::complex64:
      return 8;
    case onnx::DataType::complex128:
      return 16;
    default:
      return 0;
  }
}

uint64_t saturating_add(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }
uint64_t saturating_mul(uint64_t a, uint64_t b) { return b != 0 && a > UINT64_MAX / b ? UINT64_MAX : a * b; }

uint64_t tensor_bytes(const onnx::TensorProto& t) {
  if (t.data_type == static_cast<int32_t>(onnx::DataType::string)) {
    uint64_t n = 0;
    for (const std::string& s : t.string_data) n = saturating_add(n, s.size());
    return n;
  }
  uint64_t numel = 1;
  for (int64_t d : t.dims) numel = saturating_mul(numel, static_cast<uint64_t>(std::max<int64_t>(d, 0)));
  return saturating_mul(numel, element_bytes(t.data_type));
}

std::string human_bytes(uint64_t n) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(n);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  if (u == 0) return std::to_string(n) + " B";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f %s", v, units[u]);
  return buf;
}

std::string dims_string(const std::optional<std::vector<onnx::Dimension>>& shape) {
  if (!shape) return "[rank unknown]";
  std::string s = "[";
  for (size_t i = 0; i < shape->size(); ++i) {
    const onnx::Dimension& d = (*shape)[i];
    if (i) s += ", ";
    if (d.value)
      s += std::to_string(*d.value);
    else if (!d.param.empty())
      s += d.param;
    else
      s += "?";
  }
  return s + "]";
}

std::string describe_value(const onnx::ValueInfoProto& v) {
  if (!v.has_type) return "(type not declared)";
  if (v.type.kind != onnx::TypeProto::Kind::tensor) return onnx::type_string(v.type);
  return onnx::data_type_name(v.type.elem_type) + " " + dims_string(v.type.shape);
}

bool is_default_domain(const std::string& d) { return d.empty() || d == "ai.onnx"; }

void count_ops(const onnx::GraphProto& g, std::map<std::string, int64_t>& hist, int64_t& nodes, int64_t& sub_nodes,
               bool nested) {
  for (const onnx::NodeProto& n : g.nodes) {
    hist[is_default_domain(n.domain) ? n.op_type : n.domain + "::" + n.op_type] += 1;
    (nested ? sub_nodes : nodes) += 1;
    for (const onnx::AttributeProto& a : n.attributes) {
      if (a.g) count_ops(*a.g, hist, nodes, sub_nodes, true);
      for (const onnx::GraphProto& sg : a.graphs) count_ops(sg, hist, nodes, sub_nodes, true);
    }
  }
}

std::string describe_inferred(const onnx::InferredType& t) {
  return (t.elem_type ? onnx::data_type_name(t.elem_type) : std::string("?")) + " " + dims_string(t.shape);
}

// The inferred types of the graph outputs (all computed values with `all_values`) and what
// constant folding (on the CPU, on a copy of the graph) removes.
int print_inference(const onnx::ModelProto& m, bool all_values) {
  const int64_t opset = std::max<int64_t>(m.opset(""), 1);
  std::map<std::string, onnx::InferredType> types;
  try {
    types = onnx::infer_shapes(m.graph, opset, m.base_dir);
  } catch (const Error& e) {
    std::cout << "shape inference: " << e.what() << "\n";
    return kExitError;
  }
  const auto print = [&](const std::string& name) {
    auto it = types.find(name);
    std::cout << "  " << name << ": " << (it == types.end() ? "? [rank unknown]" : describe_inferred(it->second))
              << "\n";
  };
  std::cout << "inferred outputs:\n";
  for (const onnx::ValueInfoProto& v : m.graph.outputs) print(v.name);
  if (all_values) {
    std::cout << "inferred values:\n";
    for (const onnx::NodeProto& n : m.graph.nodes)
      for (const std::string& out : n.outputs)
        if (!out.empty()) print(out);
  }
  onnx::GraphProto folded = m.graph;
  try {
    const onnx::FoldStats s = onnx::fold_constants(folded, opset, Device::cpu(), m.base_dir);
    std::cout << "constant folding: " << s.nodes_folded << " of " << s.nodes_before << " nodes fold\n";
  } catch (const Error& e) {
    std::cout << "constant folding: " << e.what() << "\n";
    return kExitError;
  }
  return 0;
}

int cmd_info(const std::vector<std::string>& args) {
  std::vector<std::string> positional;
  bool all_values = false;
  for (const std::string& a : args) {
    if (a == "--values")
      all_values = true;
    else if (a.rfind("--", 0) == 0)
      throw UsageError{"info: unknown option " + a};
    else
      positional.push_back(a);
  }
  if (positional.size() != 1) throw UsageError{"info takes exactly one model: MODEL.onnx [--values]"};
  const std::string& path = positional[0];
  onnx::ModelProto m = onnx::load_model(path);
  const onnx::GraphProto& g = m.graph;

  std::cout << "model: " << path << "\n";
  std::cout << "ir_version: " << m.ir_version << "\n";
  std::string producer = m.producer_name;
  if (!m.producer_version.empty()) producer += (producer.empty() ? "" : " ") + m.producer_version;
  std::cout << "producer: " << (producer.empty() ? "(none)" : producer) << "\n";
  if (!g.name.empty()) std::cout << "graph: " << g.name << "\n";
  std::cout << "opsets:";
  if (m.opset_import.empty()) std::cout << " (none)";
  for (size_t i = 0; i < m.opset_import.size(); ++i) {
    const onnx::OperatorSetId& o = m.opset_import[i];
    std::cout << (i ? ", " : " ") << (is_default_domain(o.domain) ? "ai.onnx" : o.domain) << " " << o.version;
  }
  std::cout << "\n";

  std::set<std::string> init_names;
  for (const onnx::TensorProto& t : g.initializers) init_names.insert(t.name);
  std::vector<const onnx::ValueInfoProto*> inputs;
  for (const onnx::ValueInfoProto& v : g.inputs)
    if (!init_names.count(v.name)) inputs.push_back(&v);
  std::cout << "inputs (" << inputs.size() << "):\n";
  for (const onnx::ValueInfoProto* v : inputs) std::cout << "  " << v->name << ": " << describe_value(*v) << "\n";
  std::cout << "outputs (" << g.outputs.size() << "):\n";
  for (const onnx::ValueInfoProto& v : g.outputs) std::cout << "  " << v.name << ": " << describe_value(v) << "\n";

  uint64_t param_bytes = 0;
  for (const onnx::TensorProto& t : g.initializers) param_bytes = saturating_add(param_bytes, tensor_bytes(t));
  std::cout << "initializers: " << g.initializers.size() << " (" << param_bytes << " bytes";
  if (param_bytes >= 1024) std::cout << ", " << human_bytes(param_bytes);
  std::cout << ")\n";

  std::map<std::string, int64_t> hist;
  int64_t nodes = 0, sub_nodes = 0;
  count_ops(g, hist, nodes, sub_nodes, false);
  std::vector<std::pair<std::string, int64_t>> ops(hist.begin(), hist.end());
  std::stable_sort(ops.begin(), ops.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  std::cout << "ops: " << nodes << (nodes == 1 ? " node" : " nodes");
  if (sub_nodes) std::cout << " + " << sub_nodes << " in subgraphs";
  std::cout << ", " << ops.size() << " op types\n";
  size_t width = 0;
  for (const auto& [op, n] : ops) width = std::max(width, op.size());
  for (const auto& [op, n] : ops) std::cout << "  " << op << std::string(width - op.size() + 2, ' ') << n << "\n";

  std::vector<std::string> unsupported;
  for (const auto& [op, n] : hist)
    if (!onnx::has_op_handler(op)) unsupported.push_back(op);
  if (unsupported.empty()) {
    std::cout << "runtime: all ops supported\n";
  } else {
    std::cout << "runtime: unsupported ops (" << unsupported.size() << "):";
    for (size_t i = 0; i < unsupported.size(); ++i) std::cout << (i ? ", " : " ") << unsupported[i];
    std::cout << "\n";
  }
  return print_inference(m, all_values);
}

// ---- run --------------------------------------------------------------------------------

Device parse_one_device(const std::string& s) {
  if (s == "cpu") return Device::cpu();
  if (s == "cuda") return Device::cuda(0);
  if (s.rfind("cuda:", 0) == 0) {
    std::string idx = s.substr(5);
    if (!idx.empty() && idx.size() <= 4 &&
        std::all_of(idx.begin(), idx.end(), [](char c) { return c >= '0' && c <= '9'; }))
      return Device::cuda(std::stoi(idx));
  }
  throw UsageError{"--device must be cpu, cuda or cuda:N, or a comma-separated list of them, not '" + s + "'"};
}

// One device, or a comma-separated list ("cuda,cpu"): a router over them, each op on the first
// that supports it (ember/decorators/router.hpp). A device named again is a backend of its own
// for the CPU ("cpu,cpu": two CPU backends); a GPU named twice is an error.
Device parse_device(const std::string& s) {
  if (s.find(',') == std::string::npos) return parse_one_device(s);
  std::vector<Device> devices;
  size_t start = 0;
  while (true) {
    const size_t end = s.find(',', start);
    const std::string one = s.substr(start, end == std::string::npos ? std::string::npos : end - start);
    Device d = parse_one_device(one);
    if (std::find(devices.begin(), devices.end(), d) != devices.end()) {
      if (one != "cpu") throw UsageError{"--device lists " + one + " twice"};
      d = Device(cpu::make_backend());
    }
    devices.push_back(d);
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return Device::router(std::move(devices));
}

// A file name for an output: characters other than [A-Za-z0-9._-] become '_', a leading '.'
// too (no hidden files, no "." or ".."), long names are cut, and clashes get a suffix.
std::string sanitize_name(const std::string& name, std::set<std::string>& used) {
  std::string s;
  for (char c : name) {
    bool ok =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.';
    s.push_back(ok ? c : '_');
  }
  if (s.empty()) s = "_";
  if (s[0] == '.') s[0] = '_';
  if (s.size() > 200) s.resize(200);
  std::string candidate = s;
  for (int k = 2; used.count(candidate); ++k) candidate = s + "_" + std::to_string(k);
  used.insert(candidate);
  return candidate;
}

std::string shape_string(const Shape& s) {
  std::string out = "(";
  for (int i = 0; i < s.rank(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  if (s.rank() == 1) out += ",";
  return out + ")";
}

int cmd_run(const std::vector<std::string>& args) {
  std::optional<std::string> model_path, output_dir, device_name;
  std::vector<std::string> input_specs;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&](std::string_view flag) -> std::string {
      if (a.size() > flag.size() && a.compare(0, flag.size(), flag) == 0 && a[flag.size()] == '=')
        return a.substr(flag.size() + 1);
      if (i + 1 >= args.size()) throw UsageError{std::string(flag) + " needs a value"};
      return args[++i];
    };
    auto is = [&](std::string_view flag) {
      return a == flag || (a.size() > flag.size() && a.compare(0, flag.size(), flag) == 0 && a[flag.size()] == '=');
    };
    if (is("--input")) {
      input_specs.push_back(value("--input"));
    } else if (is("--output-dir")) {
      if (output_dir) throw UsageError{"--output-dir given twice"};
      output_dir = value("--output-dir");
    } else if (is("--device")) {
      if (device_name) throw UsageError{"--device given twice"};
      device_name = value("--device");
    } else if (a.size() > 1 && a[0] == '-') {
      throw UsageError{"unknown option '" + a + "'"};
    } else {
      if (model_path) throw UsageError{"run takes one model, got '" + *model_path + "' and '" + a + "'"};
      model_path = a;
    }
  }
  if (!model_path) throw UsageError{"run needs MODEL.onnx"};
  if (!output_dir) throw UsageError{"run needs --output-dir DIR"};
  if (output_dir->empty()) throw UsageError{"--output-dir is empty"};
  Device device = parse_device(device_name.value_or("cpu"));

  onnx::Model model = onnx::Model::load(*model_path, device);
  std::map<std::string, const onnx::ValueInfo*> declared;
  for (const onnx::ValueInfo& in : model.inputs()) declared[in.name] = &in;

  std::map<std::string, DynTensor> feeds;
  for (const std::string& spec : input_specs) {
    // NAME=FILE: split at the '=' whose left side names a model input, else at the first one
    // (input names and paths may both contain '=').
    size_t eq = std::string::npos;
    for (size_t p = spec.find('='); p != std::string::npos; p = spec.find('=', p + 1)) {
      if (eq == std::string::npos) eq = p;
      if (declared.count(spec.substr(0, p))) {
        eq = p;
        break;
      }
    }
    if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
      throw UsageError{"--input must be NAME=FILE.npy, not '" + spec + "'"};
    std::string name = spec.substr(0, eq), file = spec.substr(eq + 1);
    if (feeds.count(name)) throw UsageError{"input '" + name + "' given twice"};
    TensorData data = store::read_npy(file);
    auto it = declared.find(name);
    if (it != declared.end() && it->second->dtype && *it->second->dtype != data.dtype() &&
        kind_of(*it->second->dtype) == kind_of(data.dtype()) && !is_bool(data.dtype())) {
      std::cerr << "ember-onnx: note: input '" << name << "': converting " << store::npy_dtype_name(data.dtype())
                << " to " << store::npy_dtype_name(*it->second->dtype) << " as the model declares\n";
      data = data.convert(*it->second->dtype);
    }
    feeds.emplace(name, DynTensor::from_data(data, device));
  }

  std::map<std::string, DynTensor> outputs = model.run(feeds);

  fs::path dir(*output_dir);
  std::error_code ec;
  fs::create_directories(dir, ec);
  EMBER_CHECK(!ec && fs::is_directory(dir), "cannot create output directory '", dir.string(), "'",
              ec ? ": " + ec.message() : std::string());
  std::set<std::string> used;
  std::vector<std::string> order;
  for (const onnx::ValueInfo& o : model.outputs()) order.push_back(o.name);
  for (const auto& [name, t] : outputs)
    if (std::find(order.begin(), order.end(), name) == order.end()) order.push_back(name);
  for (const std::string& name : order) {
    auto it = outputs.find(name);
    if (it == outputs.end()) continue;
    TensorData data = it->second.into_data();
    std::string file = (dir / (sanitize_name(name, used) + ".npy")).string();
    store::write_npy(file, data);
    std::cout << name << ": shape " << shape_string(data.shape()) << " "
              << store::npy_dtype_name(store::npy_stored_dtype(data.dtype()));
    if (data.dtype() != store::npy_stored_dtype(data.dtype()))
      std::cout << " (" << store::npy_dtype_name(data.dtype()) << " written as "
                << store::npy_dtype_name(store::npy_stored_dtype(data.dtype())) << ": NumPy has no "
                << store::npy_dtype_name(data.dtype()) << ")";
    std::cout << " -> " << file << "\n";
  }
  return 0;
}

// ---- generate ---------------------------------------------------------------------------

int cmd_generate(const std::vector<std::string>& args) {
  std::optional<std::string> model_path, out_dir, name, batch, target;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--out" || a == "--name" || a == "--batch" || a == "--target") {
      if (i + 1 >= args.size()) throw UsageError{a + " needs a value"};
      std::optional<std::string>& slot = a == "--out"     ? out_dir
                                         : a == "--name"  ? name
                                         : a == "--batch" ? batch
                                                          : target;
      if (slot) throw UsageError{a + " given twice"};
      slot = args[++i];
    } else if (a.rfind("--", 0) == 0) {
      throw UsageError{"unknown option '" + a + "'"};
    } else {
      if (model_path) throw UsageError{"generate takes one model, got '" + *model_path + "' and '" + a + "'"};
      model_path = a;
    }
  }
  if (!out_dir || out_dir->empty()) throw UsageError{"generate needs --out DIR"};
  if (target && *target != "ember" && *target != "cortex-m")
    throw UsageError{"--target is 'ember' or 'cortex-m', not '" + *target + "'"};
  const bool cortex_m = target && *target == "cortex-m";
  if (batch) {
    if (cortex_m) throw UsageError{"generate --batch takes no --target cortex-m"};
    if (model_path || name) throw UsageError{"generate --batch takes no MODEL.onnx or --name"};
    std::ifstream list(*batch);
    if (!list.good()) throw UsageError{"cannot read " + *batch};
    std::string line;
    while (std::getline(list, line)) {
      if (line.empty()) continue;
      size_t sp = line.find(' ');
      if (sp == std::string::npos) throw UsageError{"--batch lines are 'NAME MODEL.onnx', not '" + line + "'"};
      std::string n = line.substr(0, sp), path = line.substr(sp + 1);
      try {
        onnx::generate(onnx::load_model(path), *out_dir, n);
        std::cout << "ok " << n << "\n";
      } catch (const std::exception& e) {
        std::string msg = e.what();
        std::replace(msg.begin(), msg.end(), '\n', ' ');
        std::cout << "refused " << n << ": " << msg << "\n";
      }
    }
    return 0;
  }
  if (!model_path) throw UsageError{"generate needs MODEL.onnx"};
  if (!name) {
    std::string stem = fs::path(*model_path).stem().string(), id;
    for (char ch : stem) id += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
    if (id.empty() || std::isdigit(static_cast<unsigned char>(id[0]))) id = "model_" + id;
    name = id;
  }
  onnx::ModelProto m = onnx::load_model(*model_path);
  if (cortex_m) {
    const onnx::CortexMReport r = onnx::generate_cortex_m(m, *out_dir, *name);
    std::cout << "wrote " << (fs::path(*out_dir) / (*name + ".hpp")).string() << ", " << *name << ".cpp and " << *name
              << ".json\n"
              << "flash: " << r.weight_bytes << " bytes of weights (plus the kernels' code)\n"
              << "ram: " << r.arena_bytes << " bytes of activation arena (one buffer per tensor: " << r.unplanned_bytes
              << ")\n"
              << "steps: " << r.steps << " kernel calls for " << r.nodes << " nodes\n";
    return 0;
  }
  onnx::generate(m, *out_dir, *name);
  std::cout << "wrote " << (fs::path(*out_dir) / (*name + ".hpp")).string() << ", " << *name << ".cpp and " << *name
            << ".safetensors\n";
  return 0;
}

// ---- quantize ---------------------------------------------------------------------------

// The .npy files a --calibration argument names: the file itself, or a directory's *.npy sorted.
std::vector<std::string> calibration_files(const std::string& path) {
  if (!fs::is_directory(path)) return {path};
  std::vector<std::string> files;
  for (const fs::directory_entry& e : fs::directory_iterator(path))
    if (e.is_regular_file() && e.path().extension() == ".npy") files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  if (files.empty()) throw ember::Error("quantize: calibration directory '" + path + "' holds no .npy files");
  return files;
}

int cmd_quantize(const std::vector<std::string>& args) {
  std::vector<std::string> paths, calibration;
  onnx::QuantizeOptions options;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    const bool takes_value = a == "--calibration" || a == "--exclude" || a == "--percentile";
    if (takes_value && i + 1 >= args.size()) throw UsageError{a + " needs a value"};
    if (a == "--calibration") calibration.push_back(args[++i]);
    else if (a == "--percentile") options.percentile = std::atof(args[++i].c_str());
    else if (a == "--exclude") options.exclude_nodes.push_back(args[++i]);
    else if (a.size() > 1 && a[0] == '-') throw UsageError{"unknown option '" + a + "'"};
    else paths.push_back(a);
  }
  if (paths.size() != 2) throw UsageError{"quantize needs IN.onnx and OUT.onnx"};
  if (calibration.empty()) throw UsageError{"quantize needs --calibration DIR or FILE.npy"};
  onnx::Model model = onnx::Model::load(paths[0], Device::cpu());
  if (model.inputs().size() != 1)
    throw ember::Error("quantize: '" + paths[0] + "' has " + std::to_string(model.inputs().size()) +
                       " inputs; --calibration feeds models of one input");
  const std::string& input = model.inputs()[0].name;
  std::vector<onnx::CalibrationSample> samples;
  for (const std::string& c : calibration)
    for (const std::string& file : calibration_files(c))
      samples.push_back({{input, DynTensor::from_data(store::read_npy(file))}});
  onnx::QuantizeReport r = onnx::quantize_static(paths[0], paths[1], samples, options);
  std::cout << "wrote " << paths[1] << ": " << r.quantized_convs << " QLinearConv, " << r.quantized_adds
            << " QLinearAdd, " << r.u8_max_pools << " u8 MaxPool, " << r.quantize_nodes << " QuantizeLinear, "
            << r.dequantize_nodes << " DequantizeLinear (" << r.samples << " calibration samples)\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    std::cerr << kUsage;
    return kExitUsage;
  }
  const std::string cmd = args[0];
  args.erase(args.begin());
  if (cmd == "-h" || cmd == "--help" || cmd == "help") {
    std::cout << kUsage;
    return 0;
  }
  try {
    if (cmd == "info") return cmd_info(args);
    if (cmd == "run") return cmd_run(args);
    if (cmd == "generate") return cmd_generate(args);
    if (cmd == "quantize") return cmd_quantize(args);
    throw UsageError{"unknown command '" + cmd + "'"};
  } catch (const UsageError& e) {
    std::cerr << "ember-onnx: " << e.message << "\n" << kUsage;
    return kExitUsage;
  } catch (const ember::Error& e) {
    std::cerr << "ember-onnx: error: " << e.what() << "\n";
    return kExitError;
  } catch (const std::exception& e) {
    std::cerr << "ember-onnx: error: " << e.what() << "\n";
    return kExitError;
  }
}
