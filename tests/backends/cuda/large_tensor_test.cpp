// Tensors of more than 2^31 elements on the GPU: the kernels' 64-bit index paths (elementwise
// flat and broadcast, copies that cast, transpose, flip or concatenate, reductions and argmax,
// nonzero / masked_select, index_select, slice_assign at offsets past 2^31, cumsum, topk along
// and across 2^31 elements, and a gather whose output passes 2^31). A u8 tensor of n = 2^31 + 4098 zeros holds a few markers;
// every expected value follows from them, so no reference of that size is computed on the CPU.
// Skips where the GPU has less than 32 GiB free.
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ember/backends/cuda.hpp"
#include "ember/ember.hpp"

namespace ember {
namespace {

constexpr int64_t kTwo31 = int64_t(1) << 31;
constexpr int64_t kN = kTwo31 + 4098;  // even: two rows of kC
constexpr int64_t kC = kN / 2;

// position -> value of the markers (every other element is 0)
const std::map<int64_t, int64_t> kMarkers = {{0, 5},          {kC, 3},           {kTwo31 - 1, 7},
                                             {kTwo31, 9},     {kTwo31 + 17, 11}, {kN - 1, 13}};

// element `pos` of the flat view of `t`, as an integer
int64_t at(const DynTensor& t, int64_t pos) {
  return int64_t(slice(reshape(t, {-1}), {Slice{pos, pos + 1}}).cast(DType::f64).item());
}

DynTensor u8(const std::vector<uint8_t>& v, Shape s, const Device& d) {
  return DynTensor::from_vector<uint8_t>(v, std::move(s), d);
}

// A GPU with 32 GiB free, else the test skips (saying so).
class LargeGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda::available()) GTEST_SKIP() << "no CUDA device";
    size_t free_bytes = 0, total_bytes = 0;
    if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess || free_bytes < (size_t(32) << 30))
      GTEST_SKIP() << "needs 32 GiB of free device memory; " << (free_bytes >> 20) << " MiB free";
    gpu = Device::cuda(0);
  }
  void TearDown() override {
    if (cuda::available()) gpu.memory_cleanup();
  }
  Device gpu = Device::cpu();
};

// The u8 tensor of kN elements with its markers.
class CudaLarge : public LargeGpu {
 protected:
  void SetUp() override {
    LargeGpu::SetUp();
    if (IsSkipped()) return;
    x = DynTensor::zeros({kN}, DType::u8, gpu);
    for (auto [pos, v] : kMarkers) x = slice_assign(x, {Slice{pos, pos + 1}}, u8({uint8_t(v)}, {1}, gpu));
  }
  void TearDown() override {
    x = DynTensor();
    LargeGpu::TearDown();
  }
  DynTensor x;
};

TEST_F(CudaLarge, ElementwiseFlatAndBroadcast) {
  for (auto [pos, v] : kMarkers) EXPECT_EQ(at(x, pos), v) << "slice_assign at " << pos;
  {
    DynTensor y = x * 2 + 1;  // flat, with a scalar
    for (auto [pos, v] : kMarkers) EXPECT_EQ(at(y, pos), 2 * v + 1) << pos;
    EXPECT_EQ(at(y, kTwo31 + 1), 1);
    EXPECT_EQ(sum(y).item(), double(kN + 2 * 48));
  }
  {
    DynTensor z = reshape(x, {2, kC}) + u8({10, 20}, {2, 1}, gpu);  // broadcast along the rows
    for (auto [pos, v] : kMarkers) EXPECT_EQ(at(z, pos), v + (pos < kC ? 10 : 20)) << pos;
    EXPECT_EQ(at(z, kN - 2), 20);
  }
  {
    DynTensor w = where(greater(x, 4), x, DynTensor::full({}, 1, DType::u8, gpu));
    for (auto [pos, v] : kMarkers) EXPECT_EQ(at(w, pos), v > 4 ? v : 1) << pos;
  }
}

TEST_F(CudaLarge, CopiesCastTransposeFlipCat) {
  {
    DynTensor h = x.cast(DType::f16);
    for (auto [pos, v] : kMarkers) EXPECT_EQ(at(h, pos), v) << pos;
  }
  {
    DynTensor t = contiguous(transpose(reshape(x, {2, kC}), 0, 1));  // [kC, 2]: t[j][i] = x[i kC + j]
    for (auto [pos, v] : kMarkers) EXPECT_EQ(at(t, (pos % kC) * 2 + pos / kC), v) << pos;
  }
  {
    DynTensor f = flip(x, {0});
    for (auto [pos, v] : kMarkers) EXPECT_EQ(at(f, kN - 1 - pos), v) << pos;
  }
  {
    DynTensor c = cat({slice(x, {Slice{kC, kN}}), slice(x, {Slice{0, kC}})}, 0);  // the halves swapped
    for (auto [pos, v] : kMarkers) EXPECT_EQ(at(c, (pos + kC) % kN), v) << pos;
  }
}

