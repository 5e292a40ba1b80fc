// PyTorch habits (issue 27), written as a PyTorch user writes them. Expected values come from
// PyTorch 1.13 (the torch expression is next to each) or from hand computation; the printouts
// are PyTorch's repr with True/False as true/false (gen: see the comment above kMatrix).
// The PyTorchCheatSheet tests hold the snippets of docs/pytorch.md, so the docs compile.
#include <gtest/gtest.h>

#include <cstdint>
#include <ember/ember.hpp>
#include <ember/nn.hpp>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

using namespace ember;

namespace {

std::vector<float> values(const DynTensor& t) { return t.to_vector<float>(); }
std::vector<bool> flags(const DynTensor& t) { return t.to_vector<bool>(); }
std::string printed(const DynTensor& t) {
  std::ostringstream os;
  os << t;
  return os.str();
}
void expect_near(const std::vector<float>& got, const std::vector<float>& want, float tol = 1e-4f) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "element " << i;
}

// y = torch.tensor([[0.2, 0.7], [0.9, -0.4]]); z = torch.tensor([[0.2, 0.1], [0.9, 0.4]])
DynTensor y_() { return from_vector({0.2f, 0.7f, 0.9f, -0.4f}, {2, 2}); }
DynTensor z_() { return from_vector({0.2f, 0.1f, 0.9f, 0.4f}, {2, 2}); }
// x = torch.tensor([[1., 2., 3.], [4., 5., 6.]])
DynTensor x_() { return from_vector({1.f, 2.f, 3.f, 4.f, 5.f, 6.f}, {2, 3}); }

}  // namespace

TEST(PyTorchHabits, MethodFormsOnDynTensor) {
  DynTensor x = x_();
  EXPECT_EQ(x.reshape({3, 2}).shape(), (Shape{3, 2}));
  EXPECT_EQ(x.view({-1}).shape(), (Shape{6}));
  expect_near(values(x.sum(1)), {6, 15});                  // x.sum(1)
  expect_near(values(x.sum({0})), {5, 7, 9});              // x.sum(0)
  DynTensor m = x.mean({0, 1}, true);                      // x.mean((0, 1), True) -> [[3.5]]
  EXPECT_EQ(m.shape(), (Shape{1, 1}));
  EXPECT_FLOAT_EQ(m.item<float>(), 3.5f);
  EXPECT_FLOAT_EQ(x.sum().item<float>(), 21.f);            // x.sum().item()
  expect_near(values(x.t()), {1, 4, 2, 5, 3, 6});          // x.t()
  expect_near(values(x.permute({1, 0})), {1, 4, 2, 5, 3, 6});
  expect_near(values(x.transpose(0, 1).contiguous()), {1, 4, 2, 5, 3, 6});
  EXPECT_EQ(x.to(DType::f64).dtype(), DType::f64);         // x.to(torch.float64)
  EXPECT_EQ(x.to(Device::cpu()).device(), Device::cpu());  // x.to('cpu')
  expect_near(values(x.softmax(1)), {0.0900f, 0.2447f, 0.6652f, 0.0900f, 0.2447f, 0.6652f});  // x.softmax(1)
  expect_near(values(x.max({1})), {3, 6});                 // x.amax(1)
  expect_near(values(x.exp().log()), {1, 2, 3, 4, 5, 6});
  expect_near(values(x.pow(2).sum(0)), {17, 29, 45});      // x.pow(2).sum(0)
  expect_near(values(x.var({0})), {4.5f, 4.5f, 4.5f});     // x.var(0)
  EXPECT_NEAR(x.std().item<double>(), 1.8708, 1e-4);       // x.std()
  expect_near(values(x.unsqueeze(0).squeeze(0).flatten()), {1, 2, 3, 4, 5, 6});
  auto [values_, indices] = x.max_dim(1);                  // torch.max(x, 1)
  expect_near(values(values_), {3, 6});
  EXPECT_EQ(indices.to_vector<int64_t>(), (std::vector<int64_t>{2, 2}));
  expect_near(values(x.matmul(x.t())), {14, 32, 32, 77});  // x @ x.t()
  expect_near(values(x.clamp(2, 5)), {2, 2, 3, 4, 5, 5});  // x.clamp(2, 5)
  EXPECT_EQ(x.argmax(1).to_vector<int64_t>(), (std::vector<int64_t>{2, 2}));
}

