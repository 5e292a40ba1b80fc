// The wasm build's max pool against PyTorch (tests/wasm/pool_cases.json, written by
// gen_pool_cases.py): values and argmax indices must match exactly, ties (the first tap wins),
// NaN (the last NaN of a window wins) and windows of -inf included. The cases' rows are wide
// enough for the SIMD128 interior path of pool.cpp and its scalar tail. Built for wasm by
// tests/wasm/CMakeLists.txt and run in Node.js by scripts/web-check.sh.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ember/ember.hpp"

namespace ember {
namespace {

using Json = nlohmann::json;

double decode(const Json& v) {
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
    return s == "inf" ? std::numeric_limits<double>::infinity() : -std::numeric_limits<double>::infinity();
  }
  return v.get<double>();
}

std::vector<int64_t> ints(const Json& j) { return j.get<std::vector<int64_t>>(); }

const Json& cases() {
  static const Json j = [] {
    std::ifstream f(EMBER_WASM_POOL_CASES);
    EXPECT_TRUE(f.good()) << "cannot open " << EMBER_WASM_POOL_CASES;
    return Json::parse(f);
  }();
  return j;
}

TEST(WasmMaxPool, MatchesPyTorchValuesAndIndices) {
  const Json& all = cases()["cases"];
  ASSERT_GE(all.size(), 5u);
  for (const Json& c : all) {
    SCOPED_TRACE(c["name"].get<std::string>());
    std::vector<double> x;
    for (const Json& v : c["x"]) x.push_back(decode(v));
    const Shape xs(ints(c["shape"]));
    DynTensor t = DynTensor::from_data(TensorData::from_doubles(x, xs, DType::f32), Device::cpu());
    PoolOptions o;
    o.kernel_size = ints(c["kernel"]);
    o.stride = ints(c["stride"]);
    o.padding = ints(c["padding"]);
    o.dilation = ints(c["dilation"]);
    auto [y, idx] = max_pool2d_with_indices(t, o);
    ASSERT_EQ(y.shape(), Shape(ints(c["out_shape"])));
    const std::vector<double> yv = y.into_data().to_doubles();
    const std::vector<int64_t> iv = cast(idx, DType::i64).into_data().to_vector<int64_t>();
    const std::vector<int64_t> want_i = ints(c["indices"]);
    ASSERT_EQ(yv.size(), c["y"].size());
    ASSERT_EQ(iv.size(), want_i.size());
    int bad = 0;
    for (size_t i = 0; i < yv.size() && bad < 5; ++i) {
      const double want = decode(c["y"][i]);
      const bool same = std::isnan(want) ? std::isnan(yv[i]) : yv[i] == want;
      if (!same || iv[i] != want_i[i]) {
        ADD_FAILURE() << "output " << i << ": got " << yv[i] << " at " << iv[i] << ", PyTorch " << want << " at "
                      << want_i[i];
        ++bad;
      }
    }
  }
}

// The same pool on a strided (transposed) view: the kernel reads a contiguous copy, so the
// results must not change.
TEST(WasmMaxPool, StridedInputGivesTheSameResult) {
  const Json& c = cases()["cases"][0];
  std::vector<double> x;
  for (const Json& v : c["x"]) x.push_back(decode(v));
  DynTensor t = DynTensor::from_data(TensorData::from_doubles(x, Shape(ints(c["shape"])), DType::f32), Device::cpu());
  DynTensor view = transpose(contiguous(transpose(t, 2, 3)), 2, 3);
  PoolOptions o;
  o.kernel_size = ints(c["kernel"]);
  o.stride = ints(c["stride"]);
  o.padding = ints(c["padding"]);
  auto [y, idx] = max_pool2d_with_indices(view, o);
  EXPECT_EQ(cast(idx, DType::i64).into_data().to_vector<int64_t>(), ints(c["indices"]));
}

}  // namespace
}  // namespace ember
