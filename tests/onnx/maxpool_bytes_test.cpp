// MaxPool of u8 / i8 values (the quantized models' pooling): the runtime pools the bytes where the
// pads are symmetric and goes through f32 otherwise; both against a pooling loop written here
// (padding never wins, as in the ONNX spec). And which max_pool the runtime runs: a node without
// its Indices output runs the values-only op (PoolAttrs::indices false).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <ember/onnx/runtime.hpp>
#include <ember/tensor/ops.hpp>
#include <limits>
#include <random>

#include "../core/op_recorder.hpp"
#include "onnx_test_util.hpp"

using namespace ember;
using namespace ember::onnx;

namespace {

AttributeProto ints(const std::string& name, std::vector<int64_t> v) {
  AttributeProto a;
  a.name = name;
  a.type = AttributeType::ints;
  a.ints = std::move(v);
  return a;
}

// One MaxPool node over x [N, C, H, W] of `type`.
ModelProto maxpool_model(DataType type, std::vector<int64_t> shape, int64_t k, int64_t stride,
                         std::vector<int64_t> pads) {
  ModelProto m;
  m.ir_version = 8;
  m.opset_import.push_back({"", 13});
  GraphProto& g = m.graph;
  NodeProto n;
  n.op_type = "MaxPool";
  n.name = "pool";
  n.inputs = {"x"};
  n.outputs = {"y"};
  n.attributes = {ints("kernel_shape", {k, k}), ints("strides", {stride, stride}), ints("pads", std::move(pads))};
  g.nodes = {n};
  g.inputs = {onnx_test::tensor_value("x", type, shape)};
  ValueInfoProto out;
  out.name = "y";
  g.outputs = {out};
  return m;
}

// The pooling loop: pads (top, left, bottom, right) are skipped.
template <class T>
std::vector<int64_t> reference(const std::vector<T>& x, int64_t N, int64_t C, int64_t H, int64_t W, int64_t k,
                               int64_t s, const std::vector<int64_t>& p, int64_t& OH, int64_t& OW) {
  OH = (H + p[0] + p[2] - k) / s + 1, OW = (W + p[1] + p[3] - k) / s + 1;
  std::vector<int64_t> y;
  for (int64_t nc = 0; nc < N * C; ++nc)
    for (int64_t oh = 0; oh < OH; ++oh)
      for (int64_t ow = 0; ow < OW; ++ow) {
        int64_t best = std::numeric_limits<int64_t>::min();
        for (int64_t a = 0; a < k; ++a)
          for (int64_t b = 0; b < k; ++b) {
            const int64_t ih = oh * s - p[0] + a, iw = ow * s - p[1] + b;
            if (ih >= 0 && ih < H && iw >= 0 && iw < W) best = std::max<int64_t>(best, x[size_t((nc * H + ih) * W + iw)]);
          }
        y.push_back(best);
      }
  return y;
}

template <class T>
void check(DataType type, std::vector<int64_t> pads) {
  const int64_t N = 2, C = 3, H = 11, W = 13, k = 3, s = 2;
  std::mt19937 rng(7);
  std::vector<T> x(size_t(N * C * H * W));
  for (auto& v : x) v = T(int(rng() % 256) + (std::is_signed_v<T> ? -128 : 0));
  Model model = Model::from_proto(maxpool_model(type, {N, C, H, W}, k, s, pads), Device::cpu());
  DynTensor y = model.run({{"x", DynTensor::from_vector<T>(x, Shape{N, C, H, W})}}).at("y");
  int64_t OH = 0, OW = 0;
  const std::vector<int64_t> want = reference(x, N, C, H, W, k, s, pads, OH, OW);
  ASSERT_EQ(y.dtype(), std::is_signed_v<T> ? DType::i8 : DType::u8);
  ASSERT_EQ(y.shape(), (Shape{N, C, OH, OW}));
  EXPECT_EQ(y.to_vector<int64_t>(), want);
}

TEST(OnnxMaxPoolBytes, SymmetricPadsPoolTheBytes) {
  check<uint8_t>(DataType::uint8, {1, 1, 1, 1});
  check<int8_t>(DataType::int8, {1, 1, 1, 1});
}

TEST(OnnxMaxPoolBytes, AsymmetricPadsGoThroughF32) {
  check<uint8_t>(DataType::uint8, {0, 1, 1, 0});
  check<int8_t>(DataType::int8, {1, 0, 0, 1});
}

// f32 and u8 nodes with Y alone run the values-only pool (the same values as the loop above); a
// node that also asks for Indices runs the indexed one.
TEST(OnnxMaxPool, OnlyTheIndicesOutputAsksForIndices) {
  const int64_t N = 1, C = 2, H = 9, W = 10, k = 3, s = 2;
  const std::vector<int64_t> pads{1, 1, 1, 1};
  std::mt19937 rng(8);
  std::vector<float> xf(size_t(N * C * H * W));
  std::vector<uint8_t> xb(xf.size());
  for (size_t i = 0; i < xf.size(); ++i) {
    xb[i] = uint8_t(rng() % 256);
    xf[i] = float(int(xb[i]) - 128);
  }
  int64_t OH = 0, OW = 0;
  for (DataType type : {DataType::float32, DataType::uint8}) {
    auto recorder = std::make_shared<test::OpRecorder>(Device::cpu().backend_ptr());
    Device dev(recorder);
    Model model = Model::from_proto(maxpool_model(type, {N, C, H, W}, k, s, pads), dev);
    DynTensor x = type == DataType::float32 ? DynTensor::from_vector<float>(xf, Shape{N, C, H, W}, dev)
                                            : DynTensor::from_vector<uint8_t>(xb, Shape{N, C, H, W}, dev);
    DynTensor y = model.run({{"x", x}}).at("y");
    const std::vector<int64_t> want = type == DataType::float32 ? reference(xf, N, C, H, W, k, s, pads, OH, OW)
                                                                : reference(xb, N, C, H, W, k, s, pads, OH, OW);
    ASSERT_EQ(y.shape(), (Shape{N, C, OH, OW}));
    EXPECT_EQ(cast(y, DType::i64).to_vector<int64_t>(), want);
    EXPECT_EQ(test::max_pool_indices(*recorder), std::vector<bool>{false})
        << (type == DataType::float32 ? "f32" : "u8");
  }
  // Y and Indices
  ModelProto m = maxpool_model(DataType::float32, {N, C, H, W}, k, s, pads);
  m.graph.nodes[0].outputs.push_back("i");
  ValueInfoProto i_out;
  i_out.name = "i";
  m.graph.outputs.push_back(i_out);
  auto recorder = std::make_shared<test::OpRecorder>(Device::cpu().backend_ptr());
  Model model = Model::from_proto(m, Device(recorder));
  auto out = model.run({{"x", DynTensor::from_vector<float>(xf, Shape{N, C, H, W}, Device(recorder))}});
  EXPECT_EQ(out.at("i").dtype(), DType::i64);
  EXPECT_EQ(test::max_pool_indices(*recorder), std::vector<bool>{true});
}

}  // namespace
