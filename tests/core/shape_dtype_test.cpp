#include <gtest/gtest.h>

#include <ember/core/dtype.hpp>
#include <ember/core/op.hpp>
#include <ember/core/shape.hpp>
#include <ember/core/tensor_data.hpp>

using namespace ember;

TEST(Shape, BroadcastAndStrides) {
  EXPECT_EQ(broadcast_shapes(Shape{3, 1}, Shape{1, 4}, "t"), (Shape{3, 4}));
  EXPECT_EQ(broadcast_shapes(Shape{5, 1, 3}, Shape{4, 1}, "t"), (Shape{5, 4, 3}));
  EXPECT_EQ(broadcast_shapes(Shape{}, Shape{2}, "t"), (Shape{2}));
  EXPECT_THROW(broadcast_shapes(Shape{2}, Shape{3}, "t"), Error);
  EXPECT_EQ(contiguous_strides(Shape{2, 3, 4}), (std::vector<int64_t>{12, 4, 1}));
  EXPECT_EQ(Shape({2, 3, 4})[-1], 4);
  EXPECT_EQ(normalize_dim(-1, 3, "t"), 2);
  EXPECT_THROW(normalize_dim(3, 3, "t"), Error);
}

// Expected promotions from torch.promote_types.
TEST(DType, PromotionMatchesPyTorch) {
  EXPECT_EQ(promote_types(DType::i32, DType::f32), DType::f32);
  EXPECT_EQ(promote_types(DType::f16, DType::bf16), DType::f32);
  EXPECT_EQ(promote_types(DType::u8, DType::i8), DType::i16);
  EXPECT_EQ(promote_types(DType::boolean, DType::u8), DType::u8);
  EXPECT_EQ(promote_types(DType::i64, DType::f16), DType::f16);
  EXPECT_EQ(promote_types(DType::f64, DType::f32), DType::f64);
  EXPECT_EQ(promote_types(DType::u8, DType::i32), DType::i32);
  EXPECT_EQ(dtype_from_name("bf16"), DType::bf16);
  EXPECT_THROW(dtype_from_name("f8"), Error);
}

TEST(TensorData, ConvertAndCompare) {
  auto d = TensorData::from_vector<float>({1.5f, -2.7f, 3.f, 1000.f}, Shape{2, 2});
  auto i = d.convert(DType::i32).to_vector<int32_t>();
  EXPECT_EQ(i, (std::vector<int32_t>{1, -2, 3, 1000}));  // truncation toward zero
  auto h = d.convert(DType::f16);
  EXPECT_FALSE(h.approx_equal(d, 1e-3, 0).has_value());
  auto e = d;
  e.as<float>()[3] = 2000.f;
  auto msg = e.approx_equal(d, 1e-5, 1e-6);
  ASSERT_TRUE(msg.has_value());
  EXPECT_NE(msg->find("flat index 3"), std::string::npos);
  EXPECT_THROW(TensorData::from_vector<float>({1, 2}, Shape{3}), Error);
}

TEST(OpIR, TableAndInference) {
  EXPECT_EQ(op_name(OpKind::add), "add");
  EXPECT_EQ(op_kind_from_name("conv"), OpKind::conv);
  EXPECT_TRUE(is_elementwise(op_info(OpKind::exp).family));
  EXPECT_FALSE(is_elementwise(op_info(OpKind::matmul).family));
  TensorMeta a{Shape{2, 1, 3}, DType::f32}, b{Shape{4, 1}, DType::f32};
  auto out = infer_outputs(OpKind::add, {&a, &b}, NoAttrs{});
  EXPECT_EQ(out[0].shape, (Shape{2, 4, 3}));
  TensorMeta x{Shape{8, 3, 32, 32}, DType::f32}, w{Shape{16, 3, 3, 3}, DType::f32};
  ConvAttrs c{{2, 2}, {1, 1}, {1, 1}, {0, 0}, 1};
  EXPECT_EQ(infer_outputs(OpKind::conv, {&x, &w, nullptr}, c)[0].shape, (Shape{8, 16, 16, 16}));
  EXPECT_THROW(infer_outputs(OpKind::add, {&a}, NoAttrs{}), Error);
  EXPECT_THROW(infer_outputs(OpKind::add, {&a, &b}, ScalarAttrs{}), Error);
}
