// ember's CPU backend against LibTorch (the peer), both linked into this binary and run with
// the same number of threads. Writes a JSON report and prints a markdown table.
//
//   ember_bench_cpu [--out FILE] [--threads N] [--filter a,b] [--budget SECONDS] [--quick]
//
// Run it through ./bench.sh cpu (which builds it, sets the BLAS/OpenMP thread variables and
// writes build/reports/bench-cpu.json). Methodology and fields: docs/benchmarks.md.
#include <immintrin.h>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/core/InferenceMode.h>
#include <torch/script.h>
#include <torch/torch.h>
#include <torch/version.h>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <ember/backends/cpu.hpp>
#include <ember/ember.hpp>
#include <ember/nn/file.hpp>
#include <ember/nn/layers.hpp>
#include <ember/nn/loss.hpp>
#include <ember/nn/rnn.hpp>
#include <ember/nn/transformer.hpp>
#include <ember/onnx/quantize.hpp>
#include <ember/onnx/runtime.hpp>
#include <ember/optim/optimizer.hpp>
#include <ember/store/npy.hpp>
#include <ember/store/safetensors.hpp>

#include <filesystem>

#include "harness.hpp"

namespace {

using ember::DynTensor;
const std::string kPeer = "libtorch";

volatile double g_sink = 0;  // scalars read back by the overhead benchmark end up here

// ------------------------------------------------------------------ conversions and checks

at::Tensor to_torch(const DynTensor& t) {
  std::vector<float> v = t.to_vector<float>();
  const auto& dims = t.shape().dims();
  return at::from_blob(v.data(), at::IntArrayRef(dims.data(), dims.size()), at::kFloat).clone();
}

bench::Check check_close(const DynTensor& got, const at::Tensor& ref, bench::Tolerance tol) {
  const std::vector<int64_t> ref_dims(ref.sizes().begin(), ref.sizes().end());
  if (got.shape().dims() != ref_dims) {
    bench::Check c;
    c.detail = "shape " + got.shape().str() + " vs peer " + ember::Shape(ref_dims).str();
    return c;
  }
  const std::vector<float> g = got.to_vector<float>();
  const at::Tensor r = ref.to(at::kFloat).contiguous();
  return bench::compare_values(g.data(), r.data_ptr<float>(), static_cast<int64_t>(g.size()), tol);
}

// ------------------------------------------------------------------ machine peak

constexpr int kAcc512 = 16;  // independent accumulators: enough to hide FMA latency
constexpr int kAcc256 = 12;  // 12 + 2 constants fit the 16 ymm registers

__attribute__((target("avx512f"))) float fma_loop_avx512(int64_t iters) {
  __m512 acc[kAcc512];
  for (int j = 0; j < kAcc512; ++j) acc[j] = _mm512_set1_ps(1e-3f * float(j));
  const __m512 m = _mm512_set1_ps(0.9999f), c = _mm512_set1_ps(1e-4f);
  for (int64_t i = 0; i < iters; ++i) {
#pragma GCC unroll 16
    for (int j = 0; j < kAcc512; ++j) acc[j] = _mm512_fmadd_ps(acc[j], m, c);
  }
  __m512 s = acc[0];
  for (int j = 1; j < kAcc512; ++j) s = _mm512_add_ps(s, acc[j]);
  float out[16];  // (not _mm512_reduce_add_ps: g++ 12 warns inside it)
  _mm512_storeu_ps(out, s);
  float t = 0;
  for (float v : out) t += v;
  return t;
}

__attribute__((target("avx2,fma"))) float fma_loop_avx2(int64_t iters) {
  __m256 acc[kAcc256];
  for (int j = 0; j < kAcc256; ++j) acc[j] = _mm256_set1_ps(1e-3f * float(j));
  const __m256 m = _mm256_set1_ps(0.9999f), c = _mm256_set1_ps(1e-4f);
  for (int64_t i = 0; i < iters; ++i) {
#pragma GCC unroll 12
    for (int j = 0; j < kAcc256; ++j) acc[j] = _mm256_fmadd_ps(acc[j], m, c);
  }
  __m256 s = acc[0];
  for (int j = 1; j < kAcc256; ++j) s = _mm256_add_ps(s, acc[j]);
  float out[8];
  _mm256_storeu_ps(out, s);
  float t = 0;
  for (float v : out) t += v;
  return t;
}

struct Peak {
  double gflops = 0, ms = 0;
  std::string isa;
  double gflops_avx512 = NAN, gflops_avx2 = NAN;
};

// GFLOP/s of `loop` on `threads` threads (median of 5 runs of ~60 ms) and that run's time.
std::pair<double, double> measure_fma(float (*loop)(int64_t), double flop_per_iter, int threads) {
  int64_t iters = 1 << 16;
  for (;;) {  // calibrate on one thread to ~60 ms
    const double t0 = bench::now_ms();
    g_sink = g_sink + loop(iters);
    const double t = bench::now_ms() - t0;
    if (t > 20) {
      iters = static_cast<int64_t>(double(iters) * 60.0 / t) + 1;
      break;
    }
    iters *= 4;
  }
  std::vector<double> times;
  for (int r = 0; r < 5; ++r) {
    std::vector<float> res(static_cast<size_t>(threads));
    const double t0 = bench::now_ms();
    std::vector<std::thread> pool;
    for (int i = 0; i < threads; ++i) pool.emplace_back([&, i] { res[size_t(i)] = loop(iters); });
    for (auto& th : pool) th.join();
    times.push_back(bench::now_ms() - t0);
    for (float v : res) g_sink = g_sink + v;
  }
  const double ms = bench::median(times);
  return {flop_per_iter * double(iters) * threads / (ms * 1e6), ms};
}

Peak measure_peak(int threads) {
  Peak p;
  if (__builtin_cpu_supports("avx512f")) {
    auto [g, ms] = measure_fma(fma_loop_avx512, 2.0 * 16 * kAcc512, threads);
    p = {g, ms, "avx512", g, NAN};
  }
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    auto [g, ms] = measure_fma(fma_loop_avx2, 2.0 * 8 * kAcc256, threads);
    p.gflops_avx2 = g;
    if (g > p.gflops) {
      p.gflops = g;
      p.ms = ms;
      p.isa = "avx2";
    }
  }
  return p;
}

// ------------------------------------------------------------------ benchmarks

struct Ctx {
  bench::Runner& run;
  int threads;
  double peak_gflops;  // 0 when unknown

  // run.compare with the ember device's sync() closing every timed sample.
  bench::Entry& compare(const std::string& name, const bench::Runner::Fn& ember_fn, const bench::Runner::Fn& peer_fn,
                        const bench::Runner::CheckFn& check, const std::string& peer = kPeer) {
    return run.compare(name, peer, ember_fn, peer_fn, check, [] { ember::Device::cpu().sync(); });
  }
};

// Runs `body` (which sets up and calls run.compare) when `name` is selected; a setup failure
// (e.g. an ember op that does not exist yet while creating inputs) becomes an error entry.
void guarded(Ctx& cx, const std::string& name, const std::function<void()>& body, const std::string& peer = kPeer) {
  if (!cx.run.selected(name)) return;
  try {
    body();
  } catch (const std::exception& e) {
    cx.run.fail(name, peer, e.what());
  }
}

void set_gflops(Ctx& cx, bench::Entry& e, double flop) {
  if (e.ember_ms) e.set("gflops_ember", flop / (*e.ember_ms * 1e6));
  if (e.peer_ms) e.set("gflops_peer", flop / (*e.peer_ms * 1e6));
  if (cx.peak_gflops > 0) {
    if (e.ember_ms) e.set("pct_of_peak", 100.0 * flop / (*e.ember_ms * 1e6) / cx.peak_gflops);
    if (e.peer_ms) e.set("pct_of_peak_peer", 100.0 * flop / (*e.peer_ms * 1e6) / cx.peak_gflops);
  }
}

void set_gbps(bench::Entry& e, double bytes) {
  if (e.ember_ms) e.set("gbps_ember", bytes / (*e.ember_ms * 1e6));
  if (e.peer_ms) e.set("gbps_peer", bytes / (*e.peer_ms * 1e6));
}

void bench_matmul(Ctx& cx, int64_t n) {
  const std::string name = "matmul_f32_" + std::to_string(n);
  guarded(cx, name, [&] {
    DynTensor a = DynTensor::normal({n, n}), b = DynTensor::normal({n, n});
    at::Tensor ta = to_torch(a), tb = to_torch(b);
    auto& e = cx.compare(
        name, [&] { bench::keep(ember::matmul(a, b)); }, [&] { bench::keep(at::matmul(ta, tb)); },
        [&] { return check_close(ember::matmul(a, b), at::matmul(ta, tb), {.rtol = 1e-4, .atol_of_max = 1e-5}); });
    set_gflops(cx, e, 2.0 * double(n) * double(n) * double(n));
  });
}

void bench_conv2d(Ctx& cx) {
  const std::string name = "conv2d_f32_16x64x56x56_k3";
  guarded(cx, name, [&] {
    const int64_t N = 16, C = 64, H = 56, W = 56, K = 64;
    DynTensor x = DynTensor::normal({N, C, H, W});
    DynTensor w = DynTensor::normal({K, C, 3, 3}, 0, 1.0 / 24);  // ~ Kaiming scale: outputs O(1)
    DynTensor b = DynTensor::normal({K});
    at::Tensor tx = to_torch(x), tw = to_torch(w), tb = to_torch(b);
    const ember::ConvOptions opt{.padding = {1}};
    auto& e = cx.compare(
        name, [&] { bench::keep(ember::conv2d(x, w, b, opt)); },
        [&] { bench::keep(at::conv2d(tx, tw, tb, 1, 1)); },
        [&] {
          return check_close(ember::conv2d(x, w, b, opt), at::conv2d(tx, tw, tb, 1, 1),
                             {.rtol = 1e-4, .atol_of_max = 1e-5});
        });
    set_gflops(cx, e, 2.0 * double(N * K * H * W) * double(C * 9));
  });
}

// Elementwise / memory-bound benchmarks on one or two 16M-element inputs.
void bench_unary(Ctx& cx, const std::string& name, const std::vector<int64_t>& shape,
                 DynTensor (*ember_op)(DynTensor), at::Tensor (*peer_op)(const at::Tensor&), double bytes_per_elem,
                 bench::Tolerance tol) {
  guarded(cx, name, [&] {
    DynTensor x = DynTensor::normal(ember::Shape(shape));
    at::Tensor tx = to_torch(x);
    auto& e = cx.compare(
        name, [&] { bench::keep(ember_op(x)); }, [&] { bench::keep(peer_op(tx)); },
        [&] { return check_close(ember_op(x), peer_op(tx), tol); });
    set_gbps(e, bytes_per_elem * double(x.numel()));
  });
}

void bench_add(Ctx& cx) {
  const std::string name = "add_f32_16M";
  guarded(cx, name, [&] {
    const int64_t n = int64_t(1) << 24;
    DynTensor a = DynTensor::normal({n}), b = DynTensor::normal({n});
    at::Tensor ta = to_torch(a), tb = to_torch(b);
    auto& e = cx.compare(
        name, [&] { bench::keep(ember::add(a, b)); }, [&] { bench::keep(at::add(ta, tb)); },
        [&] { return check_close(ember::add(a, b), at::add(ta, tb), {.rtol = 1e-6}); });
    set_gbps(e, 12.0 * double(n));
  });
}

void bench_sum(Ctx& cx) {
  const std::string name = "sum_f32_4096x4096";
  guarded(cx, name, [&] {
    DynTensor x = DynTensor::normal({4096, 4096});
    at::Tensor tx = to_torch(x);
    // Summation order differs between libraries: allow a rounding error relative to sum |x|.
    const double abs_sum = at::abs(tx).sum(at::kDouble).item<double>();
    auto& e = cx.compare(
        name, [&] { bench::keep(ember::sum(x)); }, [&] { bench::keep(at::sum(tx)); },
        [&] { return check_close(ember::sum(x), at::sum(tx), {.rtol = 1e-5, .atol = 1e-6 * abs_sum}); });
    set_gbps(e, 4.0 * double(x.numel()));
  });
}

