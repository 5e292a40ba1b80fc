// com.microsoft QLinearAdd (ONNX Runtime's contrib op) in the runtime and in shape inference,
// against its formula evaluated in double here:
//   C = saturate(round_half_even((A_scale (A - A_zp) + B_scale (B - B_zp)) / C_scale) + C_zp).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <ember/onnx/runtime.hpp>
#include <ember/onnx/shape_inference.hpp>
#include <ember/tensor/ops.hpp>

#include "onnx_test_util.hpp"

using namespace ember;
using namespace ember::onnx;

namespace {

TensorProto scalar_f32(const std::string& name, float v) {
  TensorProto t;
  t.name = name;
  t.data_type = int32_t(DataType::float32);
  t.float_data = {v};
  return t;
}

TensorProto scalar_int(const std::string& name, DataType type, int32_t v) {
  TensorProto t;
  t.name = name;
  t.data_type = int32_t(type);
  t.int32_data = {v};
  return t;
}

double round_even(double x) {
  double r = std::round(x);
  if (std::fabs(x - std::trunc(x)) == 0.5) r = 2.0 * std::round(x / 2.0);
  return r;
}

// A QLinearAdd of A [2, 3] and B [3]; zero points named "" are omitted.
ModelProto qlinear_add_model(DataType type, float sa, int32_t za, float sb, int32_t zb, float sc, int32_t zc,
                             bool zero_points) {
  ModelProto m;
  m.ir_version = 8;
  m.opset_import.push_back({"", 13});
  m.opset_import.push_back({"com.microsoft", 1});
  GraphProto& g = m.graph;
  g.initializers = {scalar_f32("sa", sa), scalar_f32("sb", sb), scalar_f32("sc", sc)};
  if (zero_points)
    for (auto [name, v] : {std::pair{"za", za}, std::pair{"zb", zb}, std::pair{"zc", zc}})
      g.initializers.push_back(scalar_int(name, type, v));
  NodeProto n;
  n.op_type = "QLinearAdd";
  n.domain = "com.microsoft";
  n.name = "qadd";
  n.inputs = {"a", "sa", zero_points ? "za" : "", "b", "sb", zero_points ? "zb" : "", "sc", zero_points ? "zc" : ""};
  n.outputs = {"c"};
  g.nodes = {n};
  g.inputs = {onnx_test::tensor_value("a", type, {2, 3}), onnx_test::tensor_value("b", type, {3})};
  ValueInfoProto out;
  out.name = "c";
  g.outputs = {out};
  return m;
}

}  // namespace

TEST(OnnxQLinearAdd, Uint8MatchesTheFormulaWithBroadcastingAndSaturation) {
  const float sa = 0.05f, sb = 0.1f, sc = 0.08f;
  const int32_t za = 128, zb = 31, zc = 100;  // no element lands on a rounding tie
  ModelProto m = qlinear_add_model(DataType::uint8, sa, za, sb, zb, sc, zc, true);
  const std::vector<uint8_t> av = {1, 128, 255, 7, 200, 90}, bv = {0, 10, 255};
  Model model = Model::from_proto(m, Device::cpu());
  DynTensor c = model.run({{"a", DynTensor::from_vector<uint8_t>(av, Shape{2, 3})},
                           {"b", DynTensor::from_vector<uint8_t>(bv, Shape{3})}})
                    .at("c");
  ASSERT_EQ(c.dtype(), DType::u8);
  ASSERT_EQ(c.shape(), (Shape{2, 3}));
  std::vector<int64_t> got = c.to_vector<int64_t>();
  bool low = false, high = false;
  for (size_t i = 0; i < av.size(); ++i) {
    const double real = double(sa) * (av[i] - za) + double(sb) * (bv[i % 3] - zb);
    const double want = std::clamp(round_even(real / double(sc)) + zc, 0.0, 255.0);
    EXPECT_EQ(double(got[i]), want) << i;
    low |= want == 0;
    high |= want == 255;
  }
  EXPECT_TRUE(low);  // both bounds are reached
  EXPECT_TRUE(high);
}

TEST(OnnxQLinearAdd, Int8WithoutZeroPoints) {
  const float sa = 0.5f, sb = 0.25f, sc = 1.0f;
  ModelProto m = qlinear_add_model(DataType::int8, sa, 0, sb, 0, sc, 0, false);
  // sums: 0.5 + 0.5 = 1; 0.5 + 2 = 2.5 -> 2 (half to even); -63.5 - 32 = -95.5 -> -96; 63.5 + 0.5 = 64;
  // -1.5 + 2 = 0.5 -> 0; 2.5 - 32 = -29.5 -> -30
  const std::vector<int8_t> av = {1, 1, -127, 127, -3, 5}, bv = {2, 8, -128};
  Model model = Model::from_proto(m, Device::cpu());
  std::vector<int64_t> got = model.run({{"a", DynTensor::from_vector<int8_t>(av, Shape{2, 3})},
                                        {"b", DynTensor::from_vector<int8_t>(bv, Shape{3})}})
                                 .at("c")
                                 .to_vector<int64_t>();
  for (size_t i = 0; i < av.size(); ++i) {
    const double real = double(sa) * av[i] + double(sb) * bv[i % 3];
    EXPECT_EQ(double(got[i]), std::clamp(round_even(real / double(sc)), -128.0, 127.0)) << i;
  }
  EXPECT_EQ(got, (std::vector<int64_t>{1, 2, -96, 64, 0, -30}));
}

TEST(OnnxQLinearAdd, ShapeInferenceAndErrors) {
  ModelProto m = qlinear_add_model(DataType::uint8, 0.1f, 0, 0.1f, 0, 0.1f, 0, true);
  auto types = infer_shapes(m.graph, 13);
  ASSERT_TRUE(types.count("c"));
  EXPECT_EQ(types.at("c").str(), "UINT8[2,3]");
  m.graph.inputs = {onnx_test::tensor_value("a", DataType::uint8, {1, 3}),
                    onnx_test::tensor_value("b", DataType::uint8, {4, 1})};  // both sides grow
  EXPECT_EQ(infer_shapes(m.graph, 13).at("c").str(), "UINT8[4,3]");
  // a zero point of another type than A is an error naming it
  ModelProto bad = qlinear_add_model(DataType::uint8, 0.1f, 0, 0.1f, 0, 0.1f, 0, true);
  bad.graph.initializers[3].data_type = int32_t(DataType::int8);
  Model model = Model::from_proto(bad, Device::cpu());
  DynTensor a = DynTensor::zeros({2, 3}, DType::u8), b = DynTensor::zeros({3}, DType::u8);
  try {
    model.run({{"a", a}, {"b", b}});
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("A_zero_point is i8"), std::string::npos) << e.what();
  }
}
