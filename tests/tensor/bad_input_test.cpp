// Bad input: every category gets a clear ember::Error naming the op and the arguments, and
// the process goes on.
#include <gtest/gtest.h>

#include <cmath>
#include <ember/backends/cpu.hpp>
#include <ember/ember.hpp>

using namespace ember;

namespace {
// Runs f, expects an ember::Error whose message contains every fragment.
template <class F>
void expect_error(F&& f, std::initializer_list<const char*> fragments) {
  try {
    f();
    FAIL() << "no error thrown";
  } catch (const Error& e) {
    std::string msg = e.what();
    for (const char* frag : fragments) EXPECT_NE(msg.find(frag), std::string::npos) << "message: " << msg;
  }
}
DynTensor t(Shape s, DType dt = DType::f32) { return DynTensor::zeros(std::move(s), dt); }
}  // namespace

TEST(BadInput, NonBroadcastableShapes) {
  expect_error([] { add(t({2, 3}), t({4, 3})); }, {"add", "[2, 3]", "[4, 3]", "broadcast"});
  expect_error([] { where(t({2}, DType::boolean), t({3}), t({2})); }, {"where", "[3]"});
}

TEST(BadInput, WrongRank) {
  expect_error([] { conv2d(t({1, 3, 8}), t({4, 3, 3, 3})); }, {"conv2d", "[1, 3, 8]"});
  expect_error([] { matmul(t({3, 4}), t({5, 6})); }, {"matmul", "[3, 4]", "[5, 6]"});
  expect_error([] { Tensor<3>(t({2, 2})); }, {"Tensor<3>", "rank 2"});
  expect_error([] { tril(t({4})); }, {"tril", "rank 1"});
}

TEST(BadInput, WrongDtype) {
  expect_error([] { bitwise_and(t({2}), t({2})); }, {"bitwise_and", "f32"});
  expect_error([] { where(t({2}), t({2}), t({2})); }, {"where", "bool"});
  expect_error([] { gather(t({2, 2}), 0, t({2, 2})); }, {"gather", "index", "f32"});
  expect_error([] { mean(t({2}, DType::i32)); }, {"mean", "i32"});
}

TEST(BadInput, DimOutOfRange) {
  expect_error([] { sum(t({2, 3}), {2}); }, {"sum", "dim 2", "rank 2"});
  expect_error([] { softmax(t({2, 3}), -3); }, {"softmax", "dim -3"});
  expect_error([] { transpose(t({2, 3}), 0, 5); }, {"transpose", "dim 5"});
  expect_error([] { permute(t({2, 3}), {0, 0}); }, {"permute", "twice"});
}

TEST(BadInput, IndexOutOfRange) {
  auto idx = DynTensor::from_vector<int64_t>({0, 5}, {2});
  expect_error([&] { index_select(t({3, 2}), 0, idx).into_data(); }, {"index_select", "5"});
  expect_error([] { select(t({3, 2}), 1, 7); }, {"select", "7", "[3, 2]"});
  expect_error([] { narrow(t({3}), 0, 2, 5); }, {"narrow", "[3]"});
  auto g = DynTensor::from_vector<int64_t>({0, -1, 2, 3}, {2, 2});
  expect_error([&] { gather(t({2, 2}), 1, g).into_data(); }, {"gather"});
}

TEST(BadInput, ShapeMismatch) {
  expect_error([] { reshape(t({2, 3}), {4, 2}); }, {"reshape", "[2, 3]", "[4, 2]"});
  expect_error([] { cat({t({2, 3}), t({2, 4})}, 0); }, {"cat", "[2, 4]"});
  expect_error([] { expand(t({2, 3}), {4, 3}); }, {"expand", "[2, 3]", "[4, 3]"});
  expect_error([] { layer_norm(t({2, 3}), {4}); }, {"layer_norm", "[4]"});
  expect_error([] { conv2d(t({1, 3, 8, 8}), t({4, 2, 3, 3})); }, {"conv2d", "channels"});
}

TEST(BadInput, MismatchedDevices) {
  Device other(cpu::make_backend());  // a second, independent CPU backend
  auto a = DynTensor::zeros({2}, DType::f32, Device::cpu());
  auto b = DynTensor::zeros({2}, DType::f32, other);
  expect_error([&] { add(a, b); }, {"add", "input 1", "cpu"});
  EXPECT_EQ(add(a, b.to(Device::cpu())).numel(), 2);  // moving it fixes it
}

TEST(BadInput, EmptyTensors) {
  expect_error([] { max(t({0, 3})); }, {"max", "empty"});
  expect_error([] { argmax(t({0}), 0); }, {"argmax", "empty"});
  EXPECT_EQ(sum(t({0, 3})).item(), 0.0);  // well defined: PyTorch gives 0
  EXPECT_TRUE(std::isnan(mean(t({0})).item()));
  expect_error([] { t({2}).item() ; }, {"item", "2 elements"});
}

TEST(BadInput, NanAndInf) {
  expect_error([] { DynTensor::arange(0.0, std::numeric_limits<double>::infinity()); }, {"arange", "finite"});
  expect_error([] { DynTensor::bernoulli({2}, std::nan("")); }, {"bernoulli", "p"});
  expect_error([] { DynTensor::normal({2}, 0, -1); }, {"normal", "std"});
  // NaN values themselves flow through ops like PyTorch: no error
  auto x = DynTensor::from_vector<float>({NAN, 1.f}, {2});
  EXPECT_TRUE(std::isnan(max(x).item()));
}

TEST(BadInput, ProcessSurvivesAndKeepsWorking) {
  for (int i = 0; i < 3; ++i) EXPECT_THROW(add(t({2}), t({3})), Error);
  EXPECT_EQ(add(t({2}), t({2})).numel(), 2);
}