void bench_softmax(Ctx& cx) {
  const std::string name = "softmax_f32_4096x4096";
  guarded(cx, name, [&] {
    DynTensor x = DynTensor::normal({4096, 4096});
    at::Tensor tx = to_torch(x);
    auto& e = cx.compare(
        name, [&] { bench::keep(ember::softmax(x, -1)); }, [&] { bench::keep(at::softmax(tx, -1)); },
        [&] { return check_close(ember::softmax(x, -1), at::softmax(tx, -1), {.rtol = 1e-4, .atol = 1e-8}); });
    set_gbps(e, 8.0 * double(x.numel()));
  });
}

void bench_layer_norm(Ctx& cx) {
  const std::string name = "layernorm_f32_4096x1024";
  guarded(cx, name, [&] {
    DynTensor x = DynTensor::normal({4096, 1024}, 1.0, 2.0);
    DynTensor w = DynTensor::normal({1024}), b = DynTensor::normal({1024});
    at::Tensor tx = to_torch(x), tw = to_torch(w), tb = to_torch(b);
    auto& e = cx.compare(
        name, [&] { bench::keep(ember::layer_norm(x, {1024}, w, b)); },
        [&] { bench::keep(at::layer_norm(tx, {1024}, tw, tb)); },
        [&] {
          return check_close(ember::layer_norm(x, {1024}, w, b), at::layer_norm(tx, {1024}, tw, tb),
                             {.rtol = 1e-4, .atol = 1e-5});
        });
    set_gbps(e, 8.0 * double(x.numel()));
  });
}

// ResNet's stem pool (3x3, stride 2, padding 1) over [batch, 64, 112, 112]: max_pool2d (the
// values alone, as at::max_pool2d) and, with `indices`, max_pool2d_with_indices against
// at::max_pool2d_with_indices (what training pays for its backward).
void bench_max_pool(Ctx& cx, int64_t batch, bool indices) {
  const std::string name =
      std::string("maxpool2d_") + (indices ? "indices_" : "") + "f32_" + std::to_string(batch) + "x64x112x112";
  guarded(cx, name, [&] {
    DynTensor x = DynTensor::normal({batch, 64, 112, 112});
    at::Tensor tx = to_torch(x);
    const ember::PoolOptions opt{.kernel_size = {3}, .stride = {2}, .padding = {1}};
    auto values = [&] { return indices ? ember::max_pool2d_with_indices(x, opt).first : ember::max_pool2d(x, opt); };
    auto peer = [&] {
      return indices ? std::get<0>(at::max_pool2d_with_indices(tx, {3, 3}, {2, 2}, {1, 1}))
                     : at::max_pool2d(tx, {3, 3}, {2, 2}, {1, 1});
    };
    auto& e = cx.compare(
        name, [&] { bench::keep(values()); }, [&] { bench::keep(peer()); },
        [&] { return check_close(values(), peer(), {}); });
    // read x, write a quarter of it (and as many i64 indices)
    set_gbps(e, 4.0 * double(x.numel()) * (1.0 + 0.25 * (indices ? 3 : 1)));
  });
}

void bench_overhead(Ctx& cx) {
  const std::string name = "overhead_add_1";
  guarded(cx, name, [&] {
    DynTensor a = DynTensor::from_vector<float>({1.5f}, {1}), b = DynTensor::from_vector<float>({2.25f}, {1});
    at::Tensor ta = to_torch(a), tb = to_torch(b);
    auto& e = cx.compare(
        name, [&] { g_sink = g_sink + ember::add(a, b).item(); },
        [&] { g_sink = g_sink + (ta + tb).item<float>(); },
        [&] {
          const float got = float(ember::add(a, b).item()), ref = (ta + tb).item<float>();
          return bench::compare_values(&got, &ref, 1, {});
        });
    if (e.ember_ms) e.set("us", *e.ember_ms * 1000.0);
    if (e.peer_ms) e.set("us_peer", *e.peer_ms * 1000.0);
  });
}

// ------------------------------------------------------------------ autodiff

// The peer's tensors for autograd benchmarks must be made outside InferenceMode.
struct PeerAutograd {
  c10::InferenceMode off{false};
  at::AutoGradMode grad{true};
};

void bench_autodiff_overhead(Ctx& cx) {
  const std::string name = "autodiff_overhead_add_1";
  guarded(cx, name, [&] {
    PeerAutograd mode;
    ember::Device dev = ember::Device::cpu().autodiff();
    DynTensor a = DynTensor::from_vector<float>({1.5f}, {1}, dev).require_grad();
    DynTensor b = DynTensor::from_vector<float>({2.25f}, {1}, dev);
    at::Tensor ta = to_torch(a).set_requires_grad(true), tb = to_torch(b);
    // One tracked op: record a graph node (and drop it); no backward, no read-back.
    auto& e = cx.compare(
        name, [&] { bench::keep(ember::add(a, b)); }, [&] { bench::keep(ta + tb); },
        [&] {
          auto g = ember::add(a, b);
          bench::Check c;
          c.ok = g.is_require_grad() && (ta + tb).requires_grad();
          if (!c.ok) c.detail = "result not tracked";
          return c;
        });
    if (e.ember_ms) e.set("us", *e.ember_ms * 1000.0);
    if (e.peer_ms) e.set("us_peer", *e.peer_ms * 1000.0);
  });
}

// 784-1024-1024-10 MLP, batch 128: forward, cross-entropy, backward and an SGD update.
void bench_mlp_train_step(Ctx& cx) {
  const std::string name = "mlp_train_step_f32";
  guarded(cx, name, [&] {
    PeerAutograd mode;
    ember::Device dev = ember::Device::cpu().autodiff();
    const std::vector<int64_t> sizes{784, 1024, 1024, 10};
    const double lr = 1e-3;
    std::vector<DynTensor> w, b;
    std::vector<at::Tensor> tw, tb;
    for (size_t i = 0; i + 1 < sizes.size(); ++i) {
      DynTensor wi = DynTensor::normal({sizes[i], sizes[i + 1]}, 0, 1.0 / std::sqrt(double(sizes[i])));
      DynTensor bi = DynTensor::zeros({sizes[i + 1]});
      tw.push_back(to_torch(wi).set_requires_grad(true));
      tb.push_back(to_torch(bi).set_requires_grad(true));
      w.push_back(wi.to(dev).require_grad());
      b.push_back(bi.to(dev).require_grad());
    }
    DynTensor x = DynTensor::normal({128, 784}).to(dev);
    DynTensor y = DynTensor::randint({128}, 0, 10).to(dev);
    at::Tensor tx = to_torch(x);
    at::Tensor ty = at::from_blob(y.to_vector<int64_t>().data(), {128}, at::kLong).clone();

    auto ember_loss = [&] {
      DynTensor h = x;
      for (size_t i = 0; i < w.size(); ++i) {
        h = ember::matmul(std::move(h), w[i]) + b[i];
        if (i + 1 < w.size()) h = ember::relu(std::move(h));
      }
      DynTensor lp = ember::log_softmax(std::move(h), 1);
      return -ember::mean(ember::gather(std::move(lp), 1, ember::unsqueeze(y, 1)));
    };
    auto ember_step = [&] {
      ember::Gradients g = ember_loss().backward();
      ember::NoGradGuard off;
      for (size_t i = 0; i < w.size(); ++i) {
        w[i] = (w[i].detach() - *w[i].grad(g) * lr).require_grad();
        b[i] = (b[i].detach() - *b[i].grad(g) * lr).require_grad();
      }
    };
    auto peer_loss = [&] {
      at::Tensor h = tx;
      for (size_t i = 0; i < tw.size(); ++i) {
        h = at::matmul(h, tw[i]) + tb[i];
        if (i + 1 < tw.size()) h = at::relu(h);
      }
      return at::nll_loss(at::log_softmax(h, 1), ty);
    };
    auto peer_step = [&] {
      for (auto& t : tw) t.mutable_grad() = at::Tensor();
      for (auto& t : tb) t.mutable_grad() = at::Tensor();
      peer_loss().backward();
      at::NoGradGuard off;
      for (size_t i = 0; i < tw.size(); ++i) {
        tw[i].sub_(tw[i].grad(), lr);
        tb[i].sub_(tb[i].grad(), lr);
      }
    };
    auto& e = cx.compare(name, ember_step, peer_step, [&] {
      // Same weights on both sides at this point: losses and first-layer gradients agree.
      DynTensor l = ember_loss();
      ember::Gradients g = l.backward();
      for (auto& t : tw) t.mutable_grad() = at::Tensor();
      at::Tensor tl = peer_loss();
      tl.backward();
      bench::Check c = check_close(l.detach(), tl.detach(), {.rtol = 1e-4});
      if (c.ok) c = check_close(*w[0].grad(g), tw[0].grad(), {.rtol = 1e-3, .atol_of_max = 1e-4});
      return c;
    });
    e.set("samples_per_s", e.ember_ms ? 128.0 / (*e.ember_ms * 1e-3) : NAN);
  });
}

// Peak memory of one training step of a 24-layer MLP (GELU, width 256, batch 2048), without and with
// balanced checkpointing. "peer" here is ember itself with checkpointing none.
void bench_mlp24_peak_mem(Ctx& cx) {
  const std::string name = "mlp24_peak_mem";
  if (!cx.run.selected(name)) return;
  try {
    auto step = [](ember::Checkpointing c, int64_t* peak) {
      ember::Device dev = ember::Device::cpu().autodiff(c);
      dev.seed(11);
      std::vector<DynTensor> w, b;
      for (int i = 0; i < 24; ++i) {
        w.push_back((DynTensor::normal({256, 256}, 0, 1, ember::DType::f32, dev) * (1.0 / 16.0)).require_grad());
        b.push_back(DynTensor::zeros({256}, ember::DType::f32, dev).require_grad());
      }
      DynTensor x = DynTensor::normal({2048, 256}, 0, 1, ember::DType::f32, dev);
      dev.memory_cleanup();
      dev.backend().reset_peak_memory();
      const int64_t base = dev.memory_stats().in_use;
      const double t0 = bench::now_ms();
      {
        DynTensor h = x;
        for (int i = 0; i < 24; ++i) h = ember::gelu(ember::matmul(std::move(h), w[i]) + b[i]);
        ember::Gradients g = ember::mean(ember::square(std::move(h))).backward();
        bench::keep(g);
      }
      const double ms = bench::now_ms() - t0;
      *peak = dev.memory_stats().peak - base;
      return ms;
    };
    int64_t peak_none = 0, peak_bal = 0;
    std::vector<double> t_none, t_bal;
    for (int r = 0; r < 5; ++r) {
      t_none.push_back(step(ember::Checkpointing::none, &peak_none));
      t_bal.push_back(step(ember::Checkpointing::balanced, &peak_bal));
    }
    bench::Entry e;
    e.name = name;
    e.peer = "ember (checkpointing none)";
    e.ember_ms = bench::median(t_bal);
    e.peer_ms = bench::median(t_none);
    e.set("peak_bytes_none", double(peak_none));
    e.set("peak_bytes_balanced", double(peak_bal));
    e.set("peak_ratio", double(peak_bal) / double(peak_none));
    e.set("note", "ember_ms: balanced step time; peer_ms: checkpointing-none step time; peaks exclude parameters and input");
    cx.run.add(std::move(e));
  } catch (const std::exception& ex) {
    cx.run.fail(name, "ember (checkpointing none)", ex.what());
  }
}

// Copies an ember module's parameters into a torch::nn module with the same state_dict keys.
void copy_params(const ember::nn::NamedTensors& from, torch::nn::Module& to) {
  torch::NoGradGuard off;
  auto params = to.named_parameters();
  for (const auto& [k, t] : from) {
    auto* p = params.find(k);
    if (!p) throw std::runtime_error("peer module has no parameter " + k);
    p->copy_(to_torch(t.detach()).view(p->sizes()));
  }
}