TEST_F(CudaLarge, ReductionsAndSelection) {
  EXPECT_EQ(sum(x).item(), 48.0);
  EXPECT_EQ(max(x).item(), 13.0);
  EXPECT_EQ(argmax(x).item(), double(kN - 1));
  EXPECT_EQ(sum(reshape(x, {2, kC}), {1}).cast(DType::i64).to_vector<int64_t>(), (std::vector<int64_t>{5, 43}));
  EXPECT_EQ(argmax(reshape(x, {2, kC}), 1).to_vector<int64_t>(), (std::vector<int64_t>{0, kC - 1}));
  std::vector<int64_t> where_nz, values;
  for (auto [pos, v] : kMarkers) where_nz.push_back(pos), values.push_back(v);
  EXPECT_EQ(nonzero(x).to_vector<int64_t>(), where_nz);
  EXPECT_EQ(masked_select(x, greater(x, 0)).cast(DType::i64).to_vector<int64_t>(), values);
  auto idx = DynTensor::from_vector<int64_t>({kN - 1, kTwo31, 5, kTwo31 + 17}, {4}, gpu);
  EXPECT_EQ(index_select(x, 0, idx).cast(DType::i64).to_vector<int64_t>(), (std::vector<int64_t>{13, 9, 0, 11}));
}

TEST_F(CudaLarge, ScanTopkAndLargeGather) {
  {
    DynTensor c = cumsum(x, 0);  // i64, 17 GB
    int64_t running = 0;
    for (auto [pos, v] : kMarkers) {
      running += v;
      EXPECT_EQ(at(c, pos), running) << pos;
      if (pos > 0) {
        EXPECT_EQ(at(c, pos - 1), running - v) << pos - 1;
      }
    }
  }
  {
    // topk along the whole row (64-bit entries, split over many blocks); sort along it is an
    // Error naming the op and the length
    auto [values, indices] = topk(x, 3);
    EXPECT_EQ(values.cast(DType::i64).to_vector<int64_t>(), (std::vector<int64_t>{13, 11, 9}));
    EXPECT_EQ(indices.to_vector<int64_t>(), (std::vector<int64_t>{kN - 1, kTwo31 + 17, kTwo31}));
    auto [lo, lo_i] = topk(x, 2, 0, false);  // the smallest: zeros, the lowest index first
    EXPECT_EQ(lo_i.to_vector<int64_t>(), (std::vector<int64_t>{1, 2}));
    try {
      (void)argsort(x);
      FAIL() << "expected an Error";
    } catch (const Error& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find("sort"), std::string::npos) << m;
      EXPECT_NE(m.find(std::to_string(kN)), std::string::npos) << m;
    }
    auto [cv, ci] = topk(reshape(x, {kC, 2}), 1, 0);  // [1, 2]: the largest of each column
    // column 0: the even positions (5 at 0, 9 at 2^31); column 1: the odd ones (13 at n - 1 the largest)
    EXPECT_EQ(cv.cast(DType::i64).to_vector<int64_t>(), (std::vector<int64_t>{9, 13}));
    EXPECT_EQ(ci.to_vector<int64_t>(), (std::vector<int64_t>{kTwo31 / 2, (kN - 2) / 2}));
  }
  {
    // an embedding-style lookup whose output has more than 2^31 elements: rows of a [4, 4096]
    // table (row r filled with r + 1), 2^19 + 3 lookups cycling through the rows
    auto table = reshape(DynTensor::arange(1, 5, 1, DType::i64, gpu).cast(DType::u8), {4, 1}) *
                 DynTensor::ones({4, 4096}, DType::u8, gpu);
    const int64_t n = (int64_t(1) << 19) + 3;
    auto idx = remainder(DynTensor::arange(0, n, 1, DType::i64, gpu), 4);
    DynTensor out = index_select(table, 0, idx);
    ASSERT_EQ(out.shape(), (Shape{n, 4096}));
    for (int64_t row : {int64_t(0), n / 2 + 1, n - 2, n - 1})
      for (int64_t col : {int64_t(0), int64_t(4095)}) EXPECT_EQ(at(out, row * 4096 + col), row % 4 + 1) << row;
    EXPECT_EQ(sum(out).item(), double((n / 4) * 10 + 1 + 2 + 3) * 4096);
  }
}