TEST(PyTorchHabits, Operators) {
  DynTensor y = y_(), z = z_();
  DynTensor big = y > 0.5;                                  // y > 0.5
  EXPECT_EQ(big.dtype(), DType::boolean);
  EXPECT_EQ(flags(big), (std::vector<bool>{false, true, true, false}));
  EXPECT_EQ(flags(y == z), (std::vector<bool>{true, false, true, false}));  // y == z
  EXPECT_EQ(flags(y != z), (std::vector<bool>{false, true, false, true}));  // y != z
  EXPECT_EQ(flags(y <= 0.2), (std::vector<bool>{true, false, false, true}));
  EXPECT_EQ(flags(y >= z), (std::vector<bool>{true, true, true, false}));
  EXPECT_EQ(flags(y < z), (std::vector<bool>{false, false, false, true}));
  EXPECT_EQ(flags(0.5 < y), (std::vector<bool>{false, true, true, false}));  // 0.5 < y
  EXPECT_EQ(flags(!big), (std::vector<bool>{true, false, false, true}));     // ~(y > 0.5)
  EXPECT_EQ(flags(big & (y < 0.8)), (std::vector<bool>{false, true, false, false}));
  EXPECT_EQ(flags(big | (y < 0)), (std::vector<bool>{false, true, true, true}));
  expect_near(values(-y), {-0.2f, -0.7f, -0.9f, 0.4f});      // -y

  DynTensor before = y;  // another handle keeps the old value: y += 1 rebinds y only
  y += 1.0;
  expect_near(values(y), {1.2f, 1.7f, 1.9f, 0.6f});
  expect_near(values(before), {0.2f, 0.7f, 0.9f, -0.4f});
  y *= 2;
  y -= z;
  y /= 2.0;
  expect_near(values(y), {1.1f, 1.65f, 1.45f, 0.4f});       // ((y + 1) * 2 - z) / 2
  y += y;
  expect_near(values(y), {2.2f, 3.3f, 2.9f, 0.8f});
}

TEST(PyTorchHabits, PlainIntDims) {
  DynTensor y = y_();
  expect_near(values(sum(y, 1)), {0.9f, 0.5f});             // torch.sum(y, 1)
  expect_near(values(mean(y, 0)), {0.55f, 0.15f});          // torch.mean(y, 0)
  EXPECT_EQ(sum(y, 1, true).shape(), (Shape{2, 1}));
  expect_near(values(sum(y, {0, 1})), {1.4f});
  expect_near(values(sum(y, {})), {1.4f});  // a braced {} is still "all dims", not dim 0
  int64_t dim = -1;
  expect_near(values(prod(y, dim)), {0.14f, -0.36f});       // torch.prod(y, -1)
  EXPECT_EQ(flags(any(y > 0.8, size_t(1))), (std::vector<bool>{false, true}));
}

TEST(PyTorchHabits, Indexing) {
  DynTensor y = y_();
  expect_near(values(y[0]), {0.2f, 0.7f});                  // y[0]
  expect_near(values(y[-1]), {0.9f, -0.4f});                // y[-1]
  expect_near(values(y.index({Slice(), 0})), {0.2f, 0.9f});  // y[:, 0]
  expect_near(values(y.index({1, 1})), {-0.4f});           // y[1, 1]
  DynTensor corner = y.index({Slice{1, std::nullopt}, Slice{std::nullopt, 1}});  // y[1:, :1]
  EXPECT_EQ(corner.shape(), (Shape{1, 1}));
  expect_near(values(corner), {0.9f});
  expect_near(values(y[y > 0.5]), {0.7f, 0.9f});            // y[y > 0.5]
  expect_near(values(y.index({y < 0})), {-0.4f});           // y[y < 0]
  DynTensor rows = from_vector<int64_t>({1, 0, 1}, {3});
  expect_near(values(y.index({rows})), {0.9f, -0.4f, 0.2f, 0.7f, 0.9f, -0.4f});  // y[torch.tensor([1, 0, 1])]
  EXPECT_THROW(y.index({0, 0, 0}), Error);
}