// Forward + backward of one module on both sides; `upstream` is the output gradient.
constexpr bench::Tolerance kLayerGradTol{.rtol = 1e-3, .atol_of_max = 1e-3};  // its gradient check
bench::Entry& bench_layer_train(Ctx& cx, const std::string& name, const std::function<DynTensor()>& ember_fwd,
                       const std::function<at::Tensor()>& peer_fwd, const DynTensor& upstream,
                       const std::function<DynTensor(const ember::Gradients&)>& ember_grad0,
                       const std::function<at::Tensor()>& peer_grad0, torch::nn::Module& peer) {
  at::Tensor tup = to_torch(upstream);
  auto& e = cx.compare(
      name, [&] { bench::keep(ember::sum(ember_fwd() * upstream).backward()); },
      [&] {
        peer.zero_grad();
        peer_fwd().backward(tup);
      },
      [&] {
        DynTensor y = ember_fwd();
        ember::Gradients g = ember::sum(y * upstream).backward();
        peer.zero_grad();
        at::Tensor ty = peer_fwd();
        ty.backward(tup);
        bench::Check c = check_close(y.detach(), ty.detach(), {.rtol = 1e-3, .atol_of_max = 1e-4});
        if (c.ok) {
          DynTensor eg = ember_grad0(g);  // in this order: the transformer's peer side reads ember's
          c = check_close(eg, peer_grad0(), kLayerGradTol);
        }
        return c;
      });
  return e;
}

// The Fashion-MNIST demo's CNN (examples/fashion_mnist): conv(1->32, 3x3, pad 1) relu maxpool2 |
// conv(32->64, 3x3, pad 1) relu maxpool2 | flatten | linear(3136->128) relu | dropout(0.25) |
// linear(128->10), cross-entropy, Adam lr 1e-3, batch 64 of 28x28 images. One training step
// (forward, backward, optimizer update) per call on both sides, dropout active (each side draws
// its own masks; the demo's input normalisation is left out). The check copies ember's weights
// into the peer and compares the loss and the first conv's weight gradient with dropout off, so
// that both compute the same function.
struct FashionCnn {
  ember::nn::Conv2d conv1, conv2;
  ember::nn::Linear fc1, fc2;
  ember::nn::MaxPool2d pool{.kernel_size = {2}};
  ember::nn::Dropout drop{0.25};
  EMBER_MODULE(conv1, conv2, fc1, fc2, drop)

  DynTensor forward(const DynTensor& x) const {
    DynTensor h = pool.forward(ember::relu(conv1.forward(x)));
    h = pool.forward(ember::relu(conv2.forward(std::move(h))));
    h = ember::relu(fc1.forward(ember::flatten(std::move(h), 1)));
    return fc2.forward(drop.forward(std::move(h)));
  }
};

struct PeerFashionCnn : torch::nn::Module {
  torch::nn::Conv2d conv1{nullptr}, conv2{nullptr};
  torch::nn::Linear fc1{nullptr}, fc2{nullptr};
  torch::nn::Dropout drop{nullptr};
  PeerFashionCnn() {
    conv1 = register_module("conv1", torch::nn::Conv2d(torch::nn::Conv2dOptions(1, 32, 3).padding(1)));
    conv2 = register_module("conv2", torch::nn::Conv2d(torch::nn::Conv2dOptions(32, 64, 3).padding(1)));
    fc1 = register_module("fc1", torch::nn::Linear(3136, 128));
    fc2 = register_module("fc2", torch::nn::Linear(128, 10));
    drop = register_module("drop", torch::nn::Dropout(0.25));
  }
  at::Tensor forward(const at::Tensor& x) {
    at::Tensor h = at::max_pool2d(at::relu(conv1->forward(x)), {2, 2});
    h = at::max_pool2d(at::relu(conv2->forward(h)), {2, 2});
    h = at::relu(fc1->forward(h.flatten(1)));
    return fc2->forward(drop->forward(h));
  }
};

void bench_fashion_cnn_train(Ctx& cx) {
  const std::string name = "fashion_cnn_train_samples_per_s";
  guarded(cx, name, [&] {
    PeerAutograd mode;
    const int64_t batch = 64;
    const double lr = 1e-3;
    ember::Device dev = ember::Device::cpu().autodiff();
    using ember::nn::Conv2dConfig, ember::nn::LinearConfig;
    FashionCnn model{Conv2dConfig{.in_channels = 1, .out_channels = 32, .kernel_size = {3}, .padding = {1}}.init(dev),
                     Conv2dConfig{.in_channels = 32, .out_channels = 64, .kernel_size = {3}, .padding = {1}}.init(dev),
                     LinearConfig{.in_features = 3136, .out_features = 128}.init(dev),
                     LinearConfig{.in_features = 128, .out_features = 10}.init(dev)};
    auto peer = std::make_shared<PeerFashionCnn>();
    copy_params(ember::nn::named_parameters(model), *peer);
    ember::optim::Adam opt = ember::optim::AdamConfig{}.init();
    torch::optim::Adam peer_opt(peer->parameters(), torch::optim::AdamOptions(lr));

    DynTensor x = DynTensor::uniform({batch, 1, 28, 28}).to(dev);  // pixel intensities in [0, 1)
    DynTensor y = DynTensor::randint({batch}, 0, 10).to(dev);
    at::Tensor tx = to_torch(x);
    at::Tensor ty = at::from_blob(y.to_vector<int64_t>().data(), {batch}, at::kLong).clone();

    auto ember_loss = [&] { return ember::nn::cross_entropy(model.forward(x), y); };
    auto peer_loss = [&] { return torch::nn::functional::cross_entropy(peer->forward(tx), ty); };
    auto ember_step = [&] {
      ember::Gradients g = ember_loss().backward();
      model = opt.step(std::move(model), g, lr);
    };
    auto peer_step = [&] {
      peer_opt.zero_grad();
      peer_loss().backward();
      peer_opt.step();
    };
    auto& e = cx.compare(name, ember_step, peer_step, [&] {
      // Same weights, dropout off: the losses and conv1's weight gradients agree.
      ember::nn::set_training(model, false);
      peer->eval();
      copy_params(ember::nn::named_parameters(model), *peer);
      DynTensor l = ember_loss();
      ember::Gradients g = l.backward();
      peer_opt.zero_grad();
      at::Tensor tl = peer_loss();
      tl.backward();
      ember::nn::set_training(model, true);
      peer->train();
      bench::Check c = check_close(l.detach(), tl.detach(), {.rtol = 1e-4});
      if (c.ok)
        c = check_close(*model.conv1.weight.grad(g), peer->conv1->weight.grad(), {.rtol = 1e-3, .atol_of_max = 1e-4});
      return c;
    });
    if (e.ember_ms) e.set("samples_per_s", double(batch) / (*e.ember_ms * 1e-3));
    if (e.peer_ms) e.set("samples_per_s_peer", double(batch) / (*e.peer_ms * 1e-3));
    e.set("note", "one Adam training step of the Fashion-MNIST demo CNN, batch 64, dropout 0.25 active on both sides");
  });
}

// The weight gradient of the Linear before a ReLU is dW[j, :] = sum_t relu'(h[t, j]) g[t, j] a[t, :]
// (t the tokens, j the hidden units, h the pre-activation, g the gradient at ReLU's output, a
// the Linear's input). Where some h[t, j] lies within rounding of 0, two correct implementations
// can put it on different sides of the kink: relu' is 1 on one and 0 on the other, and row j
// differs by the whole vector g[t, j] a[t, :] (issue 25). This returns the peer's dW with such
// flips applied where ember's gradient asks for them: for each row that is out of tolerance as it
// stands, the subset of its near-zero tokens (|h| <= band; the 10 nearest 0) whose flips leave
// the fewest elements out (then the fewest flips). Only a near-zero pre-activation may flip, and
// a flip moves a whole row by that fixed vector, so a wrong gradient (an element off, a row lost,
// a token's contribution dropped) is not explained away and still mismatches.
struct ReluFlipFit {
  at::Tensor ref;  // the peer's gradient with the flips applied
  int64_t flips = 0, rows = 0, near_zero = 0;
};

ReluFlipFit fit_relu_flips(const DynTensor& got, const at::Tensor& peer_grad, const at::Tensor& h, const at::Tensor& g,
                           const at::Tensor& a, double band, bench::Tolerance tol) {
  const int64_t T = h.size(0), J = h.size(1), K = a.size(1);
  ReluFlipFit fit;
  fit.ref = peer_grad.to(at::kFloat).contiguous().clone();
  const std::vector<float> e = got.to_vector<float>();
  if (fit.ref.sizes() != at::IntArrayRef{J, K} || int64_t(e.size()) != J * K) return fit;  // check_close says so
  float* r = fit.ref.data_ptr<float>();
  const at::Tensor hc = h.to(at::kFloat).contiguous(), gc = g.to(at::kFloat).contiguous(),
                   ac = a.to(at::kFloat).contiguous();
  const float *hp = hc.data_ptr<float>(), *gp = gc.data_ptr<float>(), *ap = ac.data_ptr<float>();
  const double atol = tol.atol + tol.atol_of_max * fit.ref.abs().max().item<double>();
  std::vector<std::vector<int64_t>> near(size_t(J), std::vector<int64_t>{});
  for (int64_t t = 0; t < T; ++t)
    for (int64_t j = 0; j < J; ++j)
      if (std::fabs(hp[t * J + j]) <= band) {
        near[size_t(j)].push_back(t);
        ++fit.near_zero;
      }
  std::vector<double> row(size_t(K), 0.0);
  auto out_of_tol = [&](const float* ej) {
    int64_t n = 0;
    for (int64_t k = 0; k < K; ++k)
      n += std::fabs(double(ej[k]) - row[size_t(k)]) > atol + tol.rtol * std::fabs(row[size_t(k)]);
    return n;
  };
  for (int64_t j = 0; j < J; ++j) {
    std::vector<int64_t>& ts = near[size_t(j)];
    if (ts.empty()) continue;
    const float* ej = e.data() + j * K;
    float* rj = r + j * K;
    for (int64_t k = 0; k < K; ++k) row[size_t(k)] = rj[k];
    const int64_t bad0 = out_of_tol(ej);
    if (bad0 == 0) continue;
    std::sort(ts.begin(), ts.end(),
              [&](int64_t u, int64_t v) { return std::fabs(hp[u * J + j]) < std::fabs(hp[v * J + j]); });
    if (ts.size() > 10) ts.resize(10);
    const int n = int(ts.size());
    std::vector<std::vector<double>> d(size_t(n), std::vector<double>(size_t(K), 0.0));
    for (int i = 0; i < n; ++i) {  // the peer's relu' at h > 0 is 1: a flip takes g a out, else puts it in
      const int64_t t = ts[size_t(i)];
      const double s = (hp[t * J + j] > 0 ? -1.0 : 1.0) * double(gp[t * J + j]);
      for (int64_t k = 0; k < K; ++k) d[size_t(i)][size_t(k)] = s * double(ap[t * K + k]);
    }
    unsigned best = 0;
    int64_t best_bad = bad0;
    for (unsigned m = 1; m < (1u << n); ++m) {
      for (int64_t k = 0; k < K; ++k) row[size_t(k)] = rj[k];
      for (int i = 0; i < n; ++i)
        if (m >> i & 1u)
          for (int64_t k = 0; k < K; ++k) row[size_t(k)] += d[size_t(i)][size_t(k)];
      const int64_t bad = out_of_tol(ej);
      if (bad < best_bad || (bad == best_bad && std::popcount(m) < std::popcount(best))) best = m, best_bad = bad;
    }
    if (best == 0) continue;
    for (int64_t k = 0; k < K; ++k) {
      double v = rj[k];
      for (int i = 0; i < n; ++i)
        if (best >> i & 1u) v += d[size_t(i)][size_t(k)];
      rj[k] = float(v);
    }
    fit.flips += std::popcount(best);
    ++fit.rows;
  }
  return fit;
}

