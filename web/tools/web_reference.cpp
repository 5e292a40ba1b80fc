// The native twin of the browser module: runs a model through the same C functions that
// web/ember-worker.js calls in the wasm build (src/web/api.cpp), with the same architectures
// (web/models.cpp), and prints its outputs, so that the browser tests can compare the page's
// predictions with native ones.
//
//   ./build/web/ember_web_reference MODEL_FILE INPUTS.json
//
// MODEL_FILE: a safetensors file of a registered architecture, or an ONNX file. INPUTS.json: the
// shape of one sample and the samples, each a list of numbers (nested lists are flattened);
// other keys are ignored, so build/web-models/fashion_samples.json is an input file as it is:
//
//   {"shape": [1, 1, 8, 8], "inputs": [[0, 0.25, ...], ...]}
//
// Each sample runs alone (batch as in "shape", as the page runs it), as f32 input 0. Prints
// {"outputs": [[...output 0's values...], ...], "argmax": [...]} on stdout (argmax over each
// sample's output values). Errors: the message on stderr, exit status 1.
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

extern "C" {
const char* ember_web_error();
int ember_web_load(const uint8_t* bytes, int size, const char* name);
int ember_web_set_input(int id, int index, const void* data, const char* dtype, const int32_t* shape, int rank);
int ember_web_run(int id);
const char* ember_web_output_info(int id, int index);
const void* ember_web_output_data(int id, int index);
void ember_web_free(int id);
}

namespace {

[[noreturn]] void fail(const std::string& message) { throw std::runtime_error("ember_web_reference: " + message); }

// A C function's result: a failed call (0 or null) raises its message.
template <class T>
T checked(T result, const char* call) {
  if (!result) fail(std::string(call) + ": " + ember_web_error());
  return result;
}

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) fail("cannot open " + path);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

// Reads the few JSON shapes the inputs file has: objects, (nested) lists of numbers; other values
// (strings, true/false/null) are skipped wherever they are.
class JsonReader {
 public:
  JsonReader(std::string text, std::string source) : t_(std::move(text)), source_(std::move(source)) {}

  // Calls on_key(key) for each key of the top-level object, positioned at its value.
  template <class F>
  void object(F&& on_key) {
    expect('{');
    if (peek() == '}') return void(++i_);
    for (;;) {
      const std::string key = string();
      expect(':');
      on_key(key);
      if (peek() == ',') {
        ++i_;
        continue;
      }
      expect('}');
      return;
    }
  }
  // A list of numbers, nested lists flattened into `out`.
  void numbers(std::vector<double>& out) {
    if (peek() != '[') return out.push_back(number());
    ++i_;
    if (peek() == ']') return void(++i_);
    for (;;) {
      numbers(out);
      if (peek() == ',') {
        ++i_;
        continue;
      }
      expect(']');
      return;
    }
  }
  // A list whose items each call on_item(), positioned at the item.
  template <class F>
  void list(F&& on_item) {
    expect('[');
    if (peek() == ']') return void(++i_);
    for (;;) {
      on_item();
      if (peek() == ',') {
        ++i_;
        continue;
      }
      expect(']');
      return;
    }
  }
  void skip() {
    const char c = peek();
    if (c == '{')
      object([&](const std::string&) { skip(); });
    else if (c == '[')
      list([&] { skip(); });
    else if (c == '"')
      string();
    else if (c == 't' || c == 'f' || c == 'n') {
      while (i_ < t_.size() && std::isalpha(static_cast<unsigned char>(t_[i_]))) ++i_;
    } else
      number();
  }
  void end() {
    if (peek() != '\0') error("text after the end");
  }

 private:
  char peek() {
    while (i_ < t_.size() && std::isspace(static_cast<unsigned char>(t_[i_]))) ++i_;
    return i_ < t_.size() ? t_[i_] : '\0';
  }
  void expect(char c) {
    if (peek() != c) error(std::string("expected '") + c + "'");
    ++i_;
  }
  std::string string() {
    expect('"');
    std::string s;
    while (i_ < t_.size() && t_[i_] != '"') {
      if (t_[i_] == '\\') ++i_;  // keys and skipped strings only: an escape keeps the next character
      if (i_ < t_.size()) s += t_[i_++];
    }
    expect('"');
    return s;
  }
  double number() {
    peek();
    const char* begin = t_.c_str() + i_;
    char* end = nullptr;
    const double v = std::strtod(begin, &end);
    if (end == begin) error("expected a number");
    i_ += size_t(end - begin);
    return v;
  }
  [[noreturn]] void error(const std::string& what) {
    fail(source_ + ": not an inputs file (" + what + " at byte " + std::to_string(i_) +
         "); expected {\"shape\": [...], \"inputs\": [[...], ...]}");
  }

