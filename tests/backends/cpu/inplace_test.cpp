// In-place reuse through the public API: an op that receives the last handle of a tensor
// (std::move) writes into its buffer; an op whose input is still shared does not.
#include <gtest/gtest.h>

#include <ember/ember.hpp>

#include "cpu_tensor.hpp"

using namespace ember;

namespace {
const void* buffer(const DynTensor& t) { return cpu::as_cpu(t.primitive()).storage->data; }
}  // namespace

TEST(InPlace, MovedLastHandleIsReused) {
  auto x = DynTensor::full({4096}, 2.0, DType::f32);
  const void* p = buffer(x);
  auto y = exp(std::move(x));
  EXPECT_EQ(buffer(y), p);
  auto z = add(std::move(y), 1.0);
  EXPECT_EQ(buffer(z), p);
  EXPECT_NEAR(z.to_vector<float>()[7], std::exp(2.0f) + 1.0f, 1e-4);
}

TEST(InPlace, SharedInputIsNotOverwritten) {
  auto x = DynTensor::full({4096}, 2.0, DType::f32);
  auto keep = x;
  auto y = exp(std::move(x));
  EXPECT_NE(buffer(y), buffer(keep));
  EXPECT_EQ(keep.to_vector<float>()[0], 2.0f);
}

TEST(InPlace, ViewsAreNotReused) {
  auto base = DynTensor::full({64, 64}, 1.0, DType::f32);
  auto v = transpose(base, 0, 1);  // shares base's storage
  auto y = neg(std::move(v));
  EXPECT_NE(buffer(y), buffer(base));
  EXPECT_EQ(base.to_vector<float>()[0], 1.0f);
}

// The scalar operands of `x * 0.5` (CreateAttrs::shared) are made once per value and share a
// buffer, which no op then writes into; a one-value tensor the user makes has its own.
TEST(InPlace, ScalarOperandsShareABufferUserScalarsDoNot) {
  Backend& be = Device::cpu().backend();
  auto operand = [&](double v) {
    CreateAttrs a;
    a.dtype = DType::f32;
    a.a = v;
    a.shared = true;
    return DynTensor(be.execute(make_op(OpKind::full, {}, std::move(a)))[0], Device::cpu());
  };
  auto h1 = operand(0.5), h2 = operand(0.5);
  EXPECT_EQ(buffer(h1), buffer(h2));
  EXPECT_NE(buffer(h1), buffer(operand(0.25)));
  EXPECT_EQ(h2.item<float>(), 0.5f);
  EXPECT_NE(buffer(DynTensor::zeros({})), buffer(DynTensor::zeros({})));

  // an op that receives the last handle of a shared operand still writes a new buffer
  const void* shared = buffer(h1);
  h2 = DynTensor();
  auto y = neg(std::move(h1));
  EXPECT_NE(buffer(y), shared);
  EXPECT_EQ(operand(0.5).item<float>(), 0.5f);
  auto x = DynTensor::full({8}, 3.0, DType::f32);
  EXPECT_EQ((x * 0.5).to_vector<float>()[0], 1.5f);
}