// TransformerEncoderLayer d=256, 4 heads, feed-forward 1024, seq 128, batch 16 (batch first,
// dropout 0): forward + backward to every parameter.
void bench_transformer_layer(Ctx& cx) {
  const std::string name = "transformer_encoder_layer_f32";
  guarded(cx, name, [&] {
    PeerAutograd mode;
    ember::Device dev = ember::Device::cpu().autodiff();
    auto layer = ember::nn::TransformerEncoderLayerConfig{
        .d_model = 256, .nhead = 4, .dim_feedforward = 1024, .dropout = 0.0, .batch_first = true}
                     .init(dev);
    torch::nn::TransformerEncoderLayer peer(
        torch::nn::TransformerEncoderLayerOptions(256, 4).dim_feedforward(1024).dropout(0.0));
    copy_params(ember::nn::named_parameters(layer), *peer);
    DynTensor x = DynTensor::normal({16, 128, 256}).to(dev);
    DynTensor up = DynTensor::normal({16, 128, 256}).to(dev);
    at::Tensor tx = to_torch(x).transpose(0, 1).contiguous();  // libtorch's layer is sequence first
    // The check compares linear1's weight gradient, whose rows can differ by ReLU-kink flips
    // (fit_relu_flips; a Zen 5 run printed `mismatch` for them). The peer's h, g and a come from
    // its own layer, recomposed (norm1(x + attn(x)), linear1, relu, linear2, norm2: its forward
    // with dropout 0), with g = dL/d relu(h) by autograd::grad, which leaves .grad alone.
    const at::Tensor tup = to_torch(up).transpose(0, 1);
    DynTensor eg;
    ReluFlipFit fit;
    auto& e = bench_layer_train(
        cx, name, [&] { return layer.forward(x); }, [&] { return peer->forward(tx).transpose(0, 1); }, up,
        [&](const ember::Gradients& g) { return eg = *layer.linear1.weight.grad(g); },
        [&] {
          const at::Tensor pg = peer->named_parameters()["linear1.weight"].grad().clone();
          const at::Tensor a = peer->norm1(tx + std::get<0>(peer->self_attn(tx, tx, tx)));
          const at::Tensor h = peer->linear1(a);
          const at::Tensor r = at::relu(h);
          const at::Tensor y = peer->norm2(a + peer->linear2(r));
          const at::Tensor gr = torch::autograd::grad({y}, {r}, {tup})[0];
          const at::Tensor hf = h.detach().reshape({-1, 1024});
          // |h| within 3e-5 max|h| (about 1e-4 here) counts as near 0: h differs between the sides,
          // and from a float64 computation, by at most ~3e-6 here.
          fit = fit_relu_flips(eg, pg, hf, gr.reshape({-1, 1024}), a.detach().reshape({-1, 256}),
                               3e-5 * hf.abs().max().item<double>(), kLayerGradTol);
          return fit.ref;
        },
        *peer);
    if (fit.ref.defined()) {  // the check ran
      e.set("relu_flips", double(fit.flips));
      e.set("relu_flip_rows", double(fit.rows));
      e.set("relu_near_zero", double(fit.near_zero));
    }
  });
}

// LSTM input 128, hidden 256, seq 64, batch 32 (batch first): forward + backward.
void bench_lstm(Ctx& cx) {
  const std::string name = "lstm_f32";
  guarded(cx, name, [&] {
    PeerAutograd mode;
    ember::Device dev = ember::Device::cpu().autodiff();
    auto lstm = ember::nn::LstmConfig{.input_size = 128, .hidden_size = 256, .batch_first = true}.init(dev);
    torch::nn::LSTM peer(torch::nn::LSTMOptions(128, 256).batch_first(true));
    copy_params(ember::nn::named_parameters(lstm), *peer);
    DynTensor x = DynTensor::normal({32, 64, 128}).to(dev);
    DynTensor up = DynTensor::normal({32, 64, 256}).to(dev);
    at::Tensor tx = to_torch(x);
    bench_layer_train(
        cx, name, [&] { return lstm.forward(x).output; }, [&] { return std::get<0>(peer->forward(tx)); }, up,
        [&](const ember::Gradients& g) { return *lstm.cells[0].weight_ih.grad(g); },
        [&] { return peer->named_parameters()["weight_ih_l0"].grad(); }, *peer);
  });
}

// Loading 100 MB of f32 weights (25 tensors of 1000x1000): ember from safetensors, LibTorch
// from its own serialisation of the same tensors (torch::save / torch::load).
void bench_load_safetensors(Ctx& cx) {
  const std::string name = "load_safetensors_100MB";
  guarded(cx, name, [&] {
    namespace fs = std::filesystem;
    const fs::path dir = fs::temp_directory_path() / ("ember-bench-" + std::to_string(::getpid()));
    fs::create_directories(dir);
    struct Cleanup {
      fs::path d;
      ~Cleanup() { std::error_code ec; fs::remove_all(d, ec); }
    } cleanup{dir};
    ember::nn::NamedTensors tensors;
    std::vector<at::Tensor> peer_tensors;
    for (int i = 0; i < 25; ++i) {
      DynTensor t = DynTensor::normal({1000, 1000});
      tensors.emplace_back("layer" + std::to_string(i) + ".weight", t);
      peer_tensors.push_back(to_torch(t));
    }
    const std::string st = (dir / "w.safetensors").string(), pt = (dir / "w.pt").string();
    ember::nn::write_tensors(st, tensors);
    torch::save(peer_tensors, pt);
    double sink = 0;
    auto& e = cx.compare(
        name,
        [&] {
          auto m = ember::nn::read_tensors(st);
          bench::keep(m);
        },
        [&] {
          std::vector<at::Tensor> v;
          torch::load(v, pt);
          bench::keep(v);
        },
        [&] {
          auto m = ember::nn::read_tensors(st);
          std::vector<at::Tensor> v;
          torch::load(v, pt);
          // Every tensor, each looked up by name (safetensors files list tensors by name, not in
          // the order written), against the peer's tensor of the same index.
          bench::Check c;
          if (m.size() != tensors.size() || v.size() != tensors.size())
            c.detail = std::to_string(m.size()) + " tensors read (peer " + std::to_string(v.size()) + "), wrote " +
                       std::to_string(tensors.size());
          for (size_t i = 0; i < tensors.size() && c.detail.empty(); ++i) {
            const std::string& key = tensors[i].first;
            auto it = std::find_if(m.begin(), m.end(), [&](const auto& kv) { return kv.first == key; });
            bench::Check one;
            if (it == m.end()) one.detail = key + " missing";
            else one = check_close(it->second, v[i], {});
            if (!one.ok) {
              one.detail = key + ": " + one.detail;
              c = one;
              break;
            }
            c.ok = true;
            c.max_abs_diff = std::max(c.max_abs_diff, one.max_abs_diff);
          }
          sink += double(m.size());
          return c;
        });
    set_gbps(e, 100e6);
    (void)sink;
  });
}

// ------------------------------------------------------------------ ONNX models

// FLOP of one 3x224x224 image: 2 * the multiply-adds of the convs and the final Gemm.
constexpr double kResnet18Flop = 3.628146688e9, kMobilenetV2Flop = 6.01548544e8;

// Where bench/export_resnet18.py writes the models (bench.sh runs it first).
std::filesystem::path bench_models_dir() {
  const char* dir = std::getenv("EMBER_BENCH_MODELS");
  return dir && *dir ? dir : "build/bench-models";
}

// ResNet-18 inference on a batch of 3x224x224 images: ember runs the ONNX file
// (onnx::Model::run), LibTorch the same model traced to TorchScript (torch::jit::load), same
// weights (BatchNorm folded into the convs in both files).
void bench_onnx_resnet18(Ctx& cx, int64_t batch) {
  const std::string name = "onnx_resnet18_b" + std::to_string(batch);
  if (!cx.run.selected(name)) return;
  const std::filesystem::path dir = bench_models_dir();
  const std::filesystem::path onnx_file = dir / "resnet18.onnx", ts_file = dir / "resnet18.ts";
  if (!std::filesystem::exists(onnx_file) || !std::filesystem::exists(ts_file)) {
    std::cerr << "  " << name << ": skipped: " << onnx_file.string() << " or " << ts_file.string()
              << " missing (/usr/bin/python3 bench/export_resnet18.py writes them; needs python3-torch and "
                 "python3-torchvision)\n";
    return;
  }
  guarded(cx, name, [&] {
    const ember::onnx::Model model = ember::onnx::Model::load(onnx_file.string(), ember::Device::cpu());
    torch::jit::Module peer = torch::jit::load(ts_file.string());
    peer.eval();
    DynTensor x = DynTensor::normal({batch, 3, 224, 224});
    const std::vector<torch::jit::IValue> args{to_torch(x)};
    auto ember_run = [&] { return model.run({{"input", x}}).at("output"); };
    auto peer_run = [&] { return peer.forward(args).toTensor(); };
    auto& e = cx.compare(
        name, [&] { bench::keep(ember_run()); }, [&] { bench::keep(peer_run()); },
        // Same function: the logits agree to 1e-4 of their largest magnitude.
        [&] { return check_close(ember_run(), peer_run(), {.atol_of_max = 1e-4}); });
    set_gflops(cx, e, kResnet18Flop * double(batch));
    if (e.ember_ms) e.set("images_per_s", double(batch) / (*e.ember_ms * 1e-3));
    if (e.peer_ms) e.set("images_per_s_peer", double(batch) / (*e.peer_ms * 1e-3));
  });
}

// ---- ember against ONNX Runtime (onnx_*_vs_ort) ----
//
// ONNX Runtime's CPU build comes from npm (onnxruntime-node, which bench.sh installs into
// build/ort) and runs under Node in a child process, bench/ort_peer.js, on the same .onnx file,
// input and thread count. The child times its own samples of session.run when asked, so the
// harness interleaves them with ember's samples as it does for LibTorch; the row's peer_ms is
// the median of the child's clock (the harness's clock of that side also counts the pipe and the
// child's wait for ONNX Runtime's spinning threads, which it does outside its samples).

const std::string kOrtPeerScript = "bench/ort_peer.js";  // relative to the repository root, like build/

// The npm prefix that holds node_modules/onnxruntime-node.
std::filesystem::path ort_dir() {
  const char* dir = std::getenv("EMBER_BENCH_ORT");
  return dir && *dir ? dir : "build/ort";
}

// The value of `"key": ...` in a one-line JSON object (a number, a word or an array, as text),
// or "" when the key is absent. Enough for bench/ort_peer.js's replies and a package.json.
std::string json_field(const std::string& json, const std::string& key) {
  size_t p = json.find('"' + key + '"');
  if (p == std::string::npos) return "";
  p = json.find(':', p);
  if (p == std::string::npos) return "";
  p = json.find_first_not_of(" \t\n", p + 1);
  if (p == std::string::npos) return "";
  if (json[p] == '"') return json.substr(p + 1, json.find('"', p + 1) - p - 1);
  const size_t end = json[p] == '[' ? json.find(']', p) + 1 : json.find_first_of(",}\n", p);
  return json.substr(p, end - p);
}

double json_number(const std::string& json, const std::string& key) {
  const std::string v = json_field(json, key);
  if (v.empty() || v == "null") throw std::runtime_error("bench/ort_peer.js: no \"" + key + "\" in " + json);
  return std::stod(v);
}

// The installed onnxruntime-node's version, from its package.json ("" when not installed).
std::string ort_version() {
  std::ifstream in(ort_dir() / "node_modules" / "onnxruntime-node" / "package.json");
  std::stringstream text;
  text << in.rdbuf();
  return in ? json_field(text.str(), "version") : "";
}

