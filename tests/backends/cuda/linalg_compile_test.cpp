// The linear-algebra family of the CUDA backend: matmul (cuBLASLt + a generated integer kernel),
// conv / conv_transpose (cuDNN + a generated bias kernel) and attention (generated flash kernels
// + a materialised fallback). Every generated source compiles without a GPU; with one, the
// results are compared with the CPU backend.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <set>

#include "attention_sources.hpp"
#include "compile_all.hpp"
#include "cuda_backend.hpp"
#include "ember/backends/cuda.hpp"
#include "ember/tensor/ops.hpp"
#include "matmul.hpp"
#include "tensor/dispatch.hpp"

namespace ember {
namespace {

#define REQUIRE_GPU() \
  if (!cuda::available()) GTEST_SKIP() << "no CUDA device"

// ---- every generated source compiles (no GPU needed) ----

TEST(CudaLinalgCompile, IntegerMatmulEveryDType) {
  for (DType dt : {DType::i64, DType::i32, DType::i16, DType::i8, DType::u8}) {
    std::string key = "matmul_int/" + std::string(dtype_name(dt));
    EXPECT_NO_THROW(cuda::compile_cubin(key, cuda::int_matmul_source(dt), 90)) << key;
  }
}

TEST(CudaLinalgCompile, ConvBiasEveryDType) {
  for (DType dt : {DType::f64, DType::f32, DType::f16, DType::bf16}) {
    std::string key = "conv_bias/" + std::string(dtype_name(dt));
    EXPECT_NO_THROW(cuda::compile_cubin(key, cuda::conv_bias_source(dt), 90)) << key;
  }
}

// Compiles the sources on every core. With EMBER_DUMP_CUBIN_DIR set, the attention cubins are
// written there as <key with '_'>.cubin (for `cuobjdump --dump-resource-usage`: registers,
// spills, shared memory).
void compile_attention(const std::vector<cuda::KernelSource>& sources) {
  const char* dir = std::getenv("EMBER_DUMP_CUBIN_DIR");
  auto dump = [dir](const cuda::KernelSource& s, const std::vector<char>& cubin) {
    std::string name = s.key;
    for (char& ch : name)
      if (ch == '/') ch = '_';
    if (FILE* f = std::fopen((std::string(dir) + "/" + name + ".cubin").c_str(), "wb")) {
      std::fwrite(cubin.data(), 1, cubin.size(), f);
      std::fclose(f);
    }
  };
  for (const auto& e : cuda_test::compile_all(sources, dir ? cuda_test::CubinSink(dump) : nullptr)) ADD_FAILURE() << e;
}

TEST(CudaLinalgCompile, FlashAttentionEveryConfig) {
  auto configs = cuda::all_flash_configs();
  EXPECT_EQ(configs.size(), 130u);  // f32: 16 fma + 9 x 2 versions TF32, f16 / bf16: 16 x 3 versions
  std::set<std::string> keys;       // the JIT key tells every variant apart
  for (const auto& c : configs) keys.insert(c.key());
  EXPECT_EQ(keys.size(), configs.size());
  std::vector<cuda::KernelSource> sources;
  for (const auto& c : configs) {
    sources.push_back({c.key(), cuda::flash_attention_source(c)});
    // the shared memory a block asks for fits an H100 / H200 SM (227 KiB)
    EXPECT_LE(cuda::flash_smem_bytes(c), size_t(227) * 1024) << c.key();
  }
  compile_attention(sources);
}

// The register budgets the A/B variables pick besides the defaults (EMBER_CUDA_ATTN_FWD_BLOCKS for
// v3, EMBER_CUDA_ATTN_BWD_BLOCKS for the backward v2), for the head dims that matter most.
TEST(CudaLinalgCompileAttention, RegisterBudgetVariants) {
  std::vector<cuda::KernelSource> sources;
  for (int d : {64, 128}) {
    cuda::FlashConfig c;
    c.dtype = DType::bf16;
    c.head_dim = c.value_dim = d;
    c.tensor_cores = true;
    c.version = 3;
    for (int mb : {1, 2}) {
      c.min_blocks = mb;
      sources.push_back({c.key(), cuda::flash_attention_source(c)});
    }
    for (int mb : {1, 2}) {
      cuda::FlashBackwardConfig b;
      b.dtype = DType::bf16;
      b.head_dim = d;
      b.causal = true;
      b.version = 2;
      b.min_blocks = mb;
      sources.push_back({b.key(), cuda::flash_backward_source(b)});
      b.query_rows = 64;
      sources.push_back({b.key(), cuda::flash_backward_source(b)});
      EXPECT_LE(cuda::flash_backward_smem_bytes(b, 1), size_t(227) * 1024) << b.key();
    }
  }
  compile_attention(sources);
}

TEST(CudaLinalgCompile, AttentionSoftmaxEveryVariant) {
  using cuda::AttnMask;
  struct V {
    DType dt;
    AttnMask mask;
    DType mdt;
  };
  std::vector<V> variants = {
      {DType::f64, AttnMask::none, DType::boolean},    {DType::f64, AttnMask::boolean, DType::boolean},
      {DType::f64, AttnMask::additive, DType::f64},    {DType::f32, AttnMask::none, DType::boolean},
      {DType::f32, AttnMask::boolean, DType::boolean}, {DType::f32, AttnMask::additive, DType::f32},
      {DType::f32, AttnMask::additive, DType::f16},    {DType::f32, AttnMask::additive, DType::bf16}};
  for (const auto& v : variants) {
    std::string key = "attention/softmax/" + std::string(dtype_name(v.dt)) + "/" + std::string(dtype_name(v.mdt));
    EXPECT_NO_THROW(cuda::compile_cubin(key, cuda::attention_softmax_source(v.dt, v.mask, v.mdt), 90)) << key;
  }
}

TEST(CudaLinalgCompile, FlashAttentionBackwardEveryConfig) {
  auto configs = cuda::all_flash_backward_configs();
  EXPECT_EQ(configs.size(), 108u);  // 3 dtypes (f32: TF32) x 3 dims x 3 masks x causal x 2 versions
  std::set<std::string> keys;
  for (const auto& c : configs) keys.insert(c.key());
  EXPECT_EQ(keys.size(), configs.size());
  std::vector<cuda::KernelSource> sources;
  for (const auto& c : configs) {
    sources.push_back({c.key(), cuda::flash_backward_source(c)});
    for (int kernel : {0, 1}) EXPECT_LE(cuda::flash_backward_smem_bytes(c, kernel), size_t(227) * 1024) << c.key();
  }
  for (DType dt : {DType::f32, DType::f64})
    sources.push_back({"attention_backward/ds/" + std::string(dtype_name(dt)), cuda::attention_backward_ds_source(dt)});
  compile_attention(sources);
}

// ---- GPU results against the CPU backend ----

void expect_close(const DynTensor& gpu, const DynTensor& cpu, double rtol, double atol, const std::string& what) {
  ASSERT_EQ(gpu.shape(), cpu.shape()) << what;
  ASSERT_EQ(gpu.dtype(), cpu.dtype()) << what;
  TensorData g = gpu.to(Device::cpu()).into_data(), c = cpu.into_data();
  auto diff = g.approx_equal(c, rtol, atol);
  EXPECT_FALSE(diff.has_value()) << what << ": " << diff.value_or("");
}

DynTensor randn_cast(Shape s, DType dt = DType::f32) {
  return DynTensor::normal(std::move(s), 0, 1, DType::f32, Device::cpu()).cast(dt);
}

TEST(CudaLinalgMatmul, F32TransposedViewsAndBroadcastBatch) {
  REQUIRE_GPU();
  Device gpu = Device::cuda(0);
  cuda::set_allow_tf32(false);
  auto a = randn_cast({2, 1, 37, 29});
  auto b = randn_cast({4, 41, 29});
  auto bt = transpose(b, 1, 2);  // [4, 29, 41], strides [.., 1, 29]: passed with the transpose op
  expect_close(matmul(a.to(gpu), transpose(b.to(gpu), 1, 2)), matmul(a, bt), 1e-5, 1e-5, "broadcast + transposed rhs");
  auto at = randn_cast({29, 37});
  expect_close(matmul(transpose(at.to(gpu), 0, 1), bt.to(gpu)), matmul(transpose(at, 0, 1), bt), 1e-5, 1e-5,
               "transposed lhs, shared by the batch");
  // a linear layer: [B, T, C] x W^T (one tall GEMM)
  auto x = randn_cast({3, 17, 64}), w = randn_cast({48, 64});
  expect_close(matmul(x.to(gpu), transpose(w.to(gpu), 0, 1)), matmul(x, transpose(w, 0, 1)), 1e-5, 1e-5, "linear");
  // sliced (offset, non-contiguous rows) operands and a vector
  auto big = randn_cast({40, 70});
  auto s = slice(big, {Slice{3, 36}, Slice{5, 69, 2}});
  auto v = randn_cast({32, 1});
  expect_close(matmul(slice(big.to(gpu), {Slice{3, 36}, Slice{5, 69, 2}}), v.to(gpu)), matmul(s, v), 1e-5, 1e-5,
               "strided slice");
  // empty inner dim: zeros
  expect_close(matmul(randn_cast({3, 0}).to(gpu), randn_cast({0, 4}).to(gpu)),
               DynTensor::zeros({3, 4}, DType::f32, Device::cpu()), 0, 0, "K = 0");
}

TEST(CudaLinalgMatmul, HalfTypesAndF64) {
  REQUIRE_GPU();
  Device gpu = Device::cuda(0);
  for (DType dt : {DType::f16, DType::bf16, DType::f64}) {
    auto a = randn_cast({3, 33, 65}, dt), b = randn_cast({65, 17}, dt);
    double tol = dt == DType::f64 ? 1e-12 : dt == DType::f16 ? 1e-2 : 5e-2;
    expect_close(matmul(a.to(gpu), b.to(gpu)), matmul(a, b), tol, tol, std::string(dtype_name(dt)));
  }
}

// Rows that do not start on 16-byte boundaries (a vocabulary of 50257, or 1027 columns) are
// copied at a padded pitch for a large product (matmul.cpp's kPadFlops): the values must not
// change, whichever operand (lhs, rhs, output, a transposed lhs, a bias epilogue) is padded.
TEST(CudaLinalgMatmul, UnalignedRowsOfALargeProduct) {
  REQUIRE_GPU();
  Device gpu = Device::cuda(0);
  cuda::set_allow_tf32(false);
  auto a = randn_cast({1024, 1027}), b = randn_cast({1027, 1025});  // A, B and C unaligned
  expect_close(matmul(a.to(gpu), b.to(gpu)), matmul(a, b), 1e-4, 1e-4, "f32, every operand unaligned");
  auto at = randn_cast({1027, 1031});  // a transposed lhs with an unaligned leading dim
  expect_close(matmul(transpose(at.to(gpu), 0, 1), b.to(gpu)), matmul(transpose(at, 0, 1), b), 1e-4, 1e-4,
               "f32, transposed lhs");
  // a linear layer's head: [B, T, C] x W^T + bias, the output's rows unaligned
  auto x = randn_cast({4, 512, 768}), w = randn_cast({5003, 768}), bias = randn_cast({5003});
  expect_close(matmul(x.to(gpu), transpose(w.to(gpu), 0, 1), bias.to(gpu)), matmul(x, transpose(w, 0, 1), bias),
               1e-4, 1e-4, "f32, bias epilogue into unaligned rows");
  for (DType dt : {DType::bf16, DType::f16}) {
    auto ah = a.cast(dt), bh = b.cast(dt);
    // the reference: f32 products of the same rounded inputs, rounded once. Sums of 1027
    // products are about 32 in size (a pitch bug moves values by that much); cuBLASLt's f16
    // kernels round partial sums, 0.03 off here.
    expect_close(matmul(ah.to(gpu), bh.to(gpu)), matmul(ah.cast(DType::f32), bh.cast(DType::f32)).cast(dt), 2e-2,
                 0.1, std::string(dtype_name(dt)) + ", every operand unaligned");
  }
}

TEST(CudaLinalgMatmul, IntegersWrapLikeTheCpu) {
  REQUIRE_GPU();
  Device gpu = Device::cuda(0);
  for (DType dt : {DType::i64, DType::i32, DType::i16, DType::i8, DType::u8}) {
    auto a = DynTensor::randint({2, 70, 33}, -100, 100, DType::i64, Device::cpu()).cast(dt);
    auto b = DynTensor::randint({33, 66}, -100, 100, DType::i64, Device::cpu()).cast(dt);
    expect_close(matmul(a.to(gpu), b.to(gpu)), matmul(a, b), 0, 0, std::string(dtype_name(dt)));
    expect_close(matmul(transpose(b.to(gpu), 0, 1), transpose(a.to(gpu), 1, 2)),
                 matmul(transpose(b, 0, 1), transpose(a, 1, 2)), 0, 0, std::string(dtype_name(dt)) + " transposed");
  }
}

TEST(CudaLinalgConv, Conv2dStridePaddingDilationGroupsBias) {
  REQUIRE_GPU();
  Device gpu = Device::cuda(0);
  auto x = randn_cast({2, 6, 13, 11}), w = randn_cast({9, 2, 3, 4}), b = randn_cast({9});
  ConvOptions o;
  o.stride = {2, 1};
  o.padding = {1, 2};
  o.dilation = {2, 1};
  o.groups = 3;
  expect_close(conv2d(x.to(gpu), w.to(gpu), b.to(gpu), o), conv2d(x, w, b, o), 1e-5, 1e-5, "conv2d f32");
  expect_close(conv2d(x.cast(DType::f64).to(gpu), w.cast(DType::f64).to(gpu), b.cast(DType::f64).to(gpu), o),
               conv2d(x.cast(DType::f64), w.cast(DType::f64), b.cast(DType::f64), o), 1e-10, 1e-12, "conv2d f64");
  for (DType dt : {DType::f16, DType::bf16}) {
    double tol = dt == DType::f16 ? 1e-2 : 6e-2;
    expect_close(conv2d(x.cast(dt).to(gpu), w.cast(dt).to(gpu), b.cast(dt).to(gpu), o),
                 conv2d(x.cast(dt), w.cast(dt), b.cast(dt), o), tol, tol,
                 std::string("conv2d ") + std::string(dtype_name(dt)));
  }
  // with autotuning off, cuDNN's heuristics choose
  cuda::set_autotune(false);
  expect_close(conv2d(x.to(gpu), w.to(gpu), {}, o), conv2d(x, w, {}, o), 1e-5, 1e-5, "conv2d heuristics");
  cuda::set_autotune(true);
}

// The graph-API plans assume 16-byte aligned operands and a contiguous bias. An input viewed at
// an odd offset runs the legacy algorithms (its own plan), and a strided bias is added by the bias
// kernel after the conv; neither may change the result.
TEST(CudaLinalgConv, UnalignedInputAndStridedBias) {
  REQUIRE_GPU();
  Device gpu = Device::cuda(0);
  const Sizes shape = {2, 6, 13, 11};
  const int64_t n = 2 * 6 * 13 * 11;
  auto big = randn_cast({n + 1}), w = randn_cast({9, 6, 3, 3}), b = randn_cast({9}), bb = randn_cast({9, 2});
  auto x = reshape(narrow(big, 0, 1, n), shape);  // 4 bytes past an aligned start on the GPU
  auto x_gpu = reshape(narrow(big.to(gpu), 0, 1, n), shape);
  ConvOptions o;
  o.padding = {1, 1};
  expect_close(conv2d(x_gpu, w.to(gpu), b.to(gpu), o), conv2d(x, w, b, o), 1e-5, 1e-5, "unaligned input");
  expect_close(conv2d(x.to(gpu), w.to(gpu), select(bb.to(gpu), 1, 1), o), conv2d(x, w, select(bb, 1, 1), o), 1e-5,
               1e-5, "strided bias");
  expect_close(conv2d(x_gpu, w.to(gpu), select(bb.to(gpu), 1, 0), o), conv2d(x, w, select(bb, 1, 0), o), 1e-5,
               1e-5, "both");
}

TEST(CudaLinalgConv, ConvTranspose2dOutputPadding) {
  REQUIRE_GPU();
  Device gpu = Device::cuda(0);
  auto x = randn_cast({2, 4, 5, 6}), w = randn_cast({4, 3, 3, 3}), b = randn_cast({6});
  ConvOptions o;
  o.stride = {2, 3};
  o.padding = {1, 0};
  o.output_padding = {1, 2};
  o.groups = 2;
  expect_close(conv_transpose2d(x.to(gpu), w.to(gpu), b.to(gpu), o), conv_transpose2d(x, w, b, o), 1e-5, 1e-5,
               "conv_transpose2d");
}

TEST(CudaLinalgConv, Conv1dAnd3d) {
  REQUIRE_GPU();
  Device gpu = Device::cuda(0);
  auto x = randn_cast({3, 4, 20}), w = randn_cast({5, 4, 3}), b = randn_cast({5});
  ConvOptions o;
  o.stride = {2};
  o.padding = {1};
  expect_close(conv1d(x.to(gpu), w.to(gpu), b.to(gpu), o), conv1d(x, w, b, o), 1e-5, 1e-5, "conv1d");
  auto x3 = randn_cast({1, 2, 6, 5, 4}), w3 = randn_cast({3, 2, 3, 3, 3});
  ConvOptions o3;
  o3.padding = {1};
  expect_close(conv3d(x3.to(gpu), w3.to(gpu), {}, o3), conv3d(x3, w3, {}, o3), 1e-5, 1e-5, "conv3d");
  ConvOptions t1;
  t1.stride = {3};
  t1.padding = {1};
  t1.output_padding = {2};
  auto wt = randn_cast({4, 2, 4});
  expect_close(conv_transpose1d(x.to(gpu), wt.to(gpu), {}, t1), conv_transpose1d(x, wt, {}, t1), 1e-5, 1e-5,
               "conv_transpose1d");
}

// Every forward kernel version: EMBER_CUDA_ATTN_FWD is read per call (unset: v3; v1; v2).
TEST(CudaLinalgAttention, CausalMasksAndUnequalLengths) {
  REQUIRE_GPU();
  Device gpu = Device::cuda(0);
  struct Case {
    int64_t L, S, E, Ev;
  };
  for (const char* version : {"", "v1", "v2"})
    for (Case c : {Case{5, 7, 4, 6}, Case{70, 130, 64, 64}, Case{129, 65, 80, 48}, Case{33, 33, 128, 128},
                   Case{17, 40, 256, 256}, Case{9, 12, 300, 20}, Case{300, 257, 64, 64}, Case{257, 300, 32, 128},
                   Case{200, 200, 128, 64}}) {
      if (*version)
        setenv("EMBER_CUDA_ATTN_FWD", version, 1);
      else
        unsetenv("EMBER_CUDA_ATTN_FWD");
      for (DType dt : {DType::f32, DType::f16, DType::bf16, DType::f64}) {
        auto q = randn_cast({2, 3, c.L, c.E}, dt), k = randn_cast({2, 3, c.S, c.E}, dt), v = randn_cast({2, 3, c.S, c.Ev}, dt);
        auto bmask = greater(randn_cast({c.L, c.S}), -0.5);
        auto fmask = randn_cast({2, 1, c.L, c.S}, dt);
        double tol = dt == DType::f64 ? 1e-10 : dt == DType::f32 ? 2e-5 : dt == DType::f16 ? 1e-2 : 6e-2;
        std::string what = std::string(dtype_name(dt)) + " L" + std::to_string(c.L) + " S" + std::to_string(c.S) +
                           " E" + std::to_string(c.E) + " Ev" + std::to_string(c.Ev) + " fwd " +
                           (*version ? version : "default");
        auto Q = q.to(gpu), K = k.to(gpu), V = v.to(gpu);
        expect_close(scaled_dot_product_attention(Q, K, V), scaled_dot_product_attention(q, k, v), tol, tol, what);
        expect_close(scaled_dot_product_attention(Q, K, V, {}, true), scaled_dot_product_attention(q, k, v, {}, true),
                     tol, tol, what + " causal");
        expect_close(scaled_dot_product_attention(Q, K, V, bmask.to(gpu), true, 0.3),
                     scaled_dot_product_attention(q, k, v, bmask, true, 0.3), tol, tol, what + " causal + bool mask");
        expect_close(scaled_dot_product_attention(Q, K, V, fmask.to(gpu)), scaled_dot_product_attention(q, k, v, fmask),
                     tol, tol, what + " additive mask");
        // the second output, each row's log-sum-exp (f32), against the CPU backend's
        auto lse = [](std::vector<DynTensor> in, bool causal, double scale) {
          return detail::run_op(OpKind::attention, std::move(in), AttentionAttrs{causal, scale})[1];
        };
        const double ltol = dt == DType::f32 || dt == DType::f64 ? 1e-5 : 1e-3;
        expect_close(lse({Q, K, V, bmask.to(gpu)}, true, 0.3), lse({q, k, v, bmask}, true, 0.3), ltol, ltol,
                     what + " lse, causal + bool mask");
        expect_close(lse({Q, K, V, fmask.to(gpu)}, false, 0.125), lse({q, k, v, fmask}, false, 0.125), ltol, ltol,
                     what + " lse, additive mask");
        // transposed (non-contiguous) views: [B, L, H, E] permuted to [B, H, L, E]
        auto qt = randn_cast({2, c.L, 3, c.E}, dt);
        expect_close(scaled_dot_product_attention(transpose(qt.to(gpu), 1, 2), K, V),
                     scaled_dot_product_attention(transpose(qt, 1, 2), k, v), tol, tol, what + " strided q");
      }
    }
  unsetenv("EMBER_CUDA_ATTN_FWD");
}

TEST(CudaLinalgAttention, FullyMaskedRowsAreNaN) {
  REQUIRE_GPU();
  for (const char* version : {"", "v1", "v2"}) {
    if (*version)
      setenv("EMBER_CUDA_ATTN_FWD", version, 1);
    else
      unsetenv("EMBER_CUDA_ATTN_FWD");
    Device gpu = Device::cuda(0);
    auto q = randn_cast({1, 4, 8}), k = randn_cast({1, 6, 8}), v = randn_cast({1, 6, 8});
    auto m = DynTensor::from_vector<float>({1, 1, 0, 0, 0, 0,  //
                                            0, 0, 0, 0, 0, 0,  //
                                            1, 1, 1, 1, 1, 1,  //
                                            0, 1, 0, 1, 0, 1},
                                           {4, 6}, Device::cpu())
                 .cast(DType::boolean);
    expect_close(scaled_dot_product_attention(q.to(gpu), k.to(gpu), v.to(gpu), m.to(gpu)),
                 scaled_dot_product_attention(q, k, v, m), 1e-5, 1e-5, std::string("fully masked row ") + version);
    auto h = [](const DynTensor& t) { return t.cast(DType::f16); };
    expect_close(scaled_dot_product_attention(h(q).to(gpu), h(k).to(gpu), h(v).to(gpu), m.to(gpu)),
                 scaled_dot_product_attention(h(q), h(k), h(v), m), 1e-2, 1e-2,
                 std::string("fully masked row f16 ") + version);
  }
  unsetenv("EMBER_CUDA_ATTN_FWD");
}

// ---- timings (by hand on a GPU: --gtest_also_run_disabled_tests --gtest_filter='*LinalgPerf*') ----

double time_ms(const Device& gpu, const std::function<DynTensor()>& f, int iters = 20) {
  for (int i = 0; i < 3; ++i) (void)f();
  gpu.sync();
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i) (void)f();
  gpu.sync();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / iters;
}

TEST(CudaLinalgPerf, DISABLED_MatmulAndAttention) {
  REQUIRE_GPU();
  Device gpu = Device::cuda(0);
  struct M {
    const char* name;
    int64_t n;
    DType dt;
    bool tf32;
  };
  for (M m : {M{"matmul_bf16_8192", 8192, DType::bf16, false}, M{"matmul_f32_4096", 4096, DType::f32, false},
              M{"matmul_tf32_4096", 4096, DType::f32, true}}) {
    cuda::set_allow_tf32(m.tf32);
    auto a = DynTensor::uniform({m.n, m.n}, -1, 1, DType::f32, Device::cpu()).cast(m.dt).to(gpu);
    auto b = DynTensor::uniform({m.n, m.n}, -1, 1, DType::f32, Device::cpu()).cast(m.dt).to(gpu);
    double ms = time_ms(gpu, [&] { return matmul(a, b); });
    std::printf("PERF %s %.3f ms %.1f TFLOP/s\n", m.name, ms, 2.0 * double(m.n) * m.n * m.n / ms * 1e-9);
  }
  cuda::set_allow_tf32(false);
  struct A {
    int64_t B, H, L, E;
    DType dt;
    bool causal;
  };
  // every forward version (EMBER_CUDA_ATTN_FWD, read per call), v3 with both register budgets
  struct F {
    const char* version;
    const char* blocks;
  };
  for (F f : {F{"", ""}, F{"v1", ""}, F{"v2", ""}, F{"", "1"}, F{"", "2"}})
    for (A c : {A{8, 12, 1024, 64, DType::bf16, true}, A{4, 16, 2048, 64, DType::f16, false},
                A{4, 16, 2048, 64, DType::bf16, true}, A{4, 16, 2048, 128, DType::bf16, false},
                A{4, 16, 2048, 128, DType::f16, true}, A{4, 16, 1024, 64, DType::f32, false}}) {
      if (*f.version)
        setenv("EMBER_CUDA_ATTN_FWD", f.version, 1);
      else
        unsetenv("EMBER_CUDA_ATTN_FWD");
      if (*f.blocks)
        setenv("EMBER_CUDA_ATTN_FWD_BLOCKS", f.blocks, 1);
      else
        unsetenv("EMBER_CUDA_ATTN_FWD_BLOCKS");
      auto q = DynTensor::normal({c.B, c.H, c.L, c.E}, 0, 1, DType::f32, Device::cpu()).cast(c.dt).to(gpu);
      auto k = DynTensor::normal({c.B, c.H, c.L, c.E}, 0, 1, DType::f32, Device::cpu()).cast(c.dt).to(gpu);
      auto v = DynTensor::normal({c.B, c.H, c.L, c.E}, 0, 1, DType::f32, Device::cpu()).cast(c.dt).to(gpu);
      double ms = time_ms(gpu, [&] { return scaled_dot_product_attention(q, k, v, {}, c.causal); });
      double flops = 4.0 * double(c.B * c.H) * double(c.L) * double(c.L) * double(c.E) * (c.causal ? 0.5 : 1.0);
      std::printf("PERF attention_%s_B%lld_H%lld_L%lld_E%lld%s fwd %s%s%s %.3f ms %.1f TFLOP/s\n",
                  std::string(dtype_name(c.dt)).c_str(), (long long)c.B, (long long)c.H, (long long)c.L, (long long)c.E,
                  c.causal ? "_causal" : "", *f.version ? f.version : "v3", *f.blocks ? " blocks " : "", f.blocks, ms,
                  flops / ms * 1e-9);
    }
  unsetenv("EMBER_CUDA_ATTN_FWD");
  unsetenv("EMBER_CUDA_ATTN_FWD_BLOCKS");
  auto x = DynTensor::normal({32, 64, 56, 56}, 0, 1, DType::f32, Device::cpu()).to(gpu);
  auto w = DynTensor::normal({128, 64, 3, 3}, 0, 1, DType::f32, Device::cpu()).to(gpu);
  ConvOptions o;
  o.padding = {1};
  for (DType dt : {DType::f32, DType::f16}) {
    auto xd = x.cast(dt), wd = w.cast(dt);
    double ms = time_ms(gpu, [&] { return conv2d(xd, wd, {}, o); });
    std::printf("PERF conv2d_%s_32x64x56x56_k3 %.3f ms\n", std::string(dtype_name(dt)).c_str(), ms);
  }
}

}  // namespace
}  // namespace ember