TEST(PyTorchHabits, Constructors) {
  DynTensor y = cast(y_(), DType::f64);
  DynTensor z = zeros_like(y), o = ones_like(y), f = full_like(y, 7);
  EXPECT_EQ(z.shape(), y.shape());
  EXPECT_EQ(z.dtype(), DType::f64);
  expect_near(values(z), {0, 0, 0, 0});
  expect_near(values(o), {1, 1, 1, 1});
  expect_near(values(f), {7, 7, 7, 7});
  EXPECT_EQ(zeros_like(y, DType::i32).dtype(), DType::i32);
  DynTensor u = rand_like(y), n = randn_like(y);
  EXPECT_EQ(u.shape(), y.shape());
  EXPECT_EQ(n.dtype(), DType::f64);
  for (float v : values(u)) EXPECT_TRUE(v >= 0 && v < 1);
  DynTensor r = randn({500, 40});
  EXPECT_EQ(r.dtype(), DType::f32);
  EXPECT_NEAR(r.mean().item<double>(), 0, 0.05);   // 20000 samples: standard error 0.007
  EXPECT_NEAR(r.std().item<double>(), 1, 0.05);
  DynTensor q = rand({1000});
  EXPECT_NEAR(q.mean().item<double>(), 0.5, 0.05);  // U(0, 1): mean 1/2, standard error 0.009
  EXPECT_TRUE((q >= 0).all().item<bool>() && (q < 1).all().item<bool>());
}

TEST(PyTorchHabits, Conversions) {
  DynTensor x = x_(), col = from_vector({10.f, 20.f}, {2, 1});
  EXPECT_EQ(x.dtype(), DType::f32);                         // from_vector({1.f, ...}) is f32
  EXPECT_EQ(from_vector({1.0, 2.0}, {2}).dtype(), DType::f64);
  EXPECT_EQ(from_vector({1, 2}, {2}).dtype(), DType::i32);
  EXPECT_EQ(from_vector({int64_t(1), int64_t(2)}, {2}).dtype(), DType::i64);
  EXPECT_EQ(DynTensor::from_vector({true, false}, {2}).dtype(), DType::boolean);
  DynTensor flat = DynTensor::arange(0., 6.);
  EXPECT_EQ(flat.reshape(x.shape()).shape(), x.shape());   // flat.reshape(x.shape)
  EXPECT_EQ(reshape(flat, x.shape()).shape(), x.shape());
  expect_near(values(expand(col, x.shape())), {10, 10, 10, 20, 20, 20});  // col.expand(x.shape)
  expect_near(values(col.expand(x.shape())), {10, 10, 10, 20, 20, 20});
  std::vector<float> v(3);
  size_t n = v.size();
  int64_t k = 2;
  expect_near(values(x * n), {3, 6, 9, 12, 15, 18});        // Scalar from size_t
  expect_near(values(x + k), {3, 4, 5, 6, 7, 8});           // and from int64_t
  EXPECT_EQ((DynTensor::arange(0, 3) * k).dtype(), DType::i64);  // integral Scalars keep ints integral
  EXPECT_EQ((DynTensor::arange(0, 3) * 0.5).dtype(), DType::f32);
}

TEST(PyTorchHabits, TypedTensors) {
  auto y = Tensor<2>::from_vector({0.2f, 0.7f, 0.9f, -0.4f}, {2, 2});
  auto [values_, indices] = y.max_dim(1);                   // y.max(1, keepdim=True)
  expect_near(values(values_.dyn()), {0.7f, 0.9f});
  EXPECT_EQ(values_.shape(), (Shape{2, 1}));
  EXPECT_EQ(indices.to_vector<int64_t>(), (std::vector<int64_t>{1, 0}));
  auto [low, where_low] = y.min_dim(0);                    // y.min(0, keepdim=True)
  expect_near(values(low.dyn()), {0.2f, -0.4f});
  EXPECT_EQ(where_low.to_vector<int64_t>(), (std::vector<int64_t>{0, 1}));
  Tensor<2, Bool> big = y > 0.5;
  EXPECT_EQ(flags(big.dyn()), (std::vector<bool>{false, true, true, false}));
  EXPECT_EQ(flags((!big).dyn()), (std::vector<bool>{true, false, false, true}));
  EXPECT_EQ(flags((y == y).dyn()), (std::vector<bool>{true, true, true, true}));
  y += 1.0;
  y *= y;
  expect_near(values(y.dyn()), {1.44f, 2.89f, 3.61f, 0.36f});  // (y + 1) ** 2
  Tensor<1> row = y[1];
  expect_near(values(row.dyn()), {3.61f, 0.36f});
  EXPECT_FLOAT_EQ(row.sum().item<float>(), 3.97f);
  EXPECT_EQ(zeros_like(y).shape(), y.shape());
  EXPECT_EQ(Tensor<2>::randn({3, 4}).shape(), (Shape{3, 4}));
  EXPECT_EQ(Tensor<1>::rand({5}).shape(), (Shape{5}));
  Tensor<1> wide = row.to(DType::f64);                      // row.to(torch.float64)
  EXPECT_EQ(wide.dtype(), DType::f64);
  EXPECT_NEAR(wide.sum().item<double>(), 3.97, 1e-5);
  EXPECT_EQ(wide.to(Device::cpu()).device(), Device::cpu());  // row.to('cpu')
  std::ostringstream os;
  os << Tensor<1>::from_vector({1.f, 2.f, 3.f}, {3}) << " on " << Device::cpu();
  EXPECT_EQ(os.str(), "tensor([1., 2., 3.]) on " + Device::cpu().name());
}