// A child process whose stdin and stdout are pipes to this one (its stderr is ours), talking in
// lines. Closing its stdin asks it to exit; the destructor does that and waits for it.
class ChildProcess {
 public:
  ChildProcess(const std::vector<std::string>& argv, const std::vector<std::string>& env) : program_(argv.at(1)) {
    std::signal(SIGPIPE, SIG_IGN);  // a child that died makes write() fail instead of killing us
    int in[2], out[2];
    if (pipe2(in, O_CLOEXEC) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
    if (pipe2(out, O_CLOEXEC) != 0) {
      close(in[0]), close(in[1]);
      throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, in[0], 0);
    posix_spawn_file_actions_adddup2(&actions, out[1], 1);
    auto c_strings = [](const std::vector<std::string>& v) {
      std::vector<char*> p;
      for (const auto& s : v) p.push_back(const_cast<char*>(s.c_str()));
      p.push_back(nullptr);
      return p;
    };
    std::vector<char*> args = c_strings(argv), envp = c_strings(env);
    const int err = posix_spawnp(&pid_, args[0], &actions, nullptr, args.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    close(in[0]), close(out[1]);
    to_child_ = in[1], from_child_ = out[0];
    if (err != 0) {
      close(to_child_), close(from_child_);
      throw std::runtime_error("cannot run " + argv[0] + ": " + std::strerror(err));
    }
  }
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ~ChildProcess() {
    close(to_child_);
    close(from_child_);
    int status = 0;
    if (pid_ > 0) waitpid(pid_, &status, 0);
  }

  // The next line the child writes (without the newline).
  std::string read_line() {
    for (;;) {
      const size_t nl = pending_.find('\n');
      if (nl != std::string::npos) {
        std::string line = pending_.substr(0, nl);
        pending_.erase(0, nl + 1);
        return line;
      }
      char buf[4096];
      const ssize_t n = read(from_child_, buf, sizeof buf);
      if (n > 0) {
        pending_.append(buf, size_t(n));
      } else if (n < 0 && errno == EINTR) {
        continue;
      } else {
        int status = 0;
        waitpid(pid_, &status, 0);
        pid_ = -1;
        throw std::runtime_error(program_ + " exited with status " +
                                 std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status)) +
                                 " (its message is above)");
      }
    }
  }

  // Writes `line` and a newline, returns the child's answer (one line).
  std::string request(const std::string& line) {
    const std::string text = line + "\n";
    for (size_t done = 0; done < text.size();) {
      const ssize_t n = write(to_child_, text.data() + done, text.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return read_line();  // the child is gone: read_line says how it ended
      done += size_t(n);
    }
    return read_line();
  }

 private:
  pid_t pid_ = -1;
  int to_child_ = -1, from_child_ = -1;
  std::string pending_;
  std::string program_;
};

// A fresh directory under the system's temporary directory, removed with everything in it.
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    path = std::filesystem::temp_directory_path() / ("ember_bench_ort_" + std::to_string(getpid()));
    std::filesystem::create_directories(path);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
};

bench::Check check_close(const DynTensor& got, const std::vector<int64_t>& ref_dims, const std::vector<float>& ref,
                         bench::Tolerance tol) {
  if (got.shape().dims() != ref_dims) {
    bench::Check c;
    c.detail = "shape " + got.shape().str() + " vs peer " + ember::Shape(ref_dims).str();
    return c;
  }
  const std::vector<float> g = got.to_vector<float>();
  return bench::compare_values(g.data(), ref.data(), static_cast<int64_t>(g.size()), tol);
}

// Inference of `model` (bench/export_resnet18.py --model MODEL) on a batch of 3x224x224 images:
// ember's onnx::Model::run in this process against ONNX Runtime in bench/ort_peer.js. The check
// compares ember's output with ONNX Runtime's for the same batch, and ember's output for the
// reference input with PyTorch's, saved at export (MODEL_ref.safetensors); both to 1e-4 of the
// largest logit.
void bench_onnx_vs_ort(Ctx& cx, const std::string& model_name, int64_t batch, double flop_per_image) {
  const std::string name = "onnx_" + model_name + "_b" + std::to_string(batch) + "_vs_ort";
  if (!cx.run.selected(name)) return;
  const std::filesystem::path dir = bench_models_dir();
  const std::filesystem::path onnx_file = dir / (model_name + ".onnx"),
                              ref_file = dir / (model_name + "_ref.safetensors");
  if (!std::filesystem::exists(onnx_file) || !std::filesystem::exists(ref_file)) {
    std::cerr << "  " << name << ": skipped: " << onnx_file.string() << " or " << ref_file.string()
              << " missing (/usr/bin/python3 bench/export_resnet18.py --model " << model_name
              << " writes them; needs python3-torch and python3-torchvision)\n";
    return;
  }
  const std::string version = ort_version();
  if (version.empty()) {
    std::cerr << "  " << name << ": skipped: onnxruntime-node is not installed in " << ort_dir().string()
              << " (bench.sh cpu installs it with npm; EMBER_BENCH_ORT names another npm prefix)\n";
    return;
  }
  if (!std::filesystem::exists(kOrtPeerScript)) {
    std::cerr << "  " << name << ": skipped: " << kOrtPeerScript << " not found (run from the repository root)\n";
    return;
  }
  const std::string peer = "onnxruntime " + version;
  guarded(
      cx, name,
      [&] {
        const ember::onnx::Model model = ember::onnx::Model::load(onnx_file.string(), ember::Device::cpu());
        DynTensor x = DynTensor::normal({batch, 3, 224, 224});
        const TempDir tmp;
        const std::filesystem::path input_file = tmp.path / "input.f32", output_file = tmp.path / "output.f32";
        {
          const std::vector<float> v = x.to_vector<float>();
          std::ofstream f(input_file, std::ios::binary);
          f.write(reinterpret_cast<const char*>(v.data()), std::streamsize(v.size() * sizeof(float)));
          if (!f) throw std::runtime_error("cannot write " + input_file.string());
        }
        std::vector<std::string> env;
        for (char** e = environ; *e; ++e)
          if (std::strncmp(*e, "NODE_PATH=", 10) != 0) env.emplace_back(*e);
        env.push_back("NODE_PATH=" + std::filesystem::absolute(ort_dir() / "node_modules").string());
        ChildProcess ort({"node", kOrtPeerScript, onnx_file.string(), input_file.string(),
                          std::to_string(batch) + ",3,224,224", std::to_string(cx.threads), output_file.string()},
                         env);
        // Session creation, warm-up and calibration happen before this line.
        const std::string ready = ort.read_line();
        if (json_field(ready, "ready") != "true") throw std::runtime_error("bench/ort_peer.js: " + ready);

        std::vector<int64_t> peer_dims;
        {
          std::stringstream dims(json_field(ready, "output_shape").substr(1));
          for (std::string d; std::getline(dims, d, ',');) peer_dims.push_back(std::stoll(d));
        }
        std::vector<float> peer_out;
        {
          std::ifstream f(output_file, std::ios::binary | std::ios::ate);
          peer_out.resize(size_t(f.tellg()) / sizeof(float));
          f.seekg(0);
          f.read(reinterpret_cast<char*>(peer_out.data()), std::streamsize(peer_out.size() * sizeof(float)));
          if (!f) throw std::runtime_error("cannot read " + output_file.string());
        }
        const ember::nn::NamedTensors ref = ember::nn::read_tensors(ref_file.string(), ember::Device::cpu());
        auto ref_tensor = [&](const std::string& key) {
          for (const auto& [k, t] : ref)
            if (k == key) return t;
          throw std::runtime_error(ref_file.string() + " has no tensor " + key);
        };
        const DynTensor ref_in = ref_tensor("input"), ref_out = ref_tensor("output");

        auto ember_run = [&](const DynTensor& input) { return model.run({{"input", input}}).at("output"); };
        double ref_max_abs_diff = NAN;
        auto check = [&] {
          const bench::Check c = check_close(ember_run(x), peer_dims, peer_out, {.atol_of_max = 1e-4});
          bench::Check r =
              check_close(ember_run(ref_in), ref_out.shape().dims(), ref_out.to_vector<float>(), {.atol_of_max = 1e-4});
          ref_max_abs_diff = r.max_abs_diff;
          if (c.ok && !r.ok)
            r.detail = "against PyTorch's output for " + ref_file.filename().string() + ": " + r.detail;
          return c.ok ? (r.ok ? c : r) : c;
        };
        auto& e = cx.compare(
            name, [&] { bench::keep(ember_run(x)); }, [&] { json_number(ort.request("sample"), "ms"); }, check, peer);

        if (e.peer_ms) {
          const std::string report =
              ort.request("report " + std::to_string(static_cast<int>(e.number("samples").value_or(1))));
          e.peer_ms = json_number(report, "median_ms");
          e.set("peer_min_ms", json_number(report, "min_ms"));
          std::cerr << "    " << peer << " by its own clock: " << bench::format_ms(*e.peer_ms) << " a run (median of "
                    << json_field(report, "samples") << " samples of " << json_field(ready, "reps")
                    << " runs; the time above also counts the pipe and the wait for its threads to settle)";
          if (auto ratio = e.ratio()) std::cerr << ", ratio " << bench::format_num(*ratio) << "x";
          std::cerr << "\n";
        }
        e.set("peer_reps", json_number(ready, "reps"));
        e.set("ref_max_abs_diff", ref_max_abs_diff);
        set_gflops(cx, e, flop_per_image * double(batch));
        if (e.ember_ms) e.set("images_per_s", double(batch) / (*e.ember_ms * 1e-3));
        if (e.peer_ms) e.set("images_per_s_peer", double(batch) / (*e.peer_ms * 1e-3));
      },
      peer);
}

// ---- int8 ResNet-18 (onnx_resnet18_int8_*) ----
//
// ember quantizes resnet18.onnx with onnx::quantize_static (QLinearConv, QLinearAdd, u8 MaxPool;
// the average pool and fc stay f32) on the calibration inputs bench/export_resnet18_int8.py wrote,
// and runs it against that script's peer: the same f32 weights quantized by torch.ao.quantization
// (FX mode, per-channel int8 weights, min-max u8 activations, fc f32) under the int8 engine the
// script found faster (Debian's torch has no FBGEMM: onednn or qnnpack), traced, loaded with
// torch::jit::load. The `_vs_f32` row of each batch times the same int8 model against ember's f32
// resnet18.onnx: its ratio is the int8 speedup (also the main row's speedup_vs_f32). The check
// runs both int8 models on the 8 images of resnet18_int8_check.safetensors and needs the f32
// model's top-1 class on at least 7 of them, for each.

struct Int8Resnet {
  std::unique_ptr<ember::onnx::Model> int8, f32;
  std::string engine;
  DynTensor check_input, check_f32;  // f32 logits of PyTorch's f32 model for check_input
};

// Quantized once for both batch sizes (calibration runs the f32 model on every input).
const Int8Resnet& int8_resnet(const std::filesystem::path& dir) {
  static std::unique_ptr<Int8Resnet> cached;
  if (cached) return *cached;
  auto r = std::make_unique<Int8Resnet>();
  const ember::onnx::ModelProto f32 = ember::onnx::load_model((dir / "resnet18.onnx").string());
  std::vector<std::filesystem::path> files;
  for (const auto& f : std::filesystem::directory_iterator(dir / "resnet18_calib"))
    if (f.path().extension() == ".npy") files.push_back(f.path());
  std::sort(files.begin(), files.end());
  std::vector<ember::onnx::CalibrationSample> calibration;
  for (const auto& f : files) calibration.push_back({{"input", DynTensor::from_data(ember::store::read_npy(f.string()))}});
  r->int8 = std::make_unique<ember::onnx::Model>(
      ember::onnx::Model::from_proto(ember::onnx::quantize_static(f32, calibration), ember::Device::cpu()));
  r->f32 = std::make_unique<ember::onnx::Model>(ember::onnx::Model::load((dir / "resnet18.onnx").string(), ember::Device::cpu()));
  std::ifstream meta(dir / "resnet18_int8.json");
  std::stringstream text;
  text << meta.rdbuf();
  r->engine = json_field(text.str(), "engine");
  for (const auto& [k, t] : ember::nn::read_tensors((dir / "resnet18_int8_check.safetensors").string(), ember::Device::cpu())) {
    if (k == "input") r->check_input = t;
    if (k == "f32") r->check_f32 = t;
  }
  if (!r->check_input.defined() || !r->check_f32.defined())
    throw std::runtime_error("resnet18_int8_check.safetensors lacks \"input\" or \"f32\"");
  cached = std::move(r);
  return *cached;
}

// Rows of [rows, classes] logits whose largest class matches the reference's, and the relative
// L2 error ||got - ref|| / ||ref||.
std::pair<int, double> top1_agreement(const std::vector<float>& got, const std::vector<float>& ref, size_t classes) {
  int agree = 0;
  double err = 0, norm = 0;
  for (size_t r = 0; r + classes <= ref.size() && got.size() == ref.size(); r += classes) {
    agree += std::max_element(got.begin() + long(r), got.begin() + long(r + classes)) - got.begin() ==
             std::max_element(ref.begin() + long(r), ref.begin() + long(r + classes)) - ref.begin();
    for (size_t c = r; c < r + classes; ++c) err += double(got[c] - ref[c]) * (got[c] - ref[c]), norm += double(ref[c]) * ref[c];
  }
  return {agree, std::sqrt(err / norm)};
}

