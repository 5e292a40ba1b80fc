// split_producer: how a matmul program is cut into its product and the elementwise rest that the
// backends run over it (the CPU per block of the product, CUDA as one kernel after cuBLASLt).
#include <gtest/gtest.h>

#include "ember/core/fused_matmul.hpp"

namespace ember {
namespace {

using Node = FusedProgram::Node;

// y = relu(x @ w + b) * r, with inputs x [8, 16], w [16, 32], b [32], r [8, 32]
FusedProgram linear_relu_scaled(bool product_held) {
  FusedProgram p;
  p.shape = {8, 32};
  p.inputs = {{{8, 16}, DType::f32}, {{16, 32}, DType::f32}, {{32}, DType::f32}, {{8, 32}, DType::f32}};
  p.nodes = {{OpKind::matmul, NoAttrs{}, {~0, ~1}, DType::f32},
             {OpKind::add, NoAttrs{}, {0, ~2}, DType::f32},
             {OpKind::relu, NoAttrs{}, {1}, DType::f32},
             {OpKind::mul, NoAttrs{}, {2, ~3}, DType::f32}};
  p.outputs = {3};
  if (product_held) p.outputs.push_back(0);
  return p;
}

TEST(SplitProducer, BiasAddFoldsIntoTheProductWhenAsked) {
  const FusedProgram p = linear_relu_scaled(false);
  ASSERT_TRUE(has_producer(p));
  ProducerSplit s = split_producer(p, true);
  EXPECT_EQ(s.a_input, 0);
  EXPECT_EQ(s.b_input, 1);
  EXPECT_EQ(s.bias_input, 2);
  // rest: relu(product) * r; inputs: the product, then r
  ASSERT_EQ(s.rest.nodes.size(), 2u);
  EXPECT_EQ(s.rest.nodes[0].kind, OpKind::relu);
  EXPECT_EQ(s.rest.nodes[0].args, std::vector<int32_t>{~0});
  EXPECT_EQ(s.rest.nodes[1].args, (std::vector<int32_t>{0, ~1}));
  ASSERT_EQ(s.rest.inputs.size(), 2u);
  EXPECT_EQ(s.rest.inputs[0].shape, Shape({8, 32}));
  EXPECT_EQ(s.rest.inputs[1].shape, Shape({8, 32}));
  EXPECT_EQ(s.rest_input, (std::vector<int32_t>{-1, -1, -1, 1}));
  EXPECT_EQ(s.outputs, std::vector<int32_t>{0});
  EXPECT_EQ(s.rest.outputs, std::vector<int32_t>{1});
}

TEST(SplitProducer, BiasAddStaysInTheRestOtherwise) {
  ProducerSplit s = split_producer(linear_relu_scaled(false), false);
  EXPECT_EQ(s.bias_input, -1);
  ASSERT_EQ(s.rest.nodes.size(), 3u);
  EXPECT_EQ(s.rest.nodes[0].kind, OpKind::add);
  EXPECT_EQ(s.rest.nodes[0].args, (std::vector<int32_t>{~0, ~1}));  // product + b
  EXPECT_EQ(s.rest.inputs[1].shape, Shape({32}));
  EXPECT_EQ(s.rest_input, (std::vector<int32_t>{-1, -1, 1, 2}));
}

TEST(SplitProducer, AHeldProductIsReturnedAndNotFolded) {
  // the bare product is an output: the bias add cannot go into it
  ProducerSplit s = split_producer(linear_relu_scaled(true), true);
  EXPECT_EQ(s.bias_input, -1);
  EXPECT_EQ(s.rest.nodes.size(), 3u);
  EXPECT_EQ(s.outputs, (std::vector<int32_t>{0, -1}));
}

TEST(SplitProducer, TheMatmulsOwnBias) {
  FusedProgram p;
  p.shape = {4, 6};
  p.inputs = {{{4, 5}, DType::f32}, {{5, 6}, DType::f32}, {{6}, DType::f32}};
  p.nodes = {{OpKind::matmul, NoAttrs{}, {~0, ~1, ~2}, DType::f32}, {OpKind::tanh, NoAttrs{}, {0}, DType::f32}};
  p.outputs = {1, 0};
  ProducerSplit cuda = split_producer(p, true);
  EXPECT_EQ(cuda.bias_input, 2);
  ASSERT_EQ(cuda.rest.nodes.size(), 1u);
  EXPECT_EQ(cuda.outputs, (std::vector<int32_t>{0, -1}));  // tanh, then the product (with its bias)
  ProducerSplit cpu = split_producer(p, false);
  EXPECT_EQ(cpu.bias_input, -1);
  ASSERT_EQ(cpu.rest.nodes.size(), 2u);  // add, tanh
  EXPECT_EQ(cpu.rest.outputs, (std::vector<int32_t>{1, 0}));
  EXPECT_EQ(cpu.outputs, (std::vector<int32_t>{0, 1}));
}

TEST(SplitProducer, RejectsProgramsWithoutAMatmul) {
  FusedProgram p;
  p.shape = {3};
  p.inputs = {{{3}, DType::f32}};
  p.nodes = {{OpKind::exp, NoAttrs{}, {~0}, DType::f32}};
  p.outputs = {0};
  EXPECT_FALSE(has_producer(p));
  EXPECT_THROW(split_producer(p, true), Error);
}

}  // namespace
}  // namespace ember