TEST(PyTorchHabits, PyTorchNames) {
  DynTensor y = y_(), z = z_();
  EXPECT_EQ(flags(lt(y, z)), flags(y < z));                 // torch.lt
  EXPECT_EQ(flags(le(y, 0.2)), (std::vector<bool>{true, false, false, true}));
  EXPECT_EQ(flags(gt(y, 0.5)), (std::vector<bool>{false, true, true, false}));
  EXPECT_EQ(flags(ge(y, 0.7)), (std::vector<bool>{false, true, true, false}));
  EXPECT_EQ(flags(eq(y, z)), (std::vector<bool>{true, false, true, false}));
  EXPECT_EQ(flags(ne(y, z)), (std::vector<bool>{false, true, false, true}));
  EXPECT_EQ(flags(logical_not(y > 0.5)), (std::vector<bool>{true, false, false, true}));
  // y.masked_fill(y > 0.5, 0.0)
  expect_near(values(masked_fill(y, y > 0.5, 0.0)), {0.2f, 0, 0, -0.4f});
  expect_near(values(y.masked_fill(y > 0.5, 0.0)), {0.2f, 0, 0, -0.4f});
  EXPECT_NEAR(ember::std(y).item<double>(), 0.5802, 1e-4);  // y.std()
  expect_near(values(y.std({1})), {0.3536f, 0.9192f});     // y.std(1)
  EXPECT_EQ(flags(y.lt(z)), (std::vector<bool>{false, false, false, true}));
  EXPECT_EQ(flags(y.ge(0.7)), (std::vector<bool>{false, true, true, false}));
  EXPECT_EQ(flags((y > 0.5).logical_not()), (std::vector<bool>{true, false, false, true}));
  auto t = Tensor<2>::from_vector({0.2f, 0.7f, 0.9f, -0.4f}, {2, 2});
  EXPECT_EQ(flags(t.gt(0.5).dyn()), (std::vector<bool>{false, true, true, false}));
  EXPECT_EQ(flags(t.ne(t).dyn()), (std::vector<bool>{false, false, false, false}));
  EXPECT_NEAR(t.std().item(), 0.5802, 1e-4);
  expect_near(values(t.masked_fill(t > 0.5, -1).dyn()), {0.2f, -1, -1, -0.4f});
}

namespace {
#include "pytorch_habits_print.inc"
}  // namespace

TEST(PyTorchHabits, PrintsAsPyTorch) {
  EXPECT_EQ(printed(from_vector({0.1f, -1.2f, 3.0f, 4.5f}, {2, 2})), kMatrix);
  EXPECT_EQ(printed(from_vector({1.f, 2.f, 3.f}, {3})), kVectorOfIntegers);
  EXPECT_EQ(printed(y_() > 0.5), kMask);
  EXPECT_EQ(printed(DynTensor::arange(0., 1001.)), kSummarised1001);
  EXPECT_EQ(printed(DynTensor::arange(0, 1200).reshape({40, 30})), kIntMatrix40x30);
  EXPECT_EQ(printed(DynTensor::full({}, 1.5, DType::f32)), kScalar);
  EXPECT_EQ(printed(from_vector({1e-5f, 1.0f}, {2})), kScientific);
  EXPECT_EQ(printed(DynTensor::zeros({0, 3})), kEmpty0x3);
  EXPECT_EQ(printed(DynTensor::arange(0., 8.).reshape({2, 2, 2})), kCube);
  EXPECT_EQ(printed(DynTensor::arange(0., 30.)), kWrapped30);
  EXPECT_EQ(printed(from_vector({1, 2}, {2})), kInt32);
  EXPECT_EQ(printed(from_vector({NAN, 1.f, INFINITY}, {3})), kNonFinite);
  EXPECT_EQ(printed(DynTensor::arange(0., 2000.)), kSummarisedScientific);
  EXPECT_EQ(printed(DynTensor::arange(0., 1001.).reshape({7, 11, 13})), kSummarised3d);
  // 1000 elements is PyTorch's threshold: printed in full
  std::string full = printed(DynTensor::arange(0., 1000.));
  EXPECT_EQ(full.find("..."), std::string::npos);
  EXPECT_EQ(full.size(), kLength1000);
}