void bench_onnx_resnet18_int8(Ctx& cx, int64_t batch) {
  const std::string name = "onnx_resnet18_int8_b" + std::to_string(batch), f32_name = name + "_vs_f32";
  if (!cx.run.selected(name) && !cx.run.selected(f32_name)) return;
  const std::filesystem::path dir = bench_models_dir();
  for (const char* f : {"resnet18.onnx", "resnet18_int8.ts", "resnet18_int8.json", "resnet18_int8_check.safetensors",
                        "resnet18_calib"})
    if (!std::filesystem::exists(dir / f)) {
      std::cerr << "  " << name << ": skipped: " << (dir / f).string()
                << " missing (/usr/bin/python3 bench/export_resnet18_int8.py writes it, after bench/export_resnet18.py)\n";
      return;
    }
  DynTensor x = DynTensor::normal({batch, 3, 224, 224});
  std::optional<double> f32_speedup;
  guarded(
      cx, f32_name,
      [&] {
        const Int8Resnet& m = int8_resnet(dir);
        auto& e = cx.compare(
            f32_name, [&] { bench::keep(m.int8->run({{"input", x}})); }, [&] { bench::keep(m.f32->run({{"input", x}})); },
            {}, "ember f32");
        f32_speedup = e.ratio();
        if (e.ember_ms) e.set("images_per_s", double(batch) / (*e.ember_ms * 1e-3));
      },
      "ember f32");
  guarded(
      cx, name,
      [&] {
        const Int8Resnet& m = int8_resnet(dir);
        at::globalContext().setQEngine(m.engine == "qnnpack" ? at::QEngine::QNNPACK : at::QEngine::ONEDNN);
        torch::jit::Module peer = torch::jit::load((dir / "resnet18_int8.ts").string());
        peer.eval();
        const at::Tensor tx = to_torch(x);
        auto ember_run = [&](const DynTensor& in) { return m.int8->run({{"input", in}}).at("output"); };
        auto peer_run = [&](const at::Tensor& in) {
          c10::InferenceMode guard;
          return peer.forward({in}).toTensor().contiguous();
        };
        const size_t rows = size_t(m.check_f32.shape()[0]);
        std::pair<int, double> mine{0, NAN}, theirs{0, NAN};
        auto check = [&] {
          const std::vector<float> ref = m.check_f32.to_vector<float>();
          mine = top1_agreement(ember_run(m.check_input).to_vector<float>(), ref, 1000);
          const at::Tensor p = peer_run(to_torch(m.check_input));
          theirs = top1_agreement(std::vector<float>(p.data_ptr<float>(), p.data_ptr<float>() + p.numel()), ref, 1000);
          bench::Check c;
          c.ok = mine.first + 1 >= int(rows) && theirs.first + 1 >= int(rows);
          if (!c.ok)
            c.detail = "top-1 agreement with the f32 model: ember " + std::to_string(mine.first) + "/" +
                       std::to_string(rows) + ", peer " + std::to_string(theirs.first) + "/" + std::to_string(rows);
          return c;
        };
        auto& e = cx.compare(
            name, [&] { bench::keep(ember_run(x)); }, [&] { bench::keep(peer_run(tx)); }, check,
            "libtorch int8 " + m.engine);
        e.set("top1_agreement", double(mine.first) / double(rows));
        e.set("rel_error_vs_f32", mine.second);
        e.set("peer_top1_agreement", double(theirs.first) / double(rows));
        e.set("peer_rel_error_vs_f32", theirs.second);
        if (f32_speedup) e.set("speedup_vs_f32", *f32_speedup);
        if (e.ember_ms) e.set("images_per_s", double(batch) / (*e.ember_ms * 1e-3));
        if (e.peer_ms) e.set("images_per_s_peer", double(batch) / (*e.peer_ms * 1e-3));
      },
      "libtorch int8");
}

// ---- user compositions of plain tensor ops, fused (Device::cpu().fusion()) ----
//
// Each row times the composition on the fusion device against the same composition in LibTorch
// eager, and also times ember without fusion (`unfused_ms`, `speedup_vs_unfused`).

// Median time of `fn` (samples of at least 20 ms, 5 of them).
double time_ms(const std::function<void()>& fn) {
  fn();
  int reps = 1;
  for (;;) {
    double t0 = bench::now_ms();
    for (int i = 0; i < reps; ++i) fn();
    if (bench::now_ms() - t0 >= 20 || reps >= (1 << 20)) break;
    reps *= 2;
  }
  std::vector<double> samples;
  for (int s = 0; s < 5; ++s) {
    double t0 = bench::now_ms();
    for (int i = 0; i < reps; ++i) fn();
    samples.push_back((bench::now_ms() - t0) / reps);
  }
  return bench::median(samples);
}

template <class T>
T gelu_custom(const T& x) {
  return x * 0.5 * (1 + erf(x / std::sqrt(2.0)));
}
DynTensor softmax_custom(const DynTensor& x) {
  auto e = ember::exp(x - ember::max(x, {-1}, true));
  return e / ember::sum(e, {-1}, true);
}
at::Tensor softmax_custom(const at::Tensor& x) {
  auto e = at::exp(x - std::get<0>(at::max(x, -1, true)));
  return e / at::sum(e, {-1}, true);
}
DynTensor rmsnorm_custom(const DynTensor& x, const DynTensor& w) {
  return x * ember::rsqrt(ember::mean(x * x, {-1}, true) + 1e-6) * w;
}
at::Tensor rmsnorm_custom(const at::Tensor& x, const at::Tensor& w) {
  return x * at::rsqrt(at::mean(x * x, {-1}, true) + 1e-6) * w;
}
// A chain of 100 small ops over narrow rows with a row mean every 20 (one row program of 5
// reductions): y * 1.01 and y + 0.01 alternately, y - mean(y, -1) at every 20th step.
template <class T, class Mean>
T narrow_chain_custom(T y, Mean mean_last) {
  for (int i = 0; i < 100; ++i) {
    if (i % 20 == 19) y = y - mean_last(y);
    else if (i % 2 == 0) y = y * 1.01;
    else y = y + 0.01;
  }
  return y;
}
// gelu'(x) from plain ops, as a user's own backward writes it: Phi(x) + x * phi(x)
template <class T>
T gelu_grad_custom(const T& x) {
  return 0.5 * (1 + erf(x / std::sqrt(2.0))) + x * exp(x * x * -0.5) * (1.0 / std::sqrt(2.0 * M_PI));
}

// Inputs of the given shapes (normal; a 2-d one after the first scaled by 1/sqrt(rows)) on the
// fusion device and on the plain CPU; `fn` is the composition on DynTensors, `peer` on LibTorch's.
using Args = std::vector<DynTensor>;
using TorchArgs = std::vector<at::Tensor>;
void bench_custom(Ctx& cx, const std::string& name, const std::vector<ember::Shape>& shapes,
                  const std::function<DynTensor(const Args&)>& fn, const std::function<at::Tensor(const TorchArgs&)>& peer,
                  bench::Tolerance tol, double bytes) {
  guarded(cx, name, [&] {
    const ember::Device fused = ember::Device::cpu().fusion();
    Args x, xf;
    TorchArgs tx;
    for (const auto& s : shapes) {
      DynTensor v = DynTensor::normal(s);
      if (s.rank() == 2 && &s != &shapes.front()) v = v * (1.0 / std::sqrt(double(s[0])));
      xf.push_back(DynTensor::from_data(v.into_data(), fused));
      tx.push_back(to_torch(v));
      x.push_back(std::move(v));
    }
    auto run_fused = [&] {
      DynTensor y = fn(xf);
      fused.sync();
      bench::keep(y);
    };
    auto& e = cx.compare(
        name, run_fused, [&] { bench::keep(peer(tx)); }, [&] { return check_close(fn(xf), peer(tx), tol); });
    const double unfused = time_ms([&] { bench::keep(fn(x)); });
    e.set("unfused_ms", unfused);
    if (e.ember_ms) e.set("speedup_vs_unfused", unfused / *e.ember_ms);
    set_gbps(e, bytes);
  });
}

void bench_custom_rows(Ctx& cx) {
  const double big = 8.0 * 8192 * 4096;  // bytes read and written once: an f32 in, an f32 out
  bench_custom(
      cx, "gelu_custom_f32", {{4, 512, 2048}}, [](const Args& v) { return gelu_custom(v[0]); },
      [](const TorchArgs& v) { return gelu_custom(v[0]); }, {.rtol = 1e-5, .atol = 1e-6}, 8.0 * 4 * 512 * 2048);
  bench_custom(
      cx, "softmax_custom_f32", {{8192, 4096}}, [](const Args& v) { return softmax_custom(v[0]); },
      [](const TorchArgs& v) { return softmax_custom(v[0]); }, {.rtol = 1e-5, .atol = 1e-9}, big);
  bench_custom(
      cx, "rmsnorm_custom_f32", {{8192, 4096}, {4096}}, [](const Args& v) { return rmsnorm_custom(v[0], v[1]); },
      [](const TorchArgs& v) { return rmsnorm_custom(v[0], v[1]); }, {.rtol = 1e-4, .atol = 1e-5}, big);
  // narrow rows: a row program over [64, 128] (rows run several to a tile, not one by one)
  bench_custom(
      cx, "row_chain_narrow_custom_f32", {{64, 128}},
      [](const Args& v) {
        return narrow_chain_custom(v[0], [](const DynTensor& y) { return ember::mean(y, {-1}, true); });
      },
      [](const TorchArgs& v) {
        return narrow_chain_custom(v[0], [](const at::Tensor& y) { return at::mean(y, {-1}, true); });
      },
      {.rtol = 1e-4, .atol = 1e-5}, 8.0 * 64 * 128);
  // a matmul epilogue: bias, the GELU of plain ops and a residual add run on each block of the
  // product while it is in cache (the product is never written whole)
  bench_custom(
      cx, "linear_gelu_residual_custom_f32", {{2048, 256}, {256, 1024}, {1024}, {2048, 1024}},
      [](const Args& v) { return gelu_custom(ember::matmul(v[0], v[1]) + v[2]) + v[3]; },
      [](const TorchArgs& v) { return gelu_custom(at::matmul(v[0], v[1]) + v[2]) + v[3]; },
      {.rtol = 1e-4, .atol = 1e-4}, 4.0 * (2048 * 256 + 256 * 1024 + 1024 + 2 * 2048 * 1024 + 2048 * 1024));
  // a reduction over the leading dim (a column program): a linear layer's bias gradient
  // through a GELU, sum(dy * gelu'(x), 0); the prologue is never materialised
  bench_custom(
      cx, "bias_grad_custom_f32", {{8192, 1024}, {8192, 1024}},
      [](const Args& v) { return ember::sum(v[0] * gelu_grad_custom(v[1]), {0}); },
      [](const TorchArgs& v) { return at::sum(v[0] * gelu_grad_custom(v[1]), {0}); }, {.rtol = 1e-4, .atol = 1e-3},
      8.0 * 8192 * 1024);
}

// ------------------------------------------------------------------ quantized products (issue 30)

