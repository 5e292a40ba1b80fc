// DLPack on CUDA (src/tensor/dlpack.cpp, CudaBackend::wrap_device_memory): ember's own CUDA
// exports imported back in place, with their strides described by hand (a transpose, a flip),
// bool bytes normalised, the deleter run once the last tensor over the memory is gone, and no
// op ever writing into imported memory. The exchange with PyTorch's CUDA tensors is
// tests/tensor/dlpack_torch/dlpack_torch_test.py on a GPU.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "ember/backends/cuda.hpp"
#include "ember/core/error.hpp"
#include "ember/tensor/dlpack.hpp"
#include "ember/tensor/ops.hpp"

namespace ember {
namespace {

using dlpack::DLManagedTensor;

int g_deleted = 0;
void (*g_inner)(DLManagedTensor*) = nullptr;
void counting_deleter(DLManagedTensor* m) {
  ++g_deleted;
  g_inner(m);
}
// m's deleter, counted in g_deleted from now on
void count_deleter(DLManagedTensor* m) {
  g_inner = m->deleter;
  m->deleter = counting_deleter;
}

const void* address(const DynTensor& t) { return t.device().backend().memory_view(t.primitive())->data; }

std::vector<float> host(const DynTensor& t) { return t.to(Device::cpu()).cast(DType::f32).to_vector<float>(); }

TEST(CudaDlpack, ImportsEmbersOwnExportInPlace) {
  if (!cuda::available()) GTEST_SKIP() << "no CUDA device: " << cuda::describe_devices();
  const Device gpu = Device::cuda(0);
  DynTensor x = DynTensor::arange(0, 12, 1, DType::f32, gpu).reshape({3, 4});
  DLManagedTensor* m = to_dlpack(x);
  EXPECT_EQ(m->dl_tensor.device.device_type, dlpack::kDLCUDA);
  count_deleter(m);
  g_deleted = 0;
  {
    DynTensor y = from_dlpack(m);
    EXPECT_EQ(y.device(), gpu);
    EXPECT_EQ(y.shape(), Shape({3, 4}));
    EXPECT_EQ(host(y), host(x));
    EXPECT_EQ(address(y), address(x));  // the same memory
    // an op holding the imported tensor alone still writes a new buffer: x keeps its values
    DynTensor z = std::move(y) * 2.0f;
    EXPECT_EQ(host(z)[11], 22.0f);
    EXPECT_EQ(host(x)[11], 11.0f);
    EXPECT_EQ(g_deleted, 1);  // y is gone: its memory was released to the exporter
  }
  EXPECT_EQ(host(x)[5], 5.0f);
}

TEST(CudaDlpack, ImportsAnyStrides) {
  if (!cuda::available()) GTEST_SKIP() << "no CUDA device: " << cuda::describe_devices();
  const Device gpu = Device::cuda(0);
  DynTensor x = DynTensor::arange(0, 24, 1, DType::f32, gpu).reshape({4, 6});
  const std::vector<float> xs = host(x);
  // the export described as its transpose [6, 4] with strides (1, 6)
  DLManagedTensor* m = to_dlpack(x);
  int64_t shape_t[2] = {6, 4}, strides_t[2] = {1, 6};
  m->dl_tensor.shape = shape_t;
  m->dl_tensor.strides = strides_t;
  DynTensor t = from_dlpack(m);
  EXPECT_EQ(t.shape(), Shape({6, 4}));
  EXPECT_EQ(host(t), host(transpose(x, 0, 1)));
  // row 2 backwards: 6 elements from the last of the row, stride -1
  DLManagedTensor* f = to_dlpack(x);
  int64_t shape_f[1] = {6}, strides_f[1] = {-1};
  f->dl_tensor.shape = shape_f;
  f->dl_tensor.strides = strides_f;
  f->dl_tensor.ndim = 1;
  f->dl_tensor.byte_offset = (2 * 6 + 5) * sizeof(float);
  DynTensor r = from_dlpack(f);
  EXPECT_EQ(host(r), (std::vector<float>{17, 16, 15, 14, 13, 12}));
  EXPECT_EQ(host(r + 0.0f), (std::vector<float>{17, 16, 15, 14, 13, 12}));
  EXPECT_EQ(host(x), xs);
}

TEST(CudaDlpack, BoolBytesAndBadMemory) {
  if (!cuda::available()) GTEST_SKIP() << "no CUDA device: " << cuda::describe_devices();
  const Device gpu = Device::cuda(0);
  DynTensor bytes = DynTensor::from_vector<int64_t>({0, 2, 1, 255}, Shape{4}, Device::cpu()).cast(DType::u8).to(gpu);
  DLManagedTensor* m = to_dlpack(bytes);
  m->dl_tensor.dtype.code = dlpack::kDLBool;
  DynTensor b = from_dlpack(m);
  EXPECT_EQ(b.dtype(), DType::boolean);
  EXPECT_EQ(host(b), (std::vector<float>{0, 1, 1, 1}));
  // host memory that claims to be on the GPU
  DynTensor h = DynTensor::arange(0, 4, 1, DType::f32, Device::cpu());
  DLManagedTensor* bad = to_dlpack(h);
  bad->dl_tensor.device = {dlpack::kDLCUDA, 0};
  count_deleter(bad);
  g_deleted = 0;
  try {
    (void)from_dlpack(bad);
    FAIL() << "host memory imported as CUDA memory";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not CUDA device memory"), std::string::npos) << e.what();
  }
  EXPECT_EQ(g_deleted, 0);  // refused: the tensor stays the caller's, as on the CPU
  bad->deleter(bad);
  EXPECT_EQ(g_deleted, 1);
}

}  // namespace
}  // namespace ember
