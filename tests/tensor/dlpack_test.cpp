// to_dlpack / from_dlpack (include/ember/tensor/dlpack.hpp): round trips, zero copy, the deleter,
// and the errors. The exchange with PyTorch is tests/tensor/dlpack_torch_test.py.
#include "ember/tensor/dlpack.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "ember/ember.hpp"

namespace ember {
namespace {

using dlpack::DLManagedTensor;

// A DLManagedTensor over caller-owned memory whose deleter counts its calls.
struct Foreign {
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;
  DLManagedTensor managed{};
  int deleted = 0;
  Foreign(void* data, dlpack::DLDataType dtype, std::vector<int64_t> dims, std::vector<int64_t> steps = {})
      : shape(std::move(dims)), strides(std::move(steps)) {
    managed.dl_tensor.data = data;
    managed.dl_tensor.device = {dlpack::kDLCPU, 0};
    managed.dl_tensor.ndim = static_cast<int32_t>(shape.size());
    managed.dl_tensor.dtype = dtype;
    managed.dl_tensor.shape = shape.data();
    managed.dl_tensor.strides = strides.empty() ? nullptr : strides.data();
    managed.manager_ctx = this;
    managed.deleter = [](DLManagedTensor* self) { ++static_cast<Foreign*>(self->manager_ctx)->deleted; };
  }
};

TEST(DLPack, StructsHaveTheAbiLayout) {
  EXPECT_EQ(sizeof(dlpack::DLTensor), 48u);
  EXPECT_EQ(offsetof(dlpack::DLTensor, ndim), 16u);
  EXPECT_EQ(offsetof(dlpack::DLTensor, dtype), 20u);
  EXPECT_EQ(offsetof(DLManagedTensor, manager_ctx), 48u);
}

TEST(DLPack, ExportDescribesTheTensorInPlace) {
  auto x = DynTensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3}, Device::cpu());
  DLManagedTensor* m = to_dlpack(x);
  const dlpack::DLTensor& t = m->dl_tensor;
  EXPECT_EQ(t.device.device_type, dlpack::kDLCPU);
  EXPECT_EQ(t.ndim, 2);
  EXPECT_EQ(t.shape[0], 2);
  EXPECT_EQ(t.shape[1], 3);
  EXPECT_EQ(t.strides[0], 3);
  EXPECT_EQ(t.strides[1], 1);
  EXPECT_EQ(t.dtype.code, dlpack::kDLFloat);
  EXPECT_EQ(t.dtype.bits, 32);
  EXPECT_EQ(t.dtype.lanes, 1);
  const auto* v = reinterpret_cast<const float*>(static_cast<const char*>(t.data) + t.byte_offset);
  EXPECT_EQ(std::vector<float>(v, v + 6), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  // the same memory: a write through the export is seen by x
  const_cast<float*>(v)[4] = 50;
  EXPECT_EQ(x.to_vector<float>()[4], 50);
  m->deleter(m);
}

TEST(DLPack, ExportOutlivesTheTensor) {
  DLManagedTensor* m;
  {
    auto x = DynTensor::from_vector<int32_t>({7, 8, 9}, {3}, Device::cpu());
    m = to_dlpack(x);
  }
  const auto* v = static_cast<const int32_t*>(m->dl_tensor.data);
  EXPECT_EQ(v[0] + v[1] + v[2], 24);
  m->deleter(m);
}

TEST(DLPack, StridedViewIsExportedContiguous) {
  auto x = DynTensor::from_vector<double>({1, 2, 3, 4, 5, 6}, {2, 3}, Device::cpu()).t();  // [3, 2]
  DLManagedTensor* m = to_dlpack(x);
  EXPECT_EQ(m->dl_tensor.shape[0], 3);
  EXPECT_EQ(m->dl_tensor.strides[0], 2);
  const auto* v = static_cast<const double*>(m->dl_tensor.data);
  EXPECT_EQ(std::vector<double>(v, v + 6), (std::vector<double>{1, 4, 2, 5, 3, 6}));
  m->deleter(m);
}

TEST(DLPack, EveryDTypeRoundTrips) {
  for (DType dt : {DType::f64, DType::f32, DType::f16, DType::bf16, DType::i64, DType::i32, DType::i16, DType::i8,
                   DType::u8, DType::boolean}) {
    auto x = DynTensor::from_vector<float>({0, 1, 2, 3, 0, 5}, {3, 2}, Device::cpu()).cast(dt);
    DynTensor y = from_dlpack(to_dlpack(x));
    EXPECT_EQ(y.dtype(), dt) << dt;
    EXPECT_EQ(y.shape(), x.shape()) << dt;
    EXPECT_EQ(y.cast(DType::f64).to_vector<double>(), x.cast(DType::f64).to_vector<double>()) << dt;
  }
}

TEST(DLPack, DecoratedDevicesExportInPlace) {
  for (const Device& d : {Device::cpu().autodiff(), Device::cpu().fusion()}) {
    auto x = DynTensor::from_vector<float>({1, 2, 3}, {3}, d) * 2.0;  // queued on the fusion device
    DLManagedTensor* m = to_dlpack(x);
    static_cast<float*>(m->dl_tensor.data)[0] = 20;  // the decorator's value is the exported memory
    EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{20, 4, 6})) << d.name();
    DynTensor y = from_dlpack(m);
    EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{20, 4, 6})) << d.name();
  }
}