// u8 x i8 -> i32 (matmul_integer) against an f32 product of the same shape: ember's own
// (peer "ember_f32") and LibTorch's. ratio = f32 time / int8 time; gops = 2 M N K / time.
void bench_qmatmul(Ctx& cx, int64_t M, int64_t N, int64_t K) {
  const std::string shape = M == N && N == K ? std::to_string(M)
                                             : std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K);
  const double ops = 2.0 * double(M) * double(N) * double(K);
  for (const std::string peer : {"ember_f32", "libtorch"}) {
    const std::string name = "qmatmul_u8i8_" + shape + (peer == kPeer ? "_vs_libtorch_f32" : "");
    guarded(
        cx, name,
        [&] {
          DynTensor a = DynTensor::randint({M, K}, 0, 256, ember::DType::u8);
          DynTensor b = DynTensor::randint({K, N}, -128, 128, ember::DType::i8);
          DynTensor za = DynTensor::full({}, 128, ember::DType::u8);
          DynTensor af = DynTensor::normal({M, K}), bf = DynTensor::normal({K, N});
          at::Tensor taf = to_torch(af), tbf = to_torch(bf);
          // the check: 16 rows of the product against LibTorch's int64 matmul of the shifted operands
          auto check = [&] {
            DynTensor a16 = ember::narrow(a, 0, 0, 16);
            at::Tensor ta = to_torch(a16.cast(ember::DType::f32)).to(at::kLong) - 128;
            at::Tensor tb = to_torch(b.cast(ember::DType::f32)).to(at::kLong);
            return check_close(ember::matmul_integer(a16, b, za).cast(ember::DType::f32),
                               at::matmul(ta, tb).to(at::kFloat), {.rtol = 0, .atol = 0});
          };
          auto int8 = [&] { bench::keep(ember::matmul_integer(a, b, za)); };
          bench::Entry* e;
          if (peer == kPeer)
            e = &cx.compare(name, int8, [&] { bench::keep(at::matmul(taf, tbf)); }, check);
          else
            e = &cx.compare(name, int8, [&] { bench::keep(ember::matmul(af, bf)); }, check, peer);
          if (e->ember_ms) e->set("gops_ember", ops / (*e->ember_ms * 1e6));
          if (e->peer_ms) e->set("gflops_peer", ops / (*e->peer_ms * 1e6));
        },
        peer);
  }
}

// An int8 3x3 convolution of a ResNet stage-1 shape (N 1, 64 -> 64 channels, 56 x 56, pad 1):
// conv_integer (u8 x i8 -> i32, x's zero point 128) against ember's own f32 conv2d of the same shape
// (peer "ember_f32"). ratio = f32 time / int8 time; gops = 2 N M H W C 9 / time.
void bench_qconv(Ctx& cx) {
  const std::string name = "qconv_resnet_3x3_u8i8";
  guarded(
      cx, name,
      [&] {
        const int64_t N = 1, C = 64, H = 56, W = 56, M = 64;
        DynTensor x = DynTensor::randint({N, C, H, W}, 0, 256, ember::DType::u8);
        DynTensor w = DynTensor::randint({M, C, 3, 3}, -128, 128, ember::DType::i8);
        DynTensor zx = DynTensor::full({}, 128, ember::DType::u8);
        DynTensor xf = DynTensor::normal({N, C, H, W}), wf = DynTensor::normal({M, C, 3, 3}, 0, 1.0 / 24);
        const ember::ConvOptions opt{.padding = {1}};
        // the check: against LibTorch's f64 conv of x - 128 and w (integers, exact)
        auto check = [&] {
          at::Tensor tx = to_torch(x.cast(ember::DType::f32)).to(at::kDouble) - 128;
          at::Tensor tw = to_torch(w.cast(ember::DType::f32)).to(at::kDouble);
          return check_close(ember::conv_integer(x, w, zx, std::nullopt, opt).cast(ember::DType::f32),
                             at::conv2d(tx, tw, {}, 1, 1), {.rtol = 0, .atol = 0});
        };
        auto& e = cx.compare(
            name, [&] { bench::keep(ember::conv_integer(x, w, zx, std::nullopt, opt)); },
            [&] { bench::keep(ember::conv2d(xf, wf, std::nullopt, opt)); }, check, "ember_f32");
        const double ops = 2.0 * double(N * M * H * W) * double(C * 9);
        if (e.ember_ms) e.set("gops_ember", ops / (*e.ember_ms * 1e6));
        if (e.peer_ms) e.set("gflops_peer", ops / (*e.peer_ms * 1e6));
      },
      "ember_f32");
}

// A requantizing int8 conv (qlinear_conv: u8 x i8, per-channel w scales, i32 bias, the u8 output
// rounded and saturated in the kernel's epilogue) against ember's own f32 conv2d with bias of the
// same shape (peer "ember_f32"): a ResNet stage-1 3x3 (N 1, 64 -> 64, 56 x 56, pad 1) and a
// MobileNet-v2 depthwise 3x3 (N 1, 144 channels, 56 x 56, groups 144). The weights are packed once
// and kept (as in inference), like the f32 conv's. ratio = f32 time / int8 time; gops = 2 N M H W
// (C / groups) 9 / time. Checked against LibTorch: its f64 conv of x - 128 and w (exact integers),
// plus the bias, then the requantization formula in float32.
void bench_qlinear_conv(Ctx& cx, const std::string& name, int64_t C, int64_t M, int64_t groups) {
  guarded(
      cx, name,
      [&] {
        const int64_t N = 1, H = 56, W = 56, Cg = C / groups;
        DynTensor x = DynTensor::randint({N, C, H, W}, 0, 256, ember::DType::u8);
        DynTensor w = DynTensor::randint({M, Cg, 3, 3}, -128, 128, ember::DType::i8);
        DynTensor bias = DynTensor::randint({M}, -2000, 2000, ember::DType::i32);
        DynTensor zx = DynTensor::full({}, 128, ember::DType::u8), zy = DynTensor::full({}, 120, ember::DType::u8);
        DynTensor xs = DynTensor::full({}, 0.02, ember::DType::f32), ys = DynTensor::full({}, 0.1, ember::DType::f32);
        DynTensor ws = DynTensor::uniform({M}, 0.0005, 0.002);
        DynTensor xf = DynTensor::normal({N, C, H, W}), wf = DynTensor::normal({M, Cg, 3, 3}, 0, 1.0 / 24);
        DynTensor bf = DynTensor::normal({M});
        const ember::ConvOptions opt{.padding = {1}, .groups = groups};
        auto q = [&] { return ember::qlinear_conv(x, xs, zx, w, ws, std::nullopt, ys, zy, bias, opt); };
        auto check = [&] {
          at::Tensor tx = to_torch(x.cast(ember::DType::f32)).to(at::kDouble) - 128;
          at::Tensor tw = to_torch(w.cast(ember::DType::f32)).to(at::kDouble);
          at::Tensor acc = at::conv2d(tx, tw, to_torch(bias.cast(ember::DType::f32)).to(at::kDouble), 1, 1, 1, groups);
          at::Tensor m = (to_torch(xs) * to_torch(ws)) / to_torch(ys);
          at::Tensor y = at::clamp(at::round(acc.to(at::kFloat) * m.reshape({1, M, 1, 1})) + 120, 0, 255);
          return check_close(q().cast(ember::DType::f32), y, {.rtol = 0, .atol = 0});
        };
        auto& e = cx.compare(
            name, [&] { bench::keep(q()); }, [&] { bench::keep(ember::conv2d(xf, wf, bf, opt)); }, check,
            "ember_f32");
        const double ops = 2.0 * double(N * M * H * W) * double(Cg * 9);
        if (e.ember_ms) e.set("gops_ember", ops / (*e.ember_ms * 1e6));
        if (e.peer_ms) e.set("gflops_peer", ops / (*e.peer_ms * 1e6));
      },
      "ember_f32");
}

// A requantizing int8 product (qlinear_matmul: u8 a [M, K] x i8 b [K, N] with per-column scales,
// u8 out, the weight b packed once and kept) against ember's f32 matmul of the same shape (peer
// "ember_f32"). Checked against LibTorch's int64 product and the requantization formula in float32.
void bench_qlinear_matmul(Ctx& cx, int64_t M, int64_t N, int64_t K) {
  const std::string name = "qlinear_matmul_u8_" + std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K);
  guarded(
      cx, name,
      [&] {
        DynTensor a = DynTensor::randint({M, K}, 0, 256, ember::DType::u8);
        DynTensor b = DynTensor::randint({K, N}, -128, 128, ember::DType::i8);
        DynTensor za = DynTensor::full({}, 128, ember::DType::u8), zy = DynTensor::full({}, 128, ember::DType::u8);
        DynTensor as = DynTensor::full({}, 0.02, ember::DType::f32), ys = DynTensor::full({}, 0.5, ember::DType::f32);
        DynTensor bs = DynTensor::uniform({N}, 0.0005, 0.002);
        DynTensor af = DynTensor::normal({M, K}), bf = DynTensor::normal({K, N});
        auto q = [&] { return ember::qlinear_matmul(a, as, za, b, bs, std::nullopt, ys, zy); };
        auto check = [&] {
          at::Tensor ta = to_torch(a.cast(ember::DType::f32)).to(at::kLong) - 128;
          at::Tensor tb = to_torch(b.cast(ember::DType::f32)).to(at::kLong);
          at::Tensor m = (to_torch(as) * to_torch(bs)) / to_torch(ys);
          at::Tensor y = at::clamp(at::round(at::matmul(ta, tb).to(at::kFloat) * m) + 128, 0, 255);
          return check_close(q().cast(ember::DType::f32), y, {.rtol = 0, .atol = 0});
        };
        auto& e = cx.compare(
            name, [&] { bench::keep(q()); }, [&] { bench::keep(ember::matmul(af, bf)); }, check, "ember_f32");
        const double ops = 2.0 * double(M) * double(N) * double(K);
        if (e.ember_ms) e.set("gops_ember", ops / (*e.ember_ms * 1e6));
        if (e.peer_ms) e.set("gflops_peer", ops / (*e.peer_ms * 1e6));
      },
      "ember_f32");
}

// Multi-threaded streaming read of `bytes` bytes (AVX-512 loads summed, so nothing is skipped).
__attribute__((target("avx512f"))) int64_t stream_sum(const uint8_t* p, int64_t bytes) {
  __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0;
  for (int64_t i = 0; i + 256 <= bytes; i += 256) {
    a0 = _mm512_add_epi64(a0, _mm512_load_si512(p + i));
    a1 = _mm512_add_epi64(a1, _mm512_load_si512(p + i + 64));
    a2 = _mm512_add_epi64(a2, _mm512_load_si512(p + i + 128));
    a3 = _mm512_add_epi64(a3, _mm512_load_si512(p + i + 192));
  }
  a0 = _mm512_add_epi64(_mm512_add_epi64(a0, a1), _mm512_add_epi64(a2, a3));
  int64_t out[8];
  _mm512_storeu_si512(out, a0);
  return out[0] + out[7];
}

