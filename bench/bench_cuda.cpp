// The ember side of ./bench.sh cuda: times each benchmark on Device::cuda(0) and writes one
// JSON object per benchmark ({"name", "ember_ms", extra fields}) to --out. The PyTorch side
// (bench/cuda_peer.py) times the same work with the same method in the same invocation, and
// bench/cuda_report.py joins the two into build/reports/bench-cuda.json (docs/benchmarks.md).
//
// Method: warm up (JIT compilation, cuBLASLt/cuDNN plans and autotuning stay out of the numbers),
// calibrate a loop of `reps` calls to last >= 20 ms, then take samples of that loop, each ended
// by a device synchronisation; the time is the median over samples of (sample time / reps).
//
// Correctness: every row first computes its operation once on inputs that it writes, with
// ember's outputs, to --check-dir (save_check); cuda_peer.py runs PyTorch on those inputs and
// compares, and cuda_report.py fails the run on a mismatch. Where the benchmark's shape is too
// large to write, the check runs the same code on a smaller shape (fewer rows, same row length).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include <unistd.h>

#include <cuda.h>
#include <cuda_runtime.h>

#include "ember/amp.hpp"
#include "ember/decorators/fusion.hpp"
#include "ember/ember.hpp"
#include "ember/nn.hpp"
#include "ember/onnx/runtime.hpp"
#include "ember/optim/optimizer.hpp"
#include "ember/tensor/graph.hpp"

using namespace ember;