TEST(DLPack, ImportWrapsAndTheLastTensorRunsTheDeleter) {
  std::vector<float> values{1, 2, 3, 4};
  Foreign f(values.data(), {dlpack::kDLFloat, 32, 1}, {2, 2});
  {
    DynTensor x = from_dlpack(&f.managed);
    DynTensor view = x.reshape({4});
    x = DynTensor();
    values[3] = 40;  // the producer writes; ember reads the same memory
    EXPECT_EQ(view.to_vector<float>(), (std::vector<float>{1, 2, 3, 40}));
    EXPECT_EQ(f.deleted, 0);
    EXPECT_EQ((view + 1.0).to_vector<float>(), (std::vector<float>{2, 3, 4, 41}));
    EXPECT_EQ(values[0], 1);  // ember never writes into it
  }
  EXPECT_EQ(f.deleted, 1);
}

TEST(DLPack, ImportCopiesStridesEmberCannotWrap) {
  std::vector<int64_t> values{1, 2, 3, 4, 5, 6};
  Foreign f(values.data(), {dlpack::kDLInt, 64, 1}, {3, 2}, {1, 3});  // the transpose of [[1,2,3],[4,5,6]]
  DynTensor x = from_dlpack(&f.managed);
  EXPECT_EQ(f.deleted, 1);  // copied: the producer's buffer is released at once
  values[0] = 100;
  EXPECT_EQ(x.to_vector<int64_t>(), (std::vector<int64_t>{1, 4, 2, 5, 3, 6}));
}

TEST(DLPack, ImportByteOffsetAndSizeOneStrides) {
  std::vector<int32_t> values{9, 1, 2, 3};
  Foreign f(values.data(), {dlpack::kDLInt, 32, 1}, {1, 3}, {99, 1});
  f.managed.dl_tensor.byte_offset = sizeof(int32_t);
  DynTensor x = from_dlpack(&f.managed);
  EXPECT_EQ(x.shape(), Shape({1, 3}));
  EXPECT_EQ(x.to_vector<int32_t>(), (std::vector<int32_t>{1, 2, 3}));
}

void expect_error(DLManagedTensor* m, const std::string& needle) {
  try {
    from_dlpack(m);
    ADD_FAILURE() << "no error; expected one naming " << needle;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(DLPack, ErrorsNameTheArgument) {
  float v[4] = {};
  Foreign bad_code(v, {dlpack::kDLComplex, 64, 1}, {4});
  expect_error(&bad_code.managed, "argument 'dl_tensor.dtype'");
  Foreign lanes(v, {dlpack::kDLFloat, 32, 4}, {1});
  expect_error(&lanes.managed, "lanes");
  Foreign negative(v, {dlpack::kDLFloat, 32, 1}, {2, -2});
  expect_error(&negative.managed, "argument 'dl_tensor.shape' has dim 1 = -2");
  Foreign gpu(v, {dlpack::kDLFloat, 32, 1}, {4});
  gpu.managed.dl_tensor.device = {dlpack::kDLCUDA, 1};
  expect_error(&gpu.managed, "argument 'dl_tensor.device' is CUDA device 1");
  Foreign vulkan(v, {dlpack::kDLFloat, 32, 1}, {4});
  vulkan.managed.dl_tensor.device = {dlpack::kDLVulkan, 0};
  expect_error(&vulkan.managed, "argument 'dl_tensor.device' has device type 7");
  expect_error(nullptr, "argument 'm'");
  // an error leaves the tensor with the caller
  EXPECT_EQ(bad_code.deleted + lanes.deleted + negative.deleted + gpu.deleted + vulkan.deleted, 0);
  EXPECT_THROW(to_dlpack(DynTensor()), Error);
}

TEST(DLPack, CudaTensorsExportTheirDevice) {
  if (!cuda::available()) GTEST_SKIP() << "no CUDA device";
  auto x = DynTensor::from_vector<float>({1, 2, 3}, {3}, Device::cuda(0)) * 2.0;
  DLManagedTensor* m = to_dlpack(x);
  EXPECT_EQ(m->dl_tensor.device.device_type, dlpack::kDLCUDA);
  EXPECT_EQ(m->dl_tensor.device.device_id, 0);
  EXPECT_NE(m->dl_tensor.data, nullptr);
  m->deleter(m);
}

}  // namespace
}  // namespace ember