  std::string t_, source_;
  size_t i_ = 0;
};

struct Inputs {
  std::vector<int32_t> shape;
  std::vector<std::vector<float>> samples;
};

Inputs read_inputs(const std::string& path) {
  JsonReader json(read_file(path), path);
  Inputs in;
  bool has_shape = false, has_inputs = false;
  json.object([&](const std::string& key) {
    if (key == "shape") {
      std::vector<double> dims;
      json.numbers(dims);
      for (double d : dims) {
        if (d < 0 || d != double(int32_t(d))) fail(path + ": \"shape\" holds " + std::to_string(d) + ", not a size");
        in.shape.push_back(int32_t(d));
      }
      has_shape = true;
    } else if (key == "inputs") {
      json.list([&] {
        std::vector<double> values;
        json.numbers(values);
        // through double, as JavaScript's Float32Array.from(numbers) rounds them
        in.samples.emplace_back(values.begin(), values.end());
      });
      has_inputs = true;
    } else {
      json.skip();
    }
  });
  json.end();
  if (!has_shape || !has_inputs) fail(path + ": needs both \"shape\" and \"inputs\"");
  int64_t numel = 1;
  for (int32_t d : in.shape) numel *= d;
  for (size_t i = 0; i < in.samples.size(); ++i)
    if (int64_t(in.samples[i].size()) != numel)
      fail(path + ": input " + std::to_string(i) + " has " + std::to_string(in.samples[i].size()) +
           " values, the shape holds " + std::to_string(numel));
  return in;
}

// The shape's element count from ember_web_output_info's JSON ({"name", "dtype", "shape": [..]}).
int64_t output_numel(const std::string& info) {
  if (info.find("\"dtype\":\"f32\"") == std::string::npos) fail("output 0 is not f32: " + info);
  const size_t open = info.find("\"shape\":[");
  if (open == std::string::npos) fail("no shape in " + info);
  int64_t numel = 1;
  const char* p = info.c_str() + open + 9;
  while (*p != ']') {
    char* end = nullptr;
    numel *= std::strtoll(p, &end, 10);
    p = *end == ',' ? end + 1 : end;
  }
  return numel;
}

}  // namespace

int main(int argc, char** argv) try {
  if (argc != 3) {
    std::cerr << "usage: ember_web_reference MODEL_FILE INPUTS.json\n";
    return 1;
  }
  const std::string model_path = argv[1];
  const Inputs inputs = read_inputs(argv[2]);
  const std::string bytes = read_file(model_path);
  const int id =
      checked(ember_web_load(reinterpret_cast<const uint8_t*>(bytes.data()), int(bytes.size()), model_path.c_str()),
              "ember_web_load");

  std::string out = "{\"outputs\":[";
  std::string argmax = "\"argmax\":[";
  for (size_t s = 0; s < inputs.samples.size(); ++s) {
    checked(ember_web_set_input(id, 0, inputs.samples[s].data(), "f32", inputs.shape.data(), int(inputs.shape.size())),
            "ember_web_set_input");
    checked(ember_web_run(id), "ember_web_run");
    const int64_t n = output_numel(checked(ember_web_output_info(id, 0), "ember_web_output_info"));
    const auto* values = static_cast<const float*>(checked(ember_web_output_data(id, 0), "ember_web_output_data"));
    out += s ? ",[" : "[";
    int64_t best = 0;
    for (int64_t i = 0; i < n; ++i) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.9g", double(values[i]));
      out += i ? "," : "";
      out += std::isfinite(values[i]) ? buf : "null";  // JSON has no NaN or infinity
      if (values[i] > values[best]) best = i;
    }
    out += "]";
    if (s) argmax += ",";
    argmax += std::to_string(best);
  }
  ember_web_free(id);
  std::cout << out << "]," << argmax << "]}\n";
  return 0;
} catch (const std::exception& e) {
  std::cerr << e.what() << "\n";
  return 1;
}