// Rows i of `got` (a GPU result) against `want_row(i)` (computed on the CPU from row i alone).
template <class F>
void expect_rows(const DynTensor& got, const std::vector<int64_t>& rows, F want_row, double tol, const char* what) {
  for (int64_t r : rows) {
    auto g = slice(got, {Slice{r, r + 1}}).to(Device::cpu()).cast(DType::f32).to_vector<float>();
    const DynTensor want = want_row(r);
    auto w = want.cast(DType::f32).to_vector<float>();
    ASSERT_EQ(g.size(), w.size()) << what << " row " << r;
    double worst = 0;
    for (size_t i = 0; i < g.size(); ++i) worst = std::max(worst, double(std::abs(g[i] - w[i])));
    EXPECT_LE(worst, tol) << what << " row " << r;
  }
}

// Language-model-sized float work past 2^31 elements: bf16 logits [65541, 32771] (2.1e9
// elements) through softmax, log_softmax and the fused cross-entropy; a batched matmul whose
// operands pass 2^31 elements (cuBLASLt with 64-bit batch strides); layer_norm over the logits.
// Rows on both sides of the 2^31 boundary are checked against the CPU on those rows alone.
TEST_F(LargeGpu, LogitsMatmulAndNormsPast2To31) {
  const int64_t N = 65541, V = 32771;  // N * V = 2147844111 > 2^31
  gpu.seed(3);
  DynTensor logits = DynTensor::normal({N, V}, 0, 2, DType::bf16, gpu);
  const std::vector<int64_t> rows = {0, kTwo31 / V, kTwo31 / V + 1, N - 1};  // row 65529 holds element 2^31
  auto row = [&](int64_t r) { return slice(logits, {Slice{r, r + 1}}).to(Device::cpu()).cast(DType::f32); };
  {
    DynTensor p = softmax(logits, -1);
    expect_rows(p, rows, [&](int64_t r) { return softmax(row(r), -1); }, 2e-3, "softmax");
  }
  {
    DynTensor lp = log_softmax(logits, -1);
    expect_rows(lp, rows, [&](int64_t r) { return log_softmax(row(r), -1); }, 0.15, "log_softmax");
  }
  {
    DynTensor ln = layer_norm(logits, {V});
    expect_rows(ln, rows, [&](int64_t r) { return layer_norm(row(r), {V}); }, 5e-2, "layer_norm");
  }
  {
    auto target = remainder(DynTensor::arange(0, N, 1, DType::i64, gpu) * 7919, V);
    CrossEntropyRows ce = cross_entropy_rows(logits, target);
    auto t_cpu = target.to(Device::cpu());
    expect_rows(reshape(ce.loss, {N, 1}), rows,
                [&](int64_t r) {
                  auto x = row(r);
                  auto lse = log(sum(exp(x - max(x)), {-1}, true)) + max(x);
                  auto t = slice(t_cpu, {Slice{r, r + 1}});
                  return reshape(lse - index_select(reshape(x, {V}), 0, t), {1, 1});
                },
                2e-1, "cross_entropy_rows");
  }
  logits = DynTensor();
  {
    // [16385, 128, 1024] @ [16385, 1024, 64]: a holds 2.1e9 elements
    const int64_t B = 16385;
    DynTensor a = DynTensor::normal({B, 128, 1024}, 0, 1, DType::bf16, gpu);
    DynTensor b = DynTensor::normal({B, 1024, 64}, 0, 1, DType::bf16, gpu);
    DynTensor c = matmul(a, b);
    for (int64_t i : {int64_t(0), B / 2, B - 1}) {
      auto ai = slice(a, {Slice{i, i + 1}}).to(Device::cpu()).cast(DType::f32);
      auto bi = slice(b, {Slice{i, i + 1}}).to(Device::cpu()).cast(DType::f32);
      auto want = matmul(ai, bi);
      auto got = slice(c, {Slice{i, i + 1}}).to(Device::cpu()).cast(DType::f32);
      auto err = max(abs(got - want)).item(), scale = max(abs(want)).item();
      EXPECT_LE(err, 1e-2 * scale) << "batch " << i;
    }
  }
}

}  // namespace
}  // namespace ember