namespace {

double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct Result {
  std::string name;
  double ms = 0;
  std::vector<std::pair<std::string, std::string>> extra;  // key -> JSON text
  void set(const std::string& k, double v) {
    std::ostringstream os;
    os << v;
    extra.emplace_back(k, os.str());
  }
  void set_text(const std::string& k, const std::string& v) {
    std::string q = "\"";
    for (char c : v) {
      if (c == '"' || c == '\\') q += '\\';
      q += (c == '\n' || c == '\t') ? ' ' : c;
    }
    extra.emplace_back(k, q + "\"");
  }
};

// Median time of one call of `f`, with the device synchronised at the end of each sample.
double time_ms(const Device& dev, const std::function<void()>& f, int samples = 9) {
  for (int i = 0; i < 3; ++i) f();
  dev.sync();
  int reps = 1;
  for (;;) {
    double t0 = now_ms();
    for (int i = 0; i < reps; ++i) f();
    dev.sync();
    double t = now_ms() - t0;
    if (t >= 20 || reps >= (1 << 20)) break;
    reps *= t < 2 ? 8 : 2;
  }
  std::vector<double> v;
  for (int s = 0; s < samples; ++s) {
    double t0 = now_ms();
    for (int i = 0; i < reps; ++i) f();
    dev.sync();
    v.push_back((now_ms() - t0) / reps);
  }
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Host time per launch: bursts of 64 calls of `f` timed without waiting for the GPU (64 launches
// never fill the launch queue), the device synchronised between bursts outside the timing; the
// median over 300 bursts (after 20 unmeasured ones).
double burst_ms(const Device& dev, const std::function<void()>& f) {
  std::vector<double> v;
  for (int s = 0; s < 320; ++s) {
    dev.sync();
    double t0 = now_ms();
    for (int i = 0; i < 64; ++i) f();
    double t = now_ms() - t0;
    if (s >= 20) v.push_back(t / 64);
  }
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// The driver's own cost of a launch on this host, the floor under any op: an empty kernel
// launched with cuLaunchKernel on a non-blocking stream of the same context, timed like
// overhead_add_1. Host launch costs differ from machine to machine by more than ember's own
// share of an op, so the report carries both.
double driver_launch_ms(const Device& dev) {
  using LoadData = CUresult (*)(CUmodule*, const void*);
  using GetFunction = CUresult (*)(CUfunction*, CUmodule, const char*);
  using Launch = CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                              CUstream, void**, void**);
  auto entry = [](const char* name) {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult q{};
    if (cudaGetDriverEntryPointByVersion(name, &p, 12000, cudaEnableDefault, &q) != cudaSuccess || !p)
      throw Error(std::string("bench: the driver has no entry point ") + name);
    return p;
  };
  auto load = reinterpret_cast<LoadData>(entry("cuModuleLoadData"));
  auto get = reinterpret_cast<GetFunction>(entry("cuModuleGetFunction"));
  auto launch = reinterpret_cast<Launch>(entry("cuLaunchKernel"));
  static const char* ptx = ".version 7.0\n.target sm_70\n.address_size 64\n.visible .entry empty() { ret; }\n";
  dev.sync();  // ember's context is the device's primary context, current on this thread
  CUmodule m = nullptr;
  CUfunction f = nullptr;
  if (load(&m, ptx) != CUDA_SUCCESS || get(&f, m, "empty") != CUDA_SUCCESS) throw Error("bench: empty kernel");
  cudaStream_t s = nullptr;
  if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess) throw Error("bench: stream");
  double ms = burst_ms(dev, [&] { (void)launch(f, 1, 1, 1, 32, 1, 1, 0, reinterpret_cast<CUstream>(s), nullptr, nullptr); });
  cudaStreamSynchronize(s);
  cudaStreamDestroy(s);
  return ms;
}

std::vector<Result> g_results;
std::string g_filter;
bool g_eager_only = false;   // --eager-only: the train-step rows time only their eager step (to profile it)
bool g_fusion_only = false;  // --fusion-only: ... only their fusion and graph steps (EMBER_CUDA_PROFILE sees those alone)
std::string g_check_dir = "build/reports/bench-cuda-check";

// A row's correctness check: its inputs and ember's outputs on them, as "in.<name>" and
// "out.<name>" in <check dir>/<row>.safetensors, for cuda_peer.py's check() to run PyTorch on the
// same inputs and compare (its tolerances are per row and dtype).
void save_check(const Result& r, const nn::NamedTensors& inputs, const nn::NamedTensors& outputs) {
  nn::NamedTensors all;
  auto host = [](const DynTensor& t) { return contiguous(t.detach().to(Device::cpu())); };
  for (const auto& [k, t] : inputs) all.emplace_back("in." + k, host(t));
  for (const auto& [k, t] : outputs) all.emplace_back("out." + k, host(t));
  std::filesystem::create_directories(g_check_dir);
  nn::write_tensors((std::filesystem::path(g_check_dir) / (r.name + ".safetensors")).string(), all);
}

// The check of one training step of `m`: the parameters before it ("in.param.<path>") and the
// step's `inputs`; the loss, the gradients ("out.grad.<path>") and the parameters after the
// optimizer's update ("out.param.<path>"). Parameter paths are PyTorch's state_dict keys.
template <class M>
void save_step_check(const Result& r, M m, nn::NamedTensors inputs, const std::function<DynTensor(const M&)>& loss_of,
                     const std::function<M(M, const Gradients&)>& update) {
  for (const auto& [k, t] : nn::named_parameters(m)) inputs.emplace_back("param." + k, t);
  DynTensor loss = loss_of(m);
  Gradients g = loss.backward();
  nn::NamedTensors outputs{{"loss", loss}};
  nn::for_each_param(m, [&](const std::string& p, nn::Param& w) {
    if (auto gw = w.grad(g)) outputs.emplace_back("grad." + p, *gw);
  });
  m = update(std::move(m), g);
  for (const auto& [k, t] : nn::named_parameters(m)) outputs.emplace_back("param." + k, t);
  save_check(r, inputs, outputs);
}

// sort and topk: values and indices of f32 normals of `shape`.
void save_sort_check(const Result& r, const Shape& shape, const Device& gpu,
                     const std::function<TensorPair(const DynTensor&)>& f) {
  auto x = DynTensor::normal(shape, 0, 1, DType::f32, gpu);
  auto [values, indices] = f(x);
  save_check(r, {{"x", x}}, {{"values", values}, {"indices", indices}});
}

bool wanted(const std::string& name) {
  if (g_filter.empty()) return true;
  std::stringstream ss(g_filter);
  for (std::string part; std::getline(ss, part, ',');)
    if (!part.empty() && name.find(part) != std::string::npos) return true;
  return false;
}

void bench(const std::string& name, const std::function<void(Result&)>& body) {
  if (!wanted(name)) return;
  Result r;
  r.name = name;
  try {
    body(r);
    std::cerr << name << ": " << r.ms << " ms\n";
  } catch (const std::exception& e) {
    r.ms = std::nan("");
    r.set_text("error", e.what());
    std::cerr << name << ": error: " << e.what() << "\n";
  }
  g_results.push_back(std::move(r));
  Device::cuda(0).memory_cleanup();
}

void matmul_bench(const std::string& name, DType dt, int64_t n, bool tf32) {
  bench(name, [&](Result& r) {
    Device gpu = Device::cuda(0);
    cuda::set_allow_tf32(tf32);
    auto ca = DynTensor::normal({512, 512}, 0, 1, DType::f32, gpu).cast(dt);
    auto cb = DynTensor::normal({512, 512}, 0, 1, DType::f32, gpu).cast(dt);
    save_check(r, {{"a", ca}, {"b", cb}}, {{"c", matmul(ca, cb)}});
    auto a = DynTensor::normal({n, n}, 0, 1, DType::f32, gpu).cast(dt);
    auto b = DynTensor::normal({n, n}, 0, 1, DType::f32, gpu).cast(dt);
    r.ms = time_ms(gpu, [&] { (void)matmul(a, b); });
    cuda::set_allow_tf32(false);
    r.set("tflops", 2.0 * double(n) * n * n / (r.ms * 1e-3) / 1e12);
  });
}

// 784-512-512-10 MLP, batch 256, cross-entropy, Adam: one training step.
struct Mlp {
  nn::Linear fc1, fc2, fc3;
  EMBER_MODULE(fc1, fc2, fc3)
  DynTensor forward(DynTensor x) const {
    return fc3.forward(relu(fc2.forward(relu(fc1.forward(std::move(x))))));
  }
};

// A GPT-style model: token and position embeddings, pre-norm causal TransformerEncoder layers
// (GELU feed-forward of 4 * d), a final LayerNorm and a linear head. Small (the char_transformer
// example's: 2 layers, d 128), its training step is a few hundred small kernels and measures the
// per-op cost of the whole framework (dispatch, autodiff, optimizer) more than the GPU; shaped like
// GPT-2 small (12 layers, d 768, 12 heads, 50257 tokens, context 1024) it measures the GPU work.
struct Gpt {
  nn::Embedding token, position;
  nn::TransformerEncoder layers;
  nn::Linear head;
  EMBER_MODULE(token, position, layers, head)
  DynTensor forward(const DynTensor& tokens) const {
    DynTensor positions = DynTensor::arange(0, tokens.size(1), 1, DType::i64, tokens.device());
    DynTensor x = token.forward(tokens) + position.forward(positions);
    return head.forward(layers.forward(x, {.is_causal = true}));
  }
};

struct GptShape {
  int64_t vocab, context, d, heads, layers;
};

Gpt gpt(const GptShape& g, const Device& device) {
  nn::TransformerEncoderLayerConfig layer{.d_model = g.d,
                                          .nhead = g.heads,
                                          .dim_feedforward = 4 * g.d,
                                          .dropout = 0,
                                          .activation = nn::FeedForwardActivation::gelu,
                                          .batch_first = true,
                                          .norm_first = true};
  return Gpt{nn::EmbeddingConfig{.num_embeddings = g.vocab, .embedding_dim = g.d}.init(device),
             nn::EmbeddingConfig{.num_embeddings = g.context, .embedding_dim = g.d}.init(device),
             nn::TransformerEncoderConfig{.layer = layer, .num_layers = g.layers, .final_norm = true}.init(device),
             nn::LinearConfig{.in_features = g.d, .out_features = g.vocab}.init(device)};
}

// How a train step's matmuls compute: f32, TF32, or under bf16 autocast (issue 26: f32 master
// weights, bf16 matmuls and attention, f32 reductions and loss).
enum class Precision { f32, tf32, bf16 };

// One training step of `g` on `batch` sequences of the full context: forward, cross-entropy,
// backward, AdamW (weight decay 0.01) with the gradients clipped to norm 1
// (torch.nn.utils.clip_grad_norm_); no read-back in the step.
// The check runs one step of a model of shape `check` on 2 sequences.
// bf16 rows also report MFU: 6 * parameters * tokens/s over the H200's 989 TFLOP/s dense bf16.
// A whole training step as one CUDA graph, captured by graph::Step (ember/tensor/graph.hpp:
// eager at the first call, captured at the second, replayed after): forward, backward, clipping
// and the optimizer, made capturable (its learning rate an input of the Step, its step counts on
// the device). The time of a step, or why there is no graph in `r`.
template <class M, class Config, class LossOf>
void graph_step_bench(Result& r, const Device& dev, M& m, Config config, double lr, const LossOf& loss_of) {
  try {
    config.capturable = true;
    auto opt = config.init();
    graph::Step step(dev, [&](const DynTensor& lr_in) {
      DynTensor loss = loss_of(m);
      m = opt.step(std::move(m), loss.backward(), lr_in);
    });
    const DynTensor lr_t = DynTensor::full(Shape{}, Scalar(lr), DType::f32, dev);
    int64_t calls = 0;
    auto one = [&] {
      step(lr_t);
      ++calls;
    };
    one();  // the warm-up
    one();  // the capture
    const double ms = time_ms(dev, one);
    if (step.stats().captures == 0) throw Error(step.refusal());
    // a replay that stopped updating the parameters would time a step that trains nothing
    DynTensor first;
    nn::for_each_param(m, [&](const std::string&, nn::Param& p) {
      if (!first.defined() && !p.frozen()) first = p.value().detach().to(Device::cpu());
    });
    one();
    DynTensor after;
    nn::for_each_param(m, [&](const std::string&, nn::Param& p) {
      if (!after.defined() && !p.frozen()) after = p.value().detach().to(Device::cpu());
    });
    if (first.defined() && (first - after).abs().max().item() == 0)
      throw Error("graph::Step: a replay left the parameters unchanged");
    for (const auto& [key, t] : opt.state_dict(m))
      if (key.size() > 5 && key.compare(key.size() - 5, 5, ".step") == 0 && int64_t(t.item()) != calls)
        throw Error("graph::Step: " + key + " is " + std::to_string(int64_t(t.item())) + " after " +
                    std::to_string(calls) + " steps");
    r.set("graph_fusion_ms", ms);
    r.set("graph_kernels", double(step.stats().kernels));
    r.set("speedup_graph_fusion_vs_eager", r.ms / ms);
  } catch (const Error& e) {
    r.set_text("graph_error", e.what());
  }
}

void gpt_train_bench(const std::string& name, const Device& gpu, const GptShape& g, int64_t batch, Precision prec,
                     const GptShape& check) {
  bench(name, [&](Result& r) {
    const bool tf32 = prec == Precision::tf32;
    std::optional<amp::Autocast> autocast;  // (this thread, for the whole row: check and timed steps)
    if (prec == Precision::bf16) autocast.emplace(DType::bf16);
    cuda::set_allow_tf32(tf32);
    Device dev = gpu.autodiff();
    dev.seed(1);
    Gpt m = gpt(g, dev);
    const optim::AdamWConfig adamw{.weight_decay = 0.01, .clipping = optim::GradientClipping::by_norm(1.0)};
    {  // the check: one step of a model of `check` shape (GPT-2 small's is too large to write)
      Gpt c = gpt(check, dev);
      optim::AdamW copt(adamw);
      auto cx = DynTensor::randint({2, check.context}, 0, check.vocab, DType::i64, dev);
      auto cy = DynTensor::randint({2 * check.context}, 0, check.vocab, DType::i64, dev);
      save_step_check<Gpt>(
          r, std::move(c), {{"x", cx}, {"y", cy}},
          [&](const Gpt& model) { return nn::cross_entropy(reshape(model.forward(cx), {-1, check.vocab}), cy); },
          [&](Gpt model, const Gradients& grads) { return copt.step(std::move(model), grads, 3e-4); });
    }
    optim::AdamW opt(adamw);
    auto x = DynTensor::randint({batch, g.context}, 0, g.vocab, DType::i64, dev);
    auto y = DynTensor::randint({batch * g.context}, 0, g.vocab, DType::i64, dev);
    auto eager_step = [&] {
      DynTensor logits = m.forward(x);
      DynTensor loss = nn::cross_entropy(reshape(logits, {-1, g.vocab}), y);
      m = opt.step(std::move(m), loss.backward(), 3e-4);
    };
    // peak memory over the timed steps, after a first one (the optimizer state exists), with
    // only this model alive: as the peer measures it (torch.cuda.reset_peak_memory_stats)
    if (!g_fusion_only) {
      eager_step();
      gpu.sync();
      gpu.backend().reset_peak_memory();
      r.ms = time_ms(gpu, eager_step);
      r.set("peak_bytes", double(gpu.memory_stats().peak));
    }
    if (!g_eager_only) {  // the same step on the fusion decorator (autodiff on top): issue 25's train-step targets
      Device fdev = gpu.fusion().autodiff();
      fdev.seed(1);
      Gpt fm = gpt(g, fdev);
      optim::AdamW fopt(adamw);
      auto fx = DynTensor::randint({batch, g.context}, 0, g.vocab, DType::i64, fdev);
      auto fy = DynTensor::randint({batch * g.context}, 0, g.vocab, DType::i64, fdev);
      const double fusion_ms = time_ms(fdev, [&] {
        DynTensor logits = fm.forward(fx);
        DynTensor loss = nn::cross_entropy(reshape(logits, {-1, g.vocab}), fy);
        fm = fopt.step(std::move(fm), loss.backward(), 3e-4);
      });
      r.set("fusion_ms", fusion_ms);
      if (g_fusion_only) r.ms = fusion_ms;  // (no eager time to compare with)
      else r.set("speedup_fusion_vs_eager", r.ms / fusion_ms);
      graph_step_bench(r, fdev, fm, adamw, 3e-4, [&](const Gpt& model) {
        return nn::cross_entropy(reshape(model.forward(fx), {-1, g.vocab}), fy);
      });
    }
    cuda::set_allow_tf32(false);
    std::ostringstream shape;
    shape << g.layers << " layers, d_model " << g.d << ", " << g.heads << " heads, vocabulary " << g.vocab << ", batch "
          << batch << " x " << g.context << " tokens, AdamW + clip"
          << (tf32 ? ", TF32 matmuls" : prec == Precision::bf16 ? ", bf16 autocast" : "");
    r.set_text("shape", shape.str());
    const double tokens_per_s = double(batch * g.context) / (r.ms * 1e-3);
    r.set("tokens_per_s", tokens_per_s);
    if (prec == Precision::bf16) r.set("mfu", 6.0 * double(nn::num_params(m)) * tokens_per_s / 989e12);
  });
}

// ResNet-18 inference on a batch of 3x224x224 images from the ONNX file that
// bench/export_resnet18.py writes (BatchNorm folded into the convs; its weights travel as f16 and
// bench.sh cuda expands them). The PyTorch side runs the same weights in a plain eager definition.
// Before timing, the reference input must give PyTorch's output (exported with it) to 1e-4 of
// its largest magnitude, so both sides are known to compute the same function.
void onnx_resnet18_bench(int64_t batch) {
  bench("onnx_resnet18_b" + std::to_string(batch), [&](Result& r) {
    const char* env = std::getenv("EMBER_BENCH_MODELS");
    const std::filesystem::path dir = env && *env ? env : "build/bench-models";
    for (const char* f : {"resnet18.onnx", "resnet18.weights", "resnet18_ref.safetensors"})
      if (!std::filesystem::exists(dir / f))
        throw std::runtime_error((dir / f).string() + " missing: run /usr/bin/python3 bench/export_resnet18.py "
                                 "where torchvision is installed and bring build/bench-models/ (docs/benchmarks.md)");
    Device gpu = Device::cuda(0);
    cuda::set_allow_tf32(false);  // f32 convs and Gemm
    const onnx::Model model = onnx::Model::load((dir / "resnet18.onnx").string(), gpu);

    const nn::NamedTensors ref = nn::read_tensors((dir / "resnet18_ref.safetensors").string(), Device::cpu());
    auto ref_tensor = [&](const std::string& name) {
      for (const auto& [k, t] : ref)
        if (k == name) return t;
      throw std::runtime_error("resnet18_ref.safetensors has no tensor " + name);
    };
    const std::vector<float> want = ref_tensor("output").to_vector<float>();
    const std::vector<float> got =
        model.run({{"input", ref_tensor("input").to(gpu)}}).at("output").to(Device::cpu()).to_vector<float>();
    if (got.size() != want.size()) throw std::runtime_error("output has " + std::to_string(got.size()) + " values");
    double max_diff = 0, max_ref = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      max_diff = std::max(max_diff, std::abs(double(got[i]) - double(want[i])));
      max_ref = std::max(max_ref, std::abs(double(want[i])));
    }
    r.set("check_rel_err", max_diff / max_ref);
    if (!(max_diff <= 1e-4 * max_ref))
      throw std::runtime_error("output differs from PyTorch's: max |diff| " + std::to_string(max_diff) +
                               " > 1e-4 * max |ref| " + std::to_string(max_ref));

    auto x = DynTensor::normal({batch, 3, 224, 224}, 0, 1, DType::f32, gpu);
    r.ms = time_ms(gpu, [&] { (void)model.run({{"input", x}}); });
    r.set("images_per_s", double(batch) / (r.ms * 1e-3));
  });
}

}  // namespace