// ---- docs/pytorch.md: each block between "// [doc:NAME]" and "// [/doc]" is a snippet there ----

TEST(PyTorchCheatSheet, Tensors) {
  // [doc:tensors]
  auto a = from_vector({1.f, 2.f, 3.f, 4.f}, {2, 2});  // torch.tensor([[1., 2.], [3., 4.]])
  auto b = randn({2, 2});                               // torch.randn(2, 2)
  auto c = zeros_like(a) + ones_like(a) * 2;            // torch.zeros_like(a) + torch.ones_like(a) * 2
  auto d = (a.matmul(b.t()) + c).relu().sum(1);         // (a @ b.t() + c).relu().sum(1)
  auto e = a.to(DType::f64).mean({0, 1}, true);         // a.to(torch.float64).mean((0, 1), keepdim=True)
  float total = a.sum().item<float>();                  // a.sum().item()
  std::cout << a << "\n";                               // print(a)
  // [/doc]
  EXPECT_EQ(d.shape(), (Shape{2}));
  EXPECT_EQ(e.dtype(), DType::f64);
  EXPECT_FLOAT_EQ(total, 10.f);
  expect_near(values(c), {2, 2, 2, 2});
}

TEST(PyTorchCheatSheet, Indexing) {
  auto a = from_vector({1.f, 2.f, 3.f, 4.f}, {2, 2});
  // [doc:indexing]
  auto row = a[0];                                      // a[0]
  auto col = a.index({Slice(), 1});                     // a[:, 1]
  auto tail = a.index({Slice{1, std::nullopt}});        // a[1:]
  auto big = a[a > 2];                                  // a[a > 2]
  auto capped = a.masked_fill(a > 3, 3);                // a.masked_fill(a > 3, 3)
  a += 1;                                               // a += 1 (a new value; other handles keep the old one)
  // [/doc]
  expect_near(values(row), {1, 2});
  expect_near(values(col), {2, 4});
  EXPECT_EQ(tail.shape(), (Shape{1, 2}));
  expect_near(values(big), {3, 4});
  expect_near(values(capped), {1, 2, 3, 3});
  expect_near(values(a), {2, 3, 4, 5});
}