// LLM decoding with weight-only quantized weights: one token (x [1, 4096]) through a stack of 12
// [11008, 4096] matrices (541 M parameters, 2.2 GB in f32; random weights, blocks of 32 along
// K), against the machine's memory bandwidth measured in the same run: the peer
// ("stream_read") reads a separate buffer of the same size as the weights and their scales on
// the same number of threads. ratio = stream time / decode time = the fraction of the measured
// bandwidth that the decode reaches in weight bytes per second.
// The main rows round x to int8 per 32 first (quantize_x: int8 dot products, as ggml decodes);
// the *_f32x rows keep x in f32 (the exact formula, f32 FMAs).
void bench_decode(Ctx& cx, int bits, bool quantize_x) {
  const std::string name = "decode_int" + std::to_string(bits) + "_gemv" + (quantize_x ? "" : "_f32x");
  guarded(
      cx, name,
      [&] {
        if (!__builtin_cpu_supports("avx512f")) throw std::runtime_error("the stream-read peer needs AVX-512");
        const int64_t N = 11008, K = 4096, L = 12, block = 32;
        const int64_t row_bytes = bits == 4 ? K / 2 : K;
        std::vector<DynTensor> data, scales;
        for (int64_t l = 0; l < L; ++l) {
          data.push_back(DynTensor::randint({N, row_bytes}, bits == 4 ? 0 : -128, bits == 4 ? 256 : 128,
                                            bits == 4 ? ember::DType::u8 : ember::DType::i8));
          scales.push_back(DynTensor::uniform({N, K / block}, 0.001, 0.01));
        }
        DynTensor x = DynTensor::normal({1, K});
        const ember::WeightQuant q{bits, block, quantize_x};
        const double bytes = double(L) * double(N) * double(row_bytes + K / block * 4);
        const int64_t stream_bytes = int64_t(bytes) / (256 * cx.threads) * 256 * cx.threads;
        uint8_t* buf = static_cast<uint8_t*>(std::aligned_alloc(4096, size_t(stream_bytes)));
        if (!buf) throw std::bad_alloc();
        std::unique_ptr<uint8_t, void (*)(void*)> hold(buf, std::free);
        std::memset(buf, 1, size_t(stream_bytes));
        auto stream = [&] {
          std::vector<std::thread> pool;
          std::vector<int64_t> sums(size_t(cx.threads));
          const int64_t chunk = stream_bytes / cx.threads;
          for (int t = 0; t < cx.threads; ++t)
            pool.emplace_back([&, t] { sums[size_t(t)] = stream_sum(buf + t * chunk, chunk); });
          for (auto& th : pool) th.join();
          g_sink = g_sink + double(sums[0]);
        };
        // the check: 64 rows of layer 0 against f64 dequantize-then-multiply
        auto check = [&] {
          DynTensor y = ember::matmul_wq(x, data[0], scales[0], std::nullopt, q);
          const std::vector<float> yv = y.to_vector<float>();
          std::vector<float> xv = x.to_vector<float>();
          if (quantize_x)  // the reference multiplies x as the op rounds it (its definition)
            for (int64_t b = 0; b < K; b += 32) {
              float amax = 0;
              for (int64_t i = b; i < b + 32; ++i) amax = std::max(amax, std::fabs(xv[size_t(i)]));
              const float id = amax > 0 ? 127.f / amax : 0.f;
              for (int64_t i = b; i < b + 32; ++i) xv[size_t(i)] = std::nearbyint(xv[size_t(i)] * id) * (amax / 127.f);
            }
          const std::vector<float> sv = ember::narrow(scales[0], 0, 0, 64).to_vector<float>();
          std::vector<float> got(yv.begin(), yv.begin() + 64), want(64);
          const DynTensor rows = ember::narrow(data[0], 0, 0, 64);
          const std::vector<int64_t> dv = rows.cast(ember::DType::i64).to_vector<int64_t>();
          for (int64_t n = 0; n < 64; ++n) {
            double acc = 0;
            for (int64_t k = 0; k < K; ++k) {
              int64_t qv;
              if (bits == 4) {
                const int64_t byte = dv[size_t(n * row_bytes + k / 2)];
                qv = (k % 2) ? byte >> 4 : byte & 15;
                if (qv >= 8) qv -= 16;
              } else {
                qv = dv[size_t(n * row_bytes + k)];
              }
              acc += double(sv[size_t(n * (K / block) + k / block)]) * double(qv) * double(xv[size_t(k)]);
            }
            want[size_t(n)] = float(acc);
          }
          return bench::compare_values(got.data(), want.data(), 64, {.rtol = 1e-4, .atol = 1e-4});
        };
        auto& e = cx.compare(
            name,
            [&] {
              for (int64_t l = 0; l < L; ++l) bench::keep(ember::matmul_wq(x, data[size_t(l)], scales[size_t(l)], std::nullopt, q));
            },
            stream, check, "stream_read");
        e.set("params", double(L * N * K));
        e.set("weight_bytes", bytes);
        if (e.ember_ms) e.set("weight_gbps", bytes / (*e.ember_ms * 1e6));
        if (e.peer_ms) e.set("bandwidth_gbps", double(stream_bytes) / (*e.peer_ms * 1e6));
        if (e.ember_ms && e.peer_ms)
          e.set("fraction_of_bandwidth", (bytes / *e.ember_ms) / (double(stream_bytes) / *e.peer_ms));
      },
      "stream_read");
}

at::Tensor peer_exp(const at::Tensor& x) { return at::exp(x); }
at::Tensor peer_gelu(const at::Tensor& x) { return at::gelu(x); }
DynTensor ember_exp(DynTensor x) { return ember::exp(std::move(x)); }
DynTensor ember_gelu(DynTensor x) { return ember::gelu(std::move(x)); }

std::string notes(const bench::Entry& e) {
  auto num = [&](const char* k) { return e.number(k); };
  auto pair = [&](const char* ke, const char* kp, const char* unit) {
    std::string s = bench::format_num(num(ke).value_or(NAN)) + " vs " + bench::format_num(num(kp).value_or(NAN));
    return s + " " + unit;
  };
  std::string s;
  if (auto g = num("gflops"))
    return bench::format_num(*g) + " GFLOP/s (" + std::get<std::string>(*e.get("isa")) + " FMA, " +
           std::to_string(static_cast<int>(num("threads").value_or(0))) + " threads)";
  if (num("gops_ember")) {
    s = bench::format_num(num("gops_ember").value_or(NAN)) + " int8 GOP/s vs " +
        bench::format_num(num("gflops_peer").value_or(NAN)) + " f32 GFLOP/s";
  } else if (num("gflops_ember") || num("gflops_peer")) {
    s = pair("gflops_ember", "gflops_peer", "GFLOP/s");
    if (num("pct_of_peak") || num("pct_of_peak_peer"))
      s += " (" + bench::format_num(num("pct_of_peak").value_or(NAN), 2) + "% vs " +
           bench::format_num(num("pct_of_peak_peer").value_or(NAN), 2) + "% of peak)";
  } else if (num("weight_gbps")) {
    s = bench::format_num(num("weight_gbps").value_or(NAN)) + " GB/s of weights vs " +
        bench::format_num(num("bandwidth_gbps").value_or(NAN)) + " GB/s streamed (" +
        bench::format_num(100 * num("fraction_of_bandwidth").value_or(NAN), 2) + "% of the bandwidth)";
  } else if (num("gbps_ember") || num("gbps_peer")) {
    s = pair("gbps_ember", "gbps_peer", "GB/s");
  } else if (num("peak_bytes_none")) {
    s = "peak " + bench::format_num(num("peak_bytes_balanced").value_or(NAN) / 1048576.0) + " MiB balanced vs " +
        bench::format_num(num("peak_bytes_none").value_or(NAN) / 1048576.0) + " MiB none";
  } else if (num("samples_per_s_peer")) {
    s = pair("samples_per_s", "samples_per_s_peer", "samples/s");
  } else if (num("samples_per_s")) {
    s = bench::format_num(num("samples_per_s").value_or(NAN)) + " samples/s";
  } else if (num("us") || num("us_peer")) {
    s = pair("us", "us_peer", "us per op");
  }
  if (e.check == "mismatch" || e.check == "error")
    if (const auto* d = e.get("check_detail")) s += (s.empty() ? "" : "; ") + std::get<std::string>(*d);
  if (e.peer != kPeer) s = "vs " + e.peer + (s.empty() ? "" : "; " + s);  // the onnx_*_vs_ort rows
  return s;
}

int usage(const char* argv0) {
  std::cerr << "usage: " << argv0
            << " [--out FILE] [--threads N] [--filter NAME[,NAME...]] [--budget SECONDS] [--quick]\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string out;
  int threads = static_cast<int>(std::thread::hardware_concurrency());
  bench::Options opt;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
      return argv[++i];
    };
    try {
      if (a == "--out") out = value();
      else if (a == "--threads") threads = std::stoi(value());
      else if (a == "--filter") opt.filter = value();
      else if (a == "--budget") opt.budget_s = std::stod(value());
      else if (a == "--quick") opt.budget_s = 0.5, opt.min_samples = 3, opt.max_samples = 5;
      else return usage(argv[0]);
    } catch (const std::exception& e) {
      std::cerr << e.what() << "\n";
      return usage(argv[0]);
    }
  }
  threads = std::max(1, threads);

  ember::cpu::set_num_threads(threads);
  at::set_num_threads(threads);
  c10::InferenceMode inference;  // the peer's fastest eager mode: no autograd bookkeeping
  ember::Device::cpu().seed(1234);

  const double t_start = bench::now_ms();
  std::cerr << "ember CPU benchmarks: " << bench::cpu_model_name() << ", " << threads << " threads (ember "
            << ember::cpu::num_threads() << ", libtorch " << at::get_num_threads() << "), libtorch "
            << TORCH_VERSION_MAJOR << "." << TORCH_VERSION_MINOR << "\n";

  bench::Runner run(opt);
  Ctx cx{run, threads, 0};

  if (run.selected("fma_peak_gflops") || run.selected("matmul") || run.selected("conv2d") ||
      run.selected("onnx_resnet18")) {
    std::cerr << "  fma_peak_gflops ..." << std::flush;
    Peak p = measure_peak(threads);
    cx.peak_gflops = p.gflops;
    std::cerr << " " << bench::format_num(p.gflops) << " GFLOP/s (" << p.isa << ")\n";
    if (run.selected("fma_peak_gflops") && p.gflops > 0) {
      bench::Entry e;
      e.name = "fma_peak_gflops";
      e.peer = kPeer;
      e.ember_ms = e.peer_ms = p.ms;
      e.set("gflops", p.gflops);
      e.set("isa", p.isa);
      e.set("threads", double(threads));
      e.set("gflops_avx512", p.gflops_avx512);
      e.set("gflops_avx2", p.gflops_avx2);
      e.set("note", "machine f32 FMA peak (register-only FMA loop on every thread); not a library comparison");
      run.add(std::move(e));
    }
  }

  bench_matmul(cx, 256);
  bench_matmul(cx, 1024);
  bench_matmul(cx, 2048);
  bench_conv2d(cx);
  bench_add(cx);
  bench_unary(cx, "exp_f32_16M", {int64_t(1) << 24}, ember_exp, peer_exp, 8.0, {.rtol = 1e-5, .atol = 1e-30});
  bench_unary(cx, "gelu_f32_16M", {int64_t(1) << 24}, ember_gelu, peer_gelu, 8.0, {.rtol = 1e-4, .atol = 1e-6});
  bench_sum(cx);
  bench_softmax(cx);
  bench_layer_norm(cx);
  bench_custom_rows(cx);
  for (int64_t batch : {16, 1, 32})
    for (bool indices : {false, true}) bench_max_pool(cx, batch, indices);
  bench_overhead(cx);
  bench_autodiff_overhead(cx);
  bench_mlp_train_step(cx);
  bench_fashion_cnn_train(cx);
  bench_mlp24_peak_mem(cx);
  bench_transformer_layer(cx);
  bench_lstm(cx);
  bench_load_safetensors(cx);
  bench_onnx_resnet18(cx, 1);
  bench_onnx_resnet18(cx, 32);
  bench_onnx_vs_ort(cx, "resnet18", 1, kResnet18Flop);
  bench_onnx_vs_ort(cx, "resnet18", 32, kResnet18Flop);
  bench_onnx_vs_ort(cx, "mobilenet_v2", 1, kMobilenetV2Flop);
  bench_onnx_resnet18_int8(cx, 1);
  bench_onnx_resnet18_int8(cx, 32);
  bench_qmatmul(cx, 1024, 1024, 1024);
  bench_qmatmul(cx, 256, 4096, 4096);
  bench_qconv(cx);
  bench_qlinear_conv(cx, "qlinear_conv_resnet_3x3_u8", 64, 64, 1);
  bench_qlinear_conv(cx, "qlinear_conv_mobilenet_dw3x3_u8", 144, 144, 144);
  bench_qlinear_matmul(cx, 256, 1024, 1024);
  bench_decode(cx, 4, true);
  bench_decode(cx, 8, true);
  bench_decode(cx, 4, false);
  bench_decode(cx, 8, false);

  if (!out.empty()) {
    try {
      run.write_json(out);
    } catch (const std::exception& e) {
      std::cerr << e.what() << "\n";
      return 1;
    }
  }
  std::cout << "\nember vs libtorch " << TORCH_VERSION_MAJOR << "." << TORCH_VERSION_MINOR << " on CPU ("
            << bench::cpu_model_name() << ", " << threads << " threads). ratio = libtorch time / ember time"
            << " (above 1: ember is faster); times are medians.";
  for (const bench::Entry& e : run.entries())
    if (e.peer != kPeer) {
      std::cout << " Rows whose notes say \"vs " << e.peer << "\" compare with that peer instead (same ratio).";
      break;
    }
  std::cout << "\n\n";
  run.print_table(std::cout, notes);
  std::cout << "\n";
  std::cerr << "total " << bench::format_num((bench::now_ms() - t_start) / 1000.0) << " s"
            << (out.empty() ? "" : ", report: " + out) << "\n";
  return 0;
}