// `--first-step`: one GPT-2-small training step (TF32, batch 8) in this new process, then exit
// at once; the parent (the gpt2_cold_start row) times the whole process.
int first_step() {
  if (!cuda::available()) return 2;
  Device gpu = Device::cuda(0);
  cuda::set_allow_tf32(true);
  const GptShape g{.vocab = 50257, .context = 1024, .d = 768, .heads = 12, .layers = 12};
  Device dev = gpu.autodiff();
  dev.seed(1);
  Gpt m = gpt(g, dev);
  optim::AdamW opt(optim::AdamWConfig{.weight_decay = 0.01, .clipping = optim::GradientClipping::by_norm(1.0)});
  auto x = DynTensor::randint({8, g.context}, 0, g.vocab, DType::i64, dev);
  auto y = DynTensor::randint({8 * g.context}, 0, g.vocab, DType::i64, dev);
  DynTensor loss = nn::cross_entropy(reshape(m.forward(x), {-1, g.vocab}), y);
  m = opt.step(std::move(m), loss.backward(), 3e-4);
  gpu.sync();
  std::fflush(stdout);
  std::_Exit(0);  // the step is what is timed, not the teardown
}

// The gpt2_cold_start row: wall time of a new process up to the end of its first GPT-2 training
// step (`--first-step`), with an empty kernel/autotune cache directory and then with the same,
// now warm, directory (issue 25: the warm start at most 2 s).
void cold_start_bench(const char* self) {
  bench("gpt2_cold_start", [&](Result& r) {
    const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("ember-cold-" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    auto run = [&] {
      const std::string cmd = "EMBER_CACHE_DIR='" + dir.string() + "' '" + self + "' --first-step";
      const double t0 = now_ms();
      const int rc = std::system(cmd.c_str());
      const double t = now_ms() - t0;
      if (rc != 0) throw std::runtime_error("gpt2_cold_start: '" + cmd + "' failed with status " + std::to_string(rc));
      return t;
    };
    const double cold = run(), warm = run();
    std::filesystem::remove_all(dir);
    r.ms = warm;
    r.set("cold_s", cold / 1e3);
    r.set("warm_s", warm / 1e3);
    r.set("warm_target_met", warm <= 2000 ? 1.0 : 0.0);
    r.set_text("check", "not applicable");
    r.set_text("check_detail", "times process start-up; the step's result is checked by gpt2_small_train_step_tf32");
  });
}

int main(int argc, char** argv) {
  std::string out = "build/reports/bench-cuda-ember.json";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--first-step") return first_step();
    if (a == "--out" && i + 1 < argc) out = argv[++i];
    else if (a == "--filter" && i + 1 < argc) g_filter = argv[++i];
    else if (a == "--check-dir" && i + 1 < argc) g_check_dir = argv[++i];
    else if (a == "--eager-only") g_eager_only = true;
    else if (a == "--fusion-only") g_fusion_only = true;
  }
  // No stale check data: cuda_peer.py must find only what this run wrote.
  if (std::filesystem::is_directory(g_check_dir))
    for (const auto& e : std::filesystem::directory_iterator(g_check_dir))
      if (e.path().extension() == ".safetensors") std::filesystem::remove(e.path());
  if (!cuda::available()) {
    std::cerr << "bench_cuda: no GPU: " << cuda::describe_devices() << "\n";
    return 2;
  }
  Device gpu = Device::cuda(0);
  gpu.seed(0);

  matmul_bench("matmul_bf16_8192", DType::bf16, 8192, false);
  matmul_bench("matmul_f32_4096", DType::f32, 4096, false);
  matmul_bench("matmul_tf32_4096", DType::f32, 4096, true);

  bench("add_f32_256M", [&](Result& r) {
    auto ca = DynTensor::normal({int64_t(1) << 20}, 0, 1, DType::f32, gpu);
    auto cb = DynTensor::normal({int64_t(1) << 20}, 0, 1, DType::f32, gpu);
    save_check(r, {{"a", ca}, {"b", cb}}, {{"y", ca + cb}});
    const int64_t n = int64_t(256) << 20;
    auto a = DynTensor::normal({n}, 0, 1, DType::f32, gpu);
    auto b = DynTensor::normal({n}, 0, 1, DType::f32, gpu);
    r.ms = time_ms(gpu, [&] { (void)(a + b); });
    r.set("gbps", 3.0 * double(n) * 4 / (r.ms * 1e-3) / 1e9);
  });

  // broadcast and strided elementwise (not targets): a bias row added to every row, and an
  // operand read through a transpose
  bench("add_bias_f32_8192x4096", [&](Result& r) {
    auto cx = DynTensor::normal({64, 4096}, 0, 1, DType::f32, gpu);
    auto x = DynTensor::normal({8192, 4096}, 0, 1, DType::f32, gpu);
    auto b = DynTensor::normal({4096}, 0, 1, DType::f32, gpu);
    save_check(r, {{"x", cx}, {"b", b}}, {{"y", cx + b}});
    r.ms = time_ms(gpu, [&] { (void)(x + b); });
  });
  bench("add_transposed_f32_8192x4096", [&](Result& r) {
    auto cx = DynTensor::normal({64, 4096}, 0, 1, DType::f32, gpu);
    auto cyt = DynTensor::normal({4096, 64}, 0, 1, DType::f32, gpu);  // the check reads its transpose
    save_check(r, {{"x", cx}, {"yt", cyt}}, {{"y", cx + transpose(cyt, 0, 1)}});
    auto x = DynTensor::normal({8192, 4096}, 0, 1, DType::f32, gpu);
    auto y = transpose(DynTensor::normal({4096, 8192}, 0, 1, DType::f32, gpu), 0, 1);
    r.ms = time_ms(gpu, [&] { (void)(x + y); });
  });

  bench("contiguous_transposed_f32_8192x4096", [&](Result& r) {
    auto cyt = DynTensor::normal({4096, 64}, 0, 1, DType::f32, gpu);
    save_check(r, {{"yt", cyt}}, {{"y", contiguous(transpose(cyt, 0, 1))}});
    auto y = transpose(DynTensor::normal({4096, 8192}, 0, 1, DType::f32, gpu), 0, 1);
    r.ms = time_ms(gpu, [&] { (void)contiguous(y); });
  });

  // more of the op surface (not targets): lookups, scatters, scans, sorting, pooling, losses,
  // concatenation, resampling, inference batch norm
  bench("embedding_f32_50257x1024_8192", [&](Result& r) {
    auto cw = DynTensor::normal({1000, 1024}, 0, 1, DType::f32, gpu);
    auto cix = DynTensor::randint({512}, 0, 1000, DType::i64, gpu);
    save_check(r, {{"w", cw}, {"ix", cix}}, {{"y", embedding(cw, cix)}});
    auto w = DynTensor::normal({50257, 1024}, 0, 1, DType::f32, gpu);
    auto ix = DynTensor::randint({8192}, 0, 50257, DType::i64, gpu);
    r.ms = time_ms(gpu, [&] { (void)embedding(w, ix); });
  });
  bench("scatter_add_f32_8192x4096_into_1024", [&](Result& r) {
    auto cz = DynTensor::normal({64, 4096}, 0, 1, DType::f32, gpu);
    auto cix = DynTensor::randint({256, 4096}, 0, 64, DType::i64, gpu);
    auto csrc = DynTensor::normal({256, 4096}, 0, 1, DType::f32, gpu);
    save_check(r, {{"z", cz}, {"ix", cix}, {"src", csrc}}, {{"y", scatter_add(cz, 0, cix, csrc)}});
    auto z = DynTensor::zeros({1024, 4096}, DType::f32, gpu);
    auto ix = DynTensor::randint({8192, 4096}, 0, 1024, DType::i64, gpu);
    auto src = DynTensor::normal({8192, 4096}, 0, 1, DType::f32, gpu);
    r.ms = time_ms(gpu, [&] { (void)scatter_add(z, 0, ix, src); });
  });
  bench("cumsum_f32_8192x4096", [&](Result& r) {
    auto cx = DynTensor::normal({16, 4096}, 0, 1, DType::f32, gpu);
    save_check(r, {{"x", cx}}, {{"y", cumsum(cx, -1)}});
    auto x = DynTensor::normal({8192, 4096}, 0, 1, DType::f32, gpu);
    r.ms = time_ms(gpu, [&] { (void)cumsum(x, -1); });
  });
  bench("sort_f32_8192x4096", [&](Result& r) {
    save_sort_check(r, {16, 4096}, gpu, [](const DynTensor& x) { return sort(x, -1); });
    auto x = DynTensor::normal({8192, 4096}, 0, 1, DType::f32, gpu);
    r.ms = time_ms(gpu, [&] { (void)sort(x, -1); });
  });
  bench("topk_f32_8192x4096_k10", [&](Result& r) {
    save_sort_check(r, {16, 4096}, gpu, [](const DynTensor& x) { return topk(x, 10, -1); });
    auto x = DynTensor::normal({8192, 4096}, 0, 1, DType::f32, gpu);
    r.ms = time_ms(gpu, [&] { (void)topk(x, 10, -1); });
  });
  bench("sort_f32_4x1M", [&](Result& r) {  // few long rows
    save_sort_check(r, {1, int64_t(1) << 20}, gpu, [](const DynTensor& x) { return sort(x, -1); });
    auto x = DynTensor::normal({4, int64_t(1) << 20}, 0, 1, DType::f32, gpu);
    r.ms = time_ms(gpu, [&] { (void)sort(x, -1); });
  });
  bench("topk_f32_4x1M_k10", [&](Result& r) {  // few long rows
    save_sort_check(r, {1, int64_t(1) << 20}, gpu, [](const DynTensor& x) { return topk(x, 10, -1); });
    auto x = DynTensor::normal({4, int64_t(1) << 20}, 0, 1, DType::f32, gpu);
    r.ms = time_ms(gpu, [&] { (void)topk(x, 10, -1); });
  });
  bench("maxpool2d_f32_32x64x112x112", [&](Result& r) {
    auto x = DynTensor::normal({32, 64, 112, 112}, 0, 1, DType::f32, gpu);
    PoolOptions o;
    o.kernel_size = {3};
    o.stride = {2};
    o.padding = {1};
    auto cx = DynTensor::normal({2, 8, 112, 112}, 0, 1, DType::f32, gpu);
    save_check(r, {{"x", cx}}, {{"y", max_pool2d(cx, o)}});
    r.ms = time_ms(gpu, [&] { (void)max_pool2d(x, o); });
  });
  bench("cross_entropy_f32_8192x1000", [&](Result& r) {
    auto cx = DynTensor::normal({256, 1000}, 0, 1, DType::f32, gpu);
    auto cy = DynTensor::randint({256}, 0, 1000, DType::i64, gpu);
    save_check(r, {{"x", cx}, {"y", cy}}, {{"loss", nn::cross_entropy(cx, cy)}});
    auto x = DynTensor::normal({8192, 1000}, 0, 1, DType::f32, gpu);
    auto y = DynTensor::randint({8192}, 0, 1000, DType::i64, gpu);
    r.ms = time_ms(gpu, [&] { (void)nn::cross_entropy(x, y); });
  });
  bench("cat_f32_2x4096x4096_dim1", [&](Result& r) {
    auto ca = DynTensor::normal({64, 4096}, 0, 1, DType::f32, gpu);
    auto cb = DynTensor::normal({64, 4096}, 0, 1, DType::f32, gpu);
    save_check(r, {{"a", ca}, {"b", cb}}, {{"y", cat({ca, cb}, 1)}});
    auto a = DynTensor::normal({4096, 4096}, 0, 1, DType::f32, gpu);
    auto b = DynTensor::normal({4096, 4096}, 0, 1, DType::f32, gpu);
    r.ms = time_ms(gpu, [&] { (void)cat({a, b}, 1); });
  });
  bench("interpolate_bilinear_f32_16x64x112x112_x2", [&](Result& r) {
    auto cx = DynTensor::normal({1, 4, 112, 112}, 0, 1, DType::f32, gpu);
    save_check(r, {{"x", cx}}, {{"y", interpolate(cx, {224, 224}, InterpMode::linear)}});
    auto x = DynTensor::normal({16, 64, 112, 112}, 0, 1, DType::f32, gpu);
    r.ms = time_ms(gpu, [&] { (void)interpolate(x, {224, 224}, InterpMode::linear); });
  });
  bench("batchnorm_eval_f32_32x64x112x112", [&](Result& r) {
    auto x = DynTensor::normal({32, 64, 112, 112}, 0, 1, DType::f32, gpu);
    auto m = DynTensor::normal({64}, 0, 1, DType::f32, gpu);
    auto v = DynTensor::uniform({64}, 0.5, 2, DType::f32, gpu);
    auto w = DynTensor::normal({64}, 1, 0.1, DType::f32, gpu);
    auto b = DynTensor::normal({64}, 0, 0.1, DType::f32, gpu);
    auto cx = DynTensor::normal({1, 64, 112, 112}, 0, 1, DType::f32, gpu);
    save_check(r, {{"x", cx}, {"mean", m}, {"var", v}, {"weight", w}, {"bias", b}},
               {{"y", batch_norm(cx, m, v, w, b)}});
    r.ms = time_ms(gpu, [&] { (void)batch_norm(x, m, v, w, b); });
  });

  bench("softmax_f32_8192x4096", [&](Result& r) {
    auto cx = DynTensor::normal({16, 4096}, 0, 1, DType::f32, gpu);
    save_check(r, {{"x", cx}}, {{"y", softmax(cx, -1)}});
    auto x = DynTensor::normal({8192, 4096}, 0, 1, DType::f32, gpu);
    r.ms = time_ms(gpu, [&] { (void)softmax(x, -1); });
    r.set("us", r.ms * 1e3);
    r.set("gbps", 2.0 * 8192 * 4096 * 4 / (r.ms * 1e-3) / 1e9);
  });

  // softmax at other row lengths and in bf16 (not targets)
  for (auto [rows, cols, dt] : {std::tuple{int64_t(32768), int64_t(1024), DType::f32},
                                std::tuple{int64_t(2048), int64_t(16384), DType::f32},
                                std::tuple{int64_t(1024), int64_t(32768), DType::f32},
                                std::tuple{int64_t(8192), int64_t(4096), DType::bf16}}) {
    bench("softmax_" + std::string(dtype_name(dt)) + "_" + std::to_string(rows) + "x" + std::to_string(cols),
          [&](Result& r) {
            auto cx = DynTensor::normal({16, cols}, 0, 1, dt, gpu);
            save_check(r, {{"x", cx}}, {{"y", softmax(cx, -1)}});
            auto x = DynTensor::normal({rows, cols}, 0, 1, dt, gpu);
            r.ms = time_ms(gpu, [&] { (void)softmax(x, -1); });
            r.set("us", r.ms * 1e3);
          });
  }

  bench("layernorm_f32_8192x4096", [&](Result& r) {
    auto x = DynTensor::normal({8192, 4096}, 0, 1, DType::f32, gpu);
    auto w = DynTensor::normal({4096}, 1, 0.1, DType::f32, gpu);
    auto b = DynTensor::normal({4096}, 0, 0.1, DType::f32, gpu);
    auto cx = DynTensor::normal({16, 4096}, 0, 1, DType::f32, gpu);
    save_check(r, {{"x", cx}, {"weight", w}, {"bias", b}}, {{"y", layer_norm(cx, {4096}, w, b)}});
    r.ms = time_ms(gpu, [&] { (void)layer_norm(x, {4096}, w, b); });
    r.set("us", r.ms * 1e3);
    r.set("gbps", 2.0 * 8192 * 4096 * 4 / (r.ms * 1e-3) / 1e9);
  });

  // layer norm at other row lengths and in bf16 (not targets)
  for (auto [rows, cols, dt] : {std::tuple{int64_t(32768), int64_t(1024), DType::f32},
                                std::tuple{int64_t(2048), int64_t(16384), DType::f32},
                                std::tuple{int64_t(8192), int64_t(4096), DType::bf16}}) {
    bench("layernorm_" + std::string(dtype_name(dt)) + "_" + std::to_string(rows) + "x" + std::to_string(cols),
          [&](Result& r) {
            auto x = DynTensor::normal({rows, cols}, 0, 1, dt, gpu);
            auto w = DynTensor::normal({cols}, 1, 0.1, dt, gpu);
            auto b = DynTensor::normal({cols}, 0, 0.1, dt, gpu);
            auto cx = DynTensor::normal({16, cols}, 0, 1, dt, gpu);
            save_check(r, {{"x", cx}, {"weight", w}, {"bias", b}}, {{"y", layer_norm(cx, {cols}, w, b)}});
            r.ms = time_ms(gpu, [&] { (void)layer_norm(x, {cols}, w, b); });
            r.set("us", r.ms * 1e3);
          });
  }

  bench("gelu_f32_32x512x2048", [&](Result& r) {
    auto cx = DynTensor::normal({1, 512, 2048}, 0, 1, DType::f32, gpu);
    save_check(r, {{"x", cx}}, {{"y", gelu(cx)}});
    auto x = DynTensor::normal({32, 512, 2048}, 0, 1, DType::f32, gpu);
    r.ms = time_ms(gpu, [&] { (void)gelu(x); });
    r.set("us", r.ms * 1e3);
  });

  // User compositions of plain tensor ops on Device::cuda(0).fusion() (one fused kernel where
  // the fusers take the chain), against ember without fusion (`unfused_us`) and, in
  // cuda_peer.py, PyTorch eager and torch.compile. fusion::flush runs the queue at every call
  // (the result is held, so it is computed) without a host synchronisation.
  {
    const Device fgpu = gpu.fusion();
    auto gelu_custom = [](const DynTensor& x) { return x * 0.5 * (1 + erf(x / std::sqrt(2.0))); };
    auto softmax_custom = [](const DynTensor& x) {
      auto e = exp(x - max(x, {-1}, true));
      return e / sum(e, {-1}, true);
    };
    auto rmsnorm_custom = [](const DynTensor& x, const DynTensor& w) {
      return x * rsqrt(mean(x * x, {-1}, true) + 1e-6) * w;
    };
    auto custom_row = [&](const std::string& name, Shape shape, Shape check_shape,
                          const std::function<DynTensor(const DynTensor&, const DynTensor&)>& f) {
      bench(name, [&](Result& r) {
        auto cx = DynTensor::normal(check_shape, 0, 1, DType::f32, gpu);
        auto cw = DynTensor::normal({check_shape[-1]}, 0, 1, DType::f32, gpu);
        auto cxf = DynTensor::from_data(cx.into_data(), fgpu), cwf = DynTensor::from_data(cw.into_data(), fgpu);
        save_check(r, {{"x", cx}, {"w", cw}}, {{"y", f(cxf, cwf).to(gpu)}});
        auto x = DynTensor::normal(shape, 0, 1, DType::f32, gpu);
        auto w = DynTensor::normal({shape[-1]}, 0, 1, DType::f32, gpu);
        auto xf = DynTensor::from_data(x.into_data(), fgpu), wf = DynTensor::from_data(w.into_data(), fgpu);
        fusion::reset_stats(fgpu.backend());
        r.ms = time_ms(fgpu, [&] {
          auto y = f(xf, wf);
          fusion::flush(fgpu.backend());
        });
        auto st = fusion::stats(fgpu.backend());
        r.set("us", r.ms * 1e3);
        r.set("fused_groups_per_call", st.flushes ? double(st.groups_fused) / double(st.flushes) : 0.0);
        const double unfused_ms = time_ms(gpu, [&] { (void)f(x, w); });
        r.set("unfused_us", unfused_ms * 1e3);
        r.set("speedup_vs_unfused", unfused_ms / r.ms);
      });
    };
    custom_row("gelu_custom_f32", {32, 512, 2048}, {1, 512, 2048},
               [&](const DynTensor& x, const DynTensor&) { return gelu_custom(x); });
    custom_row("softmax_custom_f32", {8192, 4096}, {256, 4096},
               [&](const DynTensor& x, const DynTensor&) { return softmax_custom(x); });
    custom_row("rmsnorm_custom_f32", {8192, 4096}, {256, 4096},
               [&](const DynTensor& x, const DynTensor& w) { return rmsnorm_custom(x, w); });
  }

  bench("sum_f32_64M", [&](Result& r) {
    auto cx = DynTensor::normal({int64_t(1) << 20}, 0, 1, DType::f32, gpu);
    save_check(r, {{"x", cx}}, {{"y", sum(cx)}});
    auto x = DynTensor::normal({int64_t(64) << 20}, 0, 1, DType::f32, gpu);
    r.ms = time_ms(gpu, [&] { (void)sum(x); });
    r.set("gbps", double(int64_t(64) << 20) * 4 / (r.ms * 1e-3) / 1e9);
  });

  bench("overhead_add_1", [&](Result& r) {
    // The host-side cost of launching a tiny op (burst_ms). "throughput_us" is the same loop
    // with the GPU in it; "driver_launch_us" the bare cuLaunchKernel of an empty kernel, so that
    // "ember_own_us" is ember's share: dispatch, shape inference, allocation, kernel lookup.
    auto a = DynTensor::ones({1}, DType::f32, gpu);
    auto b = DynTensor::ones({1}, DType::f32, gpu);
    save_check(r, {{"a", a}, {"b", b}}, {{"y", a + b}});
    r.ms = burst_ms(gpu, [&] { (void)(a + b); });
    r.set("us", r.ms * 1e3);
    r.set("throughput_us", time_ms(gpu, [&] { (void)(a + b); }) * 1e3);
    const double floor_ms = driver_launch_ms(gpu);
    r.set("driver_launch_us", floor_ms * 1e3);
    r.set("ember_own_us", (r.ms - floor_ms) * 1e3);
  });

  bench("conv2d_f32_16x64x56x56_k3", [&](Result& r) {
    auto x = DynTensor::normal({16, 64, 56, 56}, 0, 1, DType::f32, gpu);
    auto w = DynTensor::normal({64, 64, 3, 3}, 0, 0.05, DType::f32, gpu);
    ConvOptions o;
    o.padding = {1, 1};
    cuda::set_allow_tf32(false);
    auto cx = DynTensor::normal({2, 64, 56, 56}, 0, 1, DType::f32, gpu);
    save_check(r, {{"x", cx}, {"w", w}}, {{"y", conv2d(cx, w, std::nullopt, o)}});
    r.ms = time_ms(gpu, [&] { (void)conv2d(x, w, std::nullopt, o); });
  });

  bench("mlp_train_step_f32", [&](Result& r) {
    Device dev = gpu.autodiff();
    dev.seed(1);
    Mlp m{nn::LinearConfig{784, 512}.init(dev), nn::LinearConfig{512, 512}.init(dev), nn::LinearConfig{512, 10}.init(dev)};
    auto opt = optim::AdamConfig{}.init();
    auto x = DynTensor::normal({256, 784}, 0, 1, DType::f32, dev);
    auto y = DynTensor::randint({256}, 0, 10, DType::i64, dev);
    auto check_opt = optim::AdamConfig{}.init();  // the check: the first step, of a copy of m
    save_step_check<Mlp>(
        r, m, {{"x", x}, {"y", y}}, [&](const Mlp& c) { return nn::cross_entropy(c.forward(x), y); },
        [&](Mlp c, const Gradients& g) { return check_opt.step(std::move(c), g, 1e-3); });
    int64_t steps = 0;
    auto step = [&] {
      DynTensor loss = nn::cross_entropy(m.forward(x), y);
      m = opt.step(std::move(m), loss.backward(), 1e-3);
      ++steps;
    };
    r.ms = time_ms(gpu, step);
    {  // the same step on the fusion decorator (autodiff on top)
      Device fdev = gpu.fusion().autodiff();
      fdev.seed(1);
      Mlp fm{nn::LinearConfig{784, 512}.init(fdev), nn::LinearConfig{512, 512}.init(fdev),
             nn::LinearConfig{512, 10}.init(fdev)};
      auto fopt = optim::AdamConfig{}.init();
      auto fx = DynTensor::normal({256, 784}, 0, 1, DType::f32, fdev);
      auto fy = DynTensor::randint({256}, 0, 10, DType::i64, fdev);
      const double fusion_ms = time_ms(fdev, [&] {
        DynTensor loss = nn::cross_entropy(fm.forward(fx), fy);
        fm = fopt.step(std::move(fm), loss.backward(), 1e-3);
      });
      r.set("fusion_ms", fusion_ms);
      if (g_fusion_only) r.ms = fusion_ms;  // (no eager time to compare with)
      else r.set("speedup_fusion_vs_eager", r.ms / fusion_ms);
      graph_step_bench(r, fdev, fm, optim::AdamConfig{}, 1e-3,
                       [&](const Mlp& c) { return nn::cross_entropy(c.forward(fx), fy); });
    }
    // No memory growth: the pool's reserved bytes after 100 and after 10,000 more steps.
    for (int i = 0; i < 100; ++i) step();
    gpu.sync();
    double reserved_100 = double(gpu.memory_stats().reserved);
    for (int i = 0; i < 10000; ++i) step();
    gpu.sync();
    double reserved_10k = double(gpu.memory_stats().reserved);
    r.set("reserved_bytes_step_100", reserved_100);
    r.set("reserved_bytes_step_10100", reserved_10k);
    r.set("memory_growth_bytes", reserved_10k - reserved_100);
    r.set("steps", double(steps));
  });

  const GptShape small{.vocab = 96, .context = 64, .d = 128, .heads = 4, .layers = 2};
  gpt_train_bench("transformer_train_step_f32", gpu, small, 32, Precision::f32, small);
  // checked on 2 layers of width 256 (head size 64, as GPT-2's) and a vocabulary of 512
  const GptShape gpt2_small{.vocab = 50257, .context = 1024, .d = 768, .heads = 12, .layers = 12};
  const GptShape gpt2_check{.vocab = 512, .context = 128, .d = 256, .heads = 4, .layers = 2};
  gpt_train_bench("gpt2_small_train_step_tf32", gpu, gpt2_small, 8, Precision::tf32, gpt2_check);
  gpt_train_bench("gpt2_small_train_bf16", gpu, gpt2_small, 8, Precision::bf16, gpt2_check);
  cold_start_bench(argv[0]);

  bench("attention_bf16", [&](Result& r) {
    Device dev = gpu.autodiff();
    auto mk = [&] { return DynTensor::normal({8, 12, 1024, 64}, 0, 1, DType::f32, dev).cast(DType::bf16); };
    auto q0 = mk(), k0 = mk(), v0 = mk(), up = mk();
    {  // the check: forward and backward on 256 positions
      auto ck = [&] { return DynTensor::normal({2, 12, 256, 64}, 0, 1, DType::f32, dev).cast(DType::bf16); };
      DynTensor q = ck().require_grad(), k = ck().require_grad(), v = ck().require_grad(), cup = ck();
      DynTensor o = scaled_dot_product_attention(q, k, v, std::nullopt, true);
      Gradients g = o.backward(cup);
      save_check(r, {{"q", q}, {"k", k}, {"v", v}, {"up", cup}},
                 {{"o", o}, {"dq", *g.get(q)}, {"dk", *g.get(k)}, {"dv", *g.get(v)}});
    }
    r.ms = time_ms(gpu, [&] {
      DynTensor q = q0.require_grad(), k = k0.require_grad(), v = v0.require_grad();
      DynTensor o = scaled_dot_product_attention(q, k, v, std::nullopt, true);
      Gradients g = o.backward(up);
      (void)g;
    });
    r.set_text("shape", "[8,12,1024,64] causal, forward+backward");
    // The forward alone (no graph recorded), to split the time between the two passes.
    r.set("forward_us", time_ms(gpu, [&] {
      NoGradGuard off;
      (void)scaled_dot_product_attention(q0, k0, v0, std::nullopt, true);
    }) * 1e3);
  });

  onnx_resnet18_bench(1);
  onnx_resnet18_bench(32);

  std::ofstream f(out + ".tmp");
  f << "[\n";
  for (size_t i = 0; i < g_results.size(); ++i) {
    const Result& r = g_results[i];
    f << "  {\"name\": \"" << r.name << "\", \"ember_ms\": ";
    if (std::isnan(r.ms)) f << "null";
    else f << r.ms;
    for (const auto& [k, v] : r.extra) f << ", \"" << k << "\": " << v;
    f << "}" << (i + 1 < g_results.size() ? "," : "") << "\n";
  }
  f << "]\n";
  f.close();
  std::rename((out + ".tmp").c_str(), out.c_str());
  std::cerr << "ember results: " << out << "\n";
  return 0;
}
