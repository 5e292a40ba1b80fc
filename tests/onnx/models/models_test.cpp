// Real models exported from PyTorch (tests/onnx/models/export_models.py) run through the ONNX
// runtime on the CPU: every output must match PyTorch's within 1e-4 relative error
// (||out - ref|| / ||ref||).
//
//   ember_onnx_models_tests [DIR]     DIR (or $EMBER_ONNX_MODELS_DIR, default build/onnx-models)
//                                     holds manifest.json, the .onnx files and .npy tensors.
//
// Without a manifest every test is skipped with a message (python3-torch or torchvision missing).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ember/core/error.hpp"
#include "ember/onnx/runtime.hpp"

namespace fs = std::filesystem;
using json = nlohmann::json;
using namespace ember;

namespace {

fs::path g_dir = "build/onnx-models";

// A float32 .npy file (little-endian, C order; versions 1 to 3).
struct Npy {
  std::vector<int64_t> shape;
  std::vector<float> data;
};

Npy read_npy(const fs::path& path) {
  std::ifstream f(path, std::ios::binary);
  EMBER_CHECK(f.good(), "cannot open ", path.string());
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  EMBER_CHECK(bytes.size() >= 10 && bytes.compare(0, 6, "\x93NUMPY") == 0, path.string(), ": not a .npy file");
  const auto u8 = [&](size_t i) { return static_cast<size_t>(static_cast<unsigned char>(bytes[i])); };
  const int major = static_cast<int>(u8(6));
  size_t header_len = 0, header_start = 0;
  if (major == 1) {
    header_len = u8(8) | (u8(9) << 8);
    header_start = 10;
  } else {
    EMBER_CHECK(bytes.size() >= 12, path.string(), ": truncated header");
    header_len = u8(8) | (u8(9) << 8) | (u8(10) << 16) | (u8(11) << 24);
    header_start = 12;
  }
  EMBER_CHECK(header_start + header_len <= bytes.size(), path.string(), ": truncated header");
  const std::string header = bytes.substr(header_start, header_len);
  EMBER_CHECK(header.find("'descr': '<f4'") != std::string::npos, path.string(),
              ": not float32 little-endian: ", header);
  EMBER_CHECK(header.find("'fortran_order': False") != std::string::npos, path.string(), ": Fortran order");
  const size_t open = header.find("'shape': (");
  EMBER_CHECK(open != std::string::npos, path.string(), ": no shape: ", header);
  const size_t close = header.find(')', open);
  EMBER_CHECK(close != std::string::npos, path.string(), ": bad shape: ", header);
  Npy out;
  const std::string dims = header.substr(open + 10, close - open - 10);
  size_t pos = 0;
  while (pos < dims.size()) {
    while (pos < dims.size() && (dims[pos] == ' ' || dims[pos] == ',')) ++pos;
    if (pos >= dims.size()) break;
    size_t used = 0;
    out.shape.push_back(std::stoll(dims.substr(pos), &used));
    pos += used;
  }
  int64_t n = 1;
  for (int64_t d : out.shape) n *= d;
  const size_t data_start = header_start + header_len;
  EMBER_CHECK(bytes.size() - data_start == static_cast<size_t>(n) * 4, path.string(), ": expected ", n,
              " floats, the file holds ", bytes.size() - data_start, " bytes");
  out.data.resize(static_cast<size_t>(n));
  if (n > 0) std::memcpy(out.data.data(), bytes.data() + data_start, static_cast<size_t>(n) * 4);  // little-endian host
  return out;
}

const json* manifest() {
  static const json m = [] {
    std::ifstream f(g_dir / "manifest.json");
    return f.good() ? json::parse(f) : json();
  }();
  return m.is_object() ? &m : nullptr;
}

const json* entry(const std::string& name) {
  const json* m = manifest();
  if (!m) return nullptr;
  for (const json& e : (*m)["models"])
    if (e["name"] == name) return &e;
  return nullptr;
}

double relative_error(const std::vector<float>& out, const std::vector<float>& ref) {
  double num = 0, den = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    const double d = static_cast<double>(out[i]) - static_cast<double>(ref[i]);
    num += d * d;
    den += static_cast<double>(ref[i]) * static_cast<double>(ref[i]);
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

void run_model(const std::string& name) {
  if (!manifest())
    GTEST_SKIP() << "no " << (g_dir / "manifest.json").string()
                 << " (run tests/onnx/models/export_models.py DIR; needs python3-torch and python3-torchvision)";
  const json* e = entry(name);
  if (!e) GTEST_SKIP() << name << " is not in " << (g_dir / "manifest.json").string();

  const auto t0 = std::chrono::steady_clock::now();
  onnx::Model model = onnx::Model::load((g_dir / (*e)["model"].get<std::string>()).string(), Device::cpu());
  std::map<std::string, DynTensor> inputs;
  for (const json& in : (*e)["inputs"]) {
    Npy x = read_npy(g_dir / in["file"].get<std::string>());
    EXPECT_EQ(x.shape, in["shape"].get<std::vector<int64_t>>()) << in["file"];
    inputs.emplace(in["name"].get<std::string>(), DynTensor::from_vector<float>(x.data, Shape(x.shape), Device::cpu()));
  }
  const auto t1 = std::chrono::steady_clock::now();
  const std::map<std::string, DynTensor> outputs = model.run(inputs);
  const auto t2 = std::chrono::steady_clock::now();

  for (const json& out : (*e)["outputs"]) {
    const std::string oname = out["name"].get<std::string>();
    const Npy ref = read_npy(g_dir / out["file"].get<std::string>());
    auto it = outputs.find(oname);
    ASSERT_NE(it, outputs.end()) << name << ": no output " << oname;
    ASSERT_EQ(it->second.dtype(), DType::f32) << name << ": output " << oname;
    ASSERT_EQ(it->second.shape().dims(), ref.shape) << name << ": output " << oname;
    const std::vector<float> got = it->second.to_vector<float>();
    const double err = relative_error(got, ref.data);
    const auto ms = [](auto a, auto b) { return std::chrono::duration<double, std::milli>(b - a).count(); };
    std::printf("%s: output %s relative error %.3g (load %.0f ms, run %.0f ms)\n", name.c_str(), oname.c_str(), err,
                ms(t0, t1), ms(t1, t2));
    EXPECT_LE(err, 1e-4) << name << ": output " << oname;
  }
}

}  // namespace

TEST(OnnxModels, Resnet18Opset13) { run_model("resnet18_op13"); }
TEST(OnnxModels, Resnet18Opset17) { run_model("resnet18_op17"); }
TEST(OnnxModels, MobilenetV2Opset13) { run_model("mobilenet_v2_op13"); }
TEST(OnnxModels, MobilenetV2Opset17) { run_model("mobilenet_v2_op17"); }
TEST(OnnxModels, Squeezenet11Opset13) { run_model("squeezenet1_1_op13"); }
TEST(OnnxModels, Squeezenet11Opset17) { run_model("squeezenet1_1_op17"); }
TEST(OnnxModels, TransformerEncoderOpset13) { run_model("transformer_encoder_op13"); }
TEST(OnnxModels, TransformerEncoderOpset17) { run_model("transformer_encoder_op17"); }
TEST(OnnxModels, SmallConvNetOpset13) { run_model("small_conv_net_op13"); }
TEST(OnnxModels, SmallConvNetOpset17) { run_model("small_conv_net_op17"); }

// Every manifest entry has a test above (a model added to export_models.py needs one here).
TEST(OnnxModels, ManifestCovered) {
  if (!manifest()) GTEST_SKIP() << "no " << (g_dir / "manifest.json").string();
  const std::vector<std::string> known = {
      "resnet18_op13",       "resnet18_op17",      "mobilenet_v2_op13",        "mobilenet_v2_op17",
      "squeezenet1_1_op13",  "squeezenet1_1_op17", "transformer_encoder_op13", "transformer_encoder_op17",
      "small_conv_net_op13", "small_conv_net_op17"};
  for (const json& e : (*manifest())["models"])
    EXPECT_NE(std::find(known.begin(), known.end(), e["name"].get<std::string>()), known.end()) << e["name"];
}

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (const char* env = std::getenv("EMBER_ONNX_MODELS_DIR"); env && *env) g_dir = env;
  if (argc > 1) g_dir = argv[1];
  return RUN_ALL_TESTS();
}