TEST(PyTorchCheatSheet, AutogradNnTrainingEvalSaving) {
  Device::cpu().seed(0);
  // [doc:autograd]
  Device dev = Device::cpu().autodiff();                // gradients are recorded on an autodiff device
  auto w = randn({3, 1}, DType::f32, dev).require_grad();  // torch.randn(3, 1, requires_grad=True)
  auto x = randn({8, 3}, DType::f32, dev);
  auto loss = x.matmul(w).square().mean();
  Gradients grads = loss.backward();                    // loss.backward()
  DynTensor dw = *w.grad(grads);                        // w.grad
  // [/doc]
  // d/dw mean((x w)^2) = 2/8 x^T (x w)
  expect_near(values(dw), values(x.t().matmul(x.matmul(w)) * (2.0 / 8)));

  // [doc:nn]
  struct Net {                                          // class Net(nn.Module)
    nn::Linear fc1, fc2;
    EMBER_MODULE(fc1, fc2)
    DynTensor forward(DynTensor x) const { return fc2.forward(relu(fc1.forward(x))); }
  };
  Net net{nn::LinearConfig{3, 16}.init(dev), nn::LinearConfig{16, 1}.init(dev)};
  // [/doc]
  EXPECT_EQ(nn::num_params(net), 3 * 16 + 16 + 16 + 1);

  auto target = x.matmul(from_vector({1.f, -2.f, 0.5f}, {3, 1}).to(dev));
  double first = 0, last = 0;
  // [doc:training]
  optim::Adam opt = optim::AdamConfig{}.init();         // torch.optim.Adam(net.parameters(), lr=1e-2)
  for (int step = 0; step < 100; ++step) {
    DynTensor loss = nn::mse_loss(net.forward(x), target);
    Gradients grads = loss.backward();                  // no zero_grad: each backward returns fresh gradients
    net = opt.step(net, grads, 1e-2);                   // optimizer.step(): returns the updated module
    if (step == 0) first = loss.item();
    last = loss.item();
  }
  // [/doc]
  EXPECT_LT(last, first / 2);

  // [doc:eval]
  nn::set_training(net, false);                         // net.eval()
  DynTensor prediction = no_grad([&] { return net.forward(x); });  // with torch.no_grad(): ...
  { NoGradGuard off; prediction = net.forward(x); }     // the same, as a scope
  // [/doc]
  EXPECT_FALSE(prediction.is_require_grad());

  auto path = (std::filesystem::temp_directory_path() / "ember_pytorch_habits.safetensors").string();
  // [doc:saving]
  nn::save(net, path);                                  // torch.save(net.state_dict(), path)
  Net restored{nn::LinearConfig{3, 16}.init(dev), nn::LinearConfig{16, 1}.init(dev)};
  nn::load(restored, path);                             // net.load_state_dict(torch.load(path))
  // [/doc]
  expect_near(values(restored.forward(x)), values(net.forward(x)));
  std::filesystem::remove(path);

  // [doc:devices]
  Device cpu = Device::cpu();                           // torch.device('cpu'); Device::cuda(0) for 'cuda:0'
  auto moved = x.to(cpu);                               // x.to('cpu')
  Net on_cpu = nn::to_device(net, cpu);                 // net.to('cpu')
  std::cout << moved.device() << "\n";                  // x.device
  // [/doc]
  EXPECT_EQ(moved.device(), cpu);
  EXPECT_EQ(on_cpu.fc1.weight.value().device(), cpu);
}

TEST(PyTorchCheatSheet, UmbrellaHeaderExample) {  // the example at the top of ember/ember.hpp
  Device dev = Device::cpu().autodiff();              // or Device::cuda(0).autodiff()
  auto x = Tensor<2>::randn({64, 784}, dev);          // Tensor<2>::normal({64, 784}, mean, std, dev)
  auto w = Tensor<2>::zeros({784, 10}, dev).require_grad();
  auto loss = gelu(x.matmul(w)).mean();
  Gradients grads = loss.backward();
  Tensor<2> dw = *w.grad(grads);
  std::cout << dw << "\n";
  // d/dw mean(gelu(x w)) at w = 0: gelu'(0) = 1/2, so every column is sum_i x[i, :] / (2 * 64 * 10)
  auto want = x.dyn().sum({0}, true).t().expand({784, 10}) / (2.0 * 64 * 10);
  expect_near(values(dw.dyn()), values(want), 1e-5f);
}

// docs/pytorch.md quotes the [doc:NAME] blocks above (less their indentation), word for word.
TEST(PyTorchCheatSheet, DocsQuoteTheTest) {
  namespace fs = std::filesystem;
  auto read = [](const fs::path& p) {
    std::ifstream in(p);
    EXPECT_TRUE(in.good()) << "cannot read " << p;
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  fs::path root = EMBER_SOURCE_DIR;
  std::string test = read(root / "tests" / "tensor" / "pytorch_habits_test.cpp"), doc = read(root / "docs" / "pytorch.md");
  int blocks = 0;
  std::istringstream lines(test);
  std::string line, block, name;
  bool inside = false;
  const std::string open = "// [doc:", close = "// [/doc]";
  while (std::getline(lines, line)) {
    size_t indent = line.find_first_not_of(' ');
    std::string text = indent == std::string::npos ? "" : line.substr(indent);
    if (text.rfind(open, 0) == 0) {
      inside = true;
      name = text.substr(open.size(), text.size() - open.size() - 1);
      block = "```cpp\n";
    } else if (text == close && inside) {
      inside = false;
      ++blocks;
      EXPECT_NE(doc.find(block + "```\n"), std::string::npos) << "docs/pytorch.md lacks the block [doc:" << name << "]:\n"
                                                              << block;
    } else if (inside) {
      block += line.substr(std::min(line.size(), size_t(2))) + "\n";
    }
  }
  EXPECT_EQ(blocks, 8);
}
