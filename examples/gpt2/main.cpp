// GPT-2 trained from scratch on real English text: a byte-level BPE tokenizer learned from the
// corpus (or GPT-2's own), the model of model.hpp, AdamW with warmup and a cosine schedule,
// gradient accumulation, bf16 autocast (or f16 with a GradScaler), checkpoints and resume, a
// validation loss after every round of steps, the live dashboard, and sampling with temperature
// and top-k. The trained weights are written as safetensors with Hugging Face's GPT-2 names.
//
//   ./build/examples/gpt2 --device cuda --config small --amp bf16        # GPT-2 small, 124M
//   ./build/examples/gpt2 --config tiny --corpus-mb 2 --steps 60        # seconds on a CPU
//   ./build/examples/gpt2 --sample-only --run-dir runs/gpt2 --prompt "The kernel"
//
// Options (defaults in Args below): --device cpu|cuda, --config tiny|small, --corpus PATH (a text
// file or a folder; default the linux-doc-6.1 package's Documentation), --corpus-mb N (read at
// most N MB), --vocab N (BPE vocabulary to learn), --gpt2-vocab DIR (use GPT-2's encoder.json and
// vocab.bpe instead), --steps N (optimizer steps), --batch N, --seq N, --accum N, --lr X,
// --warmup N, --weight-decay X, --amp bf16|f16|off, --fusion, --eval-every N (steps between
// validations), --eval-batches N, --run-dir DIR, --resume, --sample N, --temperature X, --top-k N,
// --prompt TEXT, --sample-only, --seed N, --dump DIR (writes the initial weights, every training
// batch and the settings, for compare_pytorch.py to train the same model on the same data).
//
// The last line printed is "val loss: X" (the final validation loss).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ember/amp.hpp>
#include <ember/core/atomic_write.hpp>
#include <ember/data.hpp>
#include <ember/data/bpe.hpp>
#include <ember/ember.hpp>
#include <ember/nn.hpp>
#include <ember/train/learner.hpp>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "corpus.hpp"
#include "model.hpp"

using namespace ember;
namespace fs = std::filesystem;

struct Args {
  std::string device = "cpu", config = "tiny", corpus = gpt2::kLinuxDoc, gpt2_vocab, amp = "bf16";
  std::string run_dir = "runs/gpt2", prompt = "The kernel", dump;
  double corpus_mb = 0, lr = 0, weight_decay = 0.1, temperature = 0.8;
  int64_t vocab = 0, steps = 0, batch = 0, seq = 0, accum = 1, warmup = -1, eval_every = 0, eval_batches = 8;
  int64_t sample = 200, top_k = 40, seed = 1337;
  bool fusion = false, resume = false, sample_only = false;
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    auto value = [&] {
      EMBER_CHECK(i + 1 < argc, "gpt2: ", k, " needs a value");
      return std::string(argv[++i]);
    };
    auto real = [&] {
      const std::string v = value();
      char* end = nullptr;
      const double x = std::strtod(v.c_str(), &end);
      EMBER_CHECK(!v.empty() && *end == 0 && x >= 0, "gpt2: ", k, " takes a number >= 0, not '", v, "'");
      return x;
    };
    auto count = [&] {
      const std::string v = value();
      char* end = nullptr;
      const long long n = std::strtoll(v.c_str(), &end, 10);
      EMBER_CHECK(!v.empty() && *end == 0 && n >= 0, "gpt2: ", k, " takes a whole number >= 0, not '", v, "'");
      return int64_t(n);
    };
    if (k == "--device") a.device = value();
    else if (k == "--config") a.config = value();
    else if (k == "--corpus") a.corpus = value();
    else if (k == "--corpus-mb") a.corpus_mb = real();
    else if (k == "--vocab") a.vocab = count();
    else if (k == "--gpt2-vocab") a.gpt2_vocab = value();
    else if (k == "--steps") a.steps = count();
    else if (k == "--batch") a.batch = count();
    else if (k == "--seq") a.seq = count();
    else if (k == "--accum") a.accum = std::max<int64_t>(1, count());
    else if (k == "--lr") a.lr = real();
    else if (k == "--warmup") a.warmup = count();
    else if (k == "--weight-decay") a.weight_decay = real();
    else if (k == "--amp") a.amp = value();
    else if (k == "--fusion") a.fusion = true;
    else if (k == "--eval-every") a.eval_every = count();
    else if (k == "--eval-batches") a.eval_batches = std::max<int64_t>(1, count());
    else if (k == "--run-dir") a.run_dir = value();
    else if (k == "--resume") a.resume = true;
    else if (k == "--sample") a.sample = count();
    else if (k == "--temperature") a.temperature = real();
    else if (k == "--top-k") a.top_k = count();
    else if (k == "--prompt") a.prompt = value();
    else if (k == "--sample-only") a.sample_only = true;
    else if (k == "--seed") a.seed = count();
    else if (k == "--dump") a.dump = value();
    else EMBER_FAIL("gpt2: unknown argument ", k, " (see the options at the top of examples/gpt2/main.cpp)");
  }
  EMBER_CHECK(a.config == "tiny" || a.config == "small", "gpt2: --config is tiny or small, not '", a.config, "'");
  EMBER_CHECK(a.amp == "bf16" || a.amp == "f16" || a.amp == "off", "gpt2: --amp is bf16, f16 or off, not '", a.amp, "'");
  const bool tiny = a.config == "tiny";  // defaults per configuration
  if (!a.vocab) a.vocab = tiny ? 1024 : 50257;
  if (!a.steps) a.steps = tiny ? 300 : 5000;
  if (!a.batch) a.batch = tiny ? 16 : 8;
  if (!a.seq) a.seq = tiny ? 128 : 1024;
  if (a.lr == 0) a.lr = tiny ? 3e-3 : 6e-4;
  if (a.warmup < 0) a.warmup = std::min<int64_t>(tiny ? 20 : 700, a.steps / 10);
  if (!a.eval_every) a.eval_every = std::max<int64_t>(1, std::min<int64_t>(tiny ? 100 : 250, a.steps));
  return a;
}

// The run's settings that a resumed run must share, one "key=value" line each.
std::map<std::string, std::string> run_settings(const Args& a, const gpt2::Config& c) {
  return {{"config", a.config}, {"vocab", std::to_string(c.vocab)}, {"layers", std::to_string(c.layers)},
          {"heads", std::to_string(c.heads)}, {"d_model", std::to_string(c.d_model)},
          {"context", std::to_string(c.context)}, {"seq", std::to_string(a.seq)}, {"batch", std::to_string(a.batch)},
          {"accum", std::to_string(a.accum)}, {"corpus", a.corpus}, {"corpus_mb", std::to_string(a.corpus_mb)}};
}

// Writes the settings, or (resuming) checks them against those the run was started with; a
// mismatch is an Error that lists every differing key.
void check_settings(const std::string& path, const std::map<std::string, std::string>& now, bool resume) {
  std::map<std::string, std::string> before;
  if (std::ifstream in(path); in) {
    for (std::string line; std::getline(in, line);)
      if (auto eq = line.find('='); eq != std::string::npos) before[line.substr(0, eq)] = line.substr(eq + 1);
  }
  if (resume && !before.empty()) {
    std::string diff;
    for (const auto& [k, v] : now) {
      auto it = before.find(k);
      const std::string was = it == before.end() ? "(absent)" : it->second;
      if (was != v) diff += "\n  " + k + ": checkpoint " + was + ", now " + v;
    }
    EMBER_CHECK(diff.empty(), "gpt2: --resume from ", path, " of another configuration; mismatched keys:", diff);
    return;
  }
  std::string text;
  for (const auto& [k, v] : now) text += k + "=" + v + "\n";
  fs::create_directories(fs::path(path).parent_path());
  EMBER_CHECK(write_file_atomically(path, text), "gpt2: cannot write ", path);
}

// The tokenizer: GPT-2's files, the run's own from an earlier run, or learned now from the
// training split (and saved in the run dir).
data::BpeTokenizer make_tokenizer(const Args& a, const gpt2::Corpus& corpus) {
  if (!a.gpt2_vocab.empty())
    return data::BpeTokenizer::from_gpt2_files(a.gpt2_vocab + "/encoder.json", a.gpt2_vocab + "/vocab.bpe");
  const std::string dir = a.run_dir + "/tokenizer";
  if (fs::exists(dir + "/encoder.json")) return data::BpeTokenizer::load(dir);
  std::printf("learning a BPE vocabulary of %lld tokens from %zu documents...\n", (long long)a.vocab,
              corpus.train.size());
  std::fflush(stdout);
  auto tok = data::BpeTokenizer::train(corpus.train, {.vocab_size = int32_t(a.vocab)});
  tok.save(dir);
  return tok;
}

// Documents as one token stream, each followed by <|endoftext|>.
std::vector<int32_t> tokenize(const data::BpeTokenizer& tok, const std::vector<std::string>& docs) {
  const std::optional<int32_t> eot = tok.token_id("<|endoftext|>");
  std::vector<int32_t> ids;
  for (const std::string& d : docs) {
    std::vector<int32_t> t = tok.encode(d);
    ids.insert(ids.end(), t.begin(), t.end());
    if (eot) ids.push_back(*eot);
  }
  return ids;
}

struct Batch {
  DynTensor x, y;  // i64 [B, T]: tokens and the next tokens
};

// Windows of seq + 1 tokens (stride seq) of a token stream, `per_epoch` of them per epoch (all
// when 0). Training (seed != 0): epoch e takes the next `per_epoch` of a fixed shuffled order of
// all windows, so each round of steps sees new text and a resumed run sees the same windows.
// Validation (seed 0): the first `per_epoch` windows, every time.
class Windows final : public data::Dataset<int64_t> {
 public:
  Windows(std::shared_ptr<const std::vector<int32_t>> ids, int64_t seq, int64_t per_epoch, uint64_t seed)
      : ids_(std::move(ids)), per_epoch_(per_epoch), rotate_(seed != 0) {
    const int64_t n = (int64_t(ids_->size()) - 1) / seq;
    EMBER_CHECK(n >= 1, "gpt2: the text has ", ids_->size(), " tokens, fewer than one window of ", seq + 1);
    order_.resize(size_t(n));
    std::iota(order_.begin(), order_.end(), int64_t(0));
    if (seed) std::shuffle(order_.begin(), order_.end(), std::mt19937_64(seed));
    if (per_epoch_ <= 0) per_epoch_ = n;
  }
  std::optional<int64_t> get(size_t i) const override {
    if (i >= size()) return std::nullopt;
    const uint64_t k = (rotate_ ? data::current_epoch() * uint64_t(per_epoch_) : 0) + i;
    return order_[k % order_.size()];
  }
  size_t size() const override { return size_t(per_epoch_); }

 private:
  std::shared_ptr<const std::vector<int32_t>> ids_;
  std::vector<int64_t> order_;
  int64_t per_epoch_;
  bool rotate_;
};

// Batches of windows; `record`, when given, keeps every batch's tokens (seq + 1 per window), in
// the order they were made (--dump).
data::Batcher<int64_t, Batch> batcher(std::shared_ptr<const std::vector<int32_t>> ids, int64_t seq,
                                      std::shared_ptr<std::vector<int64_t>> record = nullptr) {
  return [ids = std::move(ids), seq, record](std::vector<int64_t> windows, const Device& device) {
    std::vector<int64_t> x, y;
    for (int64_t w : windows) {
      const int32_t* p = ids->data() + w * seq;
      x.insert(x.end(), p, p + seq);
      y.insert(y.end(), p + 1, p + seq + 1);
      if (record) record->insert(record->end(), p, p + seq + 1);
    }
    const auto b = int64_t(windows.size());
    return Batch{DynTensor::from_vector(x, {b, seq}, device), DynTensor::from_vector(y, {b, seq}, device)};
  };
}

// Next tokens after `prompt`: softmax(logits / temperature) over the top_k most likely tokens.
std::string sample(const gpt2::Model& model, const data::BpeTokenizer& tok, const Args& a, const Device& device) {
  std::vector<int32_t> ids = tok.encode(a.prompt);
  EMBER_CHECK(!ids.empty(), "gpt2: --prompt must not be empty");
  const int64_t context = model.wpe.weight.shape()[0];
  std::mt19937_64 rng(uint64_t(a.seed));
  for (int64_t i = 0; i < a.sample; ++i) {
    const auto n = std::min<int64_t>(int64_t(ids.size()), context);
    std::vector<int64_t> window(ids.end() - n, ids.end());
    DynTensor logits = model.forward(DynTensor::from_vector(window, {1, n}, device));
    std::vector<float> last = select(select(logits, 0, 0), 0, n - 1).cast(DType::f32).to_vector<float>();
    std::vector<double> p(last.size());
    const double top = *std::max_element(last.begin(), last.end());
    for (size_t j = 0; j < last.size(); ++j) p[j] = std::exp((double(last[j]) - top) / std::max(a.temperature, 1e-6));
    if (a.top_k > 0 && size_t(a.top_k) < p.size()) {
      std::vector<double> sorted = p;
      std::nth_element(sorted.begin(), sorted.begin() + (a.top_k - 1), sorted.end(), std::greater<>());
      const double kth = sorted[size_t(a.top_k - 1)];
      for (double& v : p)
        if (v < kth) v = 0;
    }
    ids.push_back(int32_t(std::discrete_distribution<int64_t>(p.begin(), p.end())(rng)));
  }
  return tok.decode(ids);
}

// Hugging Face's GPT-2 checkpoints name the same tensors, some under "transformer.", next to the
// attention masks ("attn.bias", "attn.masked_bias") and the tied head ("lm_head.weight").
void load_gpt2(gpt2::Model& model, const std::string& path, const Device& device) {
  nn::NamedTensors kept;
  for (auto& [k, t] : nn::read_tensors(path, device)) {
    if (k.ends_with(".attn.bias") || k.ends_with(".attn.masked_bias") || k == "lm_head.weight") continue;
    kept.emplace_back(k.starts_with("transformer.") ? k.substr(12) : k, std::move(t));
  }
  nn::load_state_dict(model, std::move(kept));
}

int main(int argc, char** argv) try {
  Args a = parse(argc, argv);
  EMBER_CHECK(a.device == "cpu" || a.device == "cuda", "gpt2: --device is cpu or cuda");
  if (a.device == "cuda" && !cuda::available()) {
    std::cerr << "gpt2: --device cuda, but no GPU is usable (" << cuda::describe_devices() << "); use --device cpu\n";
    return 1;
  }
  Device device = a.device == "cuda" ? Device::cuda(0) : Device::cpu();
  if (a.fusion) device = device.fusion();
  fs::create_directories(a.run_dir);

  gpt2::Corpus corpus = gpt2::load_corpus(a.corpus, size_t(a.corpus_mb * 1048576.0));
  data::BpeTokenizer tok = make_tokenizer(a, corpus);
  gpt2::Config cfg = a.config == "small" ? gpt2::Config::small() : gpt2::Config::tiny(tok.vocab_size());
  cfg.vocab = tok.vocab_size();
  cfg.context = std::max(cfg.context, a.seq);
  check_settings(a.run_dir + "/settings.txt", run_settings(a, cfg), a.resume || a.sample_only);

  const std::string weights = a.run_dir + "/model.safetensors";
  if (a.sample_only) {
    gpt2::Model model = gpt2::make_model(cfg, device);
    load_gpt2(model, weights, device);
    std::printf("%s\n", sample(model, tok, a, device).c_str());
    return 0;
  }

  auto train_ids = std::make_shared<const std::vector<int32_t>>(tokenize(tok, corpus.train));
  auto valid_ids = std::make_shared<const std::vector<int32_t>>(tokenize(tok, corpus.valid));
  std::printf("corpus %s: %.1f MB, %zu documents; %zu training tokens, %zu validation tokens (vocabulary %d)\n",
              a.corpus.c_str(), double(corpus.bytes) / 1048576.0, corpus.train.size() + corpus.valid.size(),
              train_ids->size(), valid_ids->size(), tok.vocab_size());

  Device train_device = device.autodiff();
  train_device.seed(uint64_t(a.seed));
  gpt2::Model model = gpt2::make_model(cfg, train_device);
  std::printf("model: GPT-2 %s, %lld parameters (%lld layers, %lld heads, d_model %lld, context %lld); %lld steps of "
              "%lld x %lld x %lld tokens on %s, autocast %s\n",
              a.config.c_str(), (long long)nn::num_params(model), (long long)cfg.layers, (long long)cfg.heads,
              (long long)cfg.d_model, (long long)cfg.context, (long long)a.steps, (long long)a.accum,
              (long long)a.batch, (long long)a.seq, train_device.name().c_str(), a.amp.c_str());

  // Each "epoch" is a round of eval_every optimizer steps, then a validation pass.
  const int64_t rounds = (a.steps + a.eval_every - 1) / a.eval_every;
  // --dump: the initial weights and the settings now, every training batch after the run
  std::shared_ptr<std::vector<int64_t>> record;
  if (!a.dump.empty()) {
    fs::create_directories(a.dump);
    nn::save(model, a.dump + "/init.safetensors", {{"format", "pt"}});
    std::ostringstream js;
    js << "{\"vocab\": " << cfg.vocab << ", \"context\": " << cfg.context << ", \"layers\": " << cfg.layers
       << ", \"heads\": " << cfg.heads << ", \"d_model\": " << cfg.d_model << ", \"batch\": " << a.batch
       << ", \"seq\": " << a.seq << ", \"accum\": " << a.accum << ", \"steps\": " << a.steps
       << ", \"lr\": " << a.lr << ", \"warmup\": " << a.warmup << ", \"weight_decay\": " << a.weight_decay
       << ", \"amp\": \"" << a.amp << "\", \"run_dir\": \"" << a.run_dir << "\"}\n";
    EMBER_CHECK(write_file_atomically(a.dump + "/settings.json", js.str()), "gpt2: cannot write ", a.dump);
    record = std::make_shared<std::vector<int64_t>>();
  }
  auto train_loader = data::DataLoaderBuilder<int64_t, Batch>(batcher(train_ids, a.seq, record))
                          .batch_size(size_t(a.batch))
                          .device(train_device)
                          .build(std::make_shared<Windows>(train_ids, a.seq, a.eval_every * a.accum * a.batch, a.seed));
  // validation: the first eval_batches batches of the held-out windows
  auto valid_subset = data::DataLoaderBuilder<int64_t, Batch>(batcher(valid_ids, a.seq))
                          .batch_size(size_t(a.batch))
                          .device(train_device)
                          .build(std::make_shared<Windows>(
                              valid_ids, a.seq,
                              std::min<int64_t>(a.eval_batches * a.batch, (int64_t(valid_ids->size()) - 1) / a.seq), 0));

  auto train_step = [](gpt2::Model& m, const Batch& b) {
    DynTensor loss = m.loss(b.x, b.y);
    return train::TrainStepResult{{loss, {}, {}}, amp::scale_loss(loss).backward()};
  };
  auto valid_step = [](const gpt2::Model& m, const Batch& b) {
    return train::ClassificationOutput{m.loss(b.x, b.y), {}, {}};
  };
  // AdamW as GPT-2 / nanoGPT train it: betas (0.9, 0.95), decoupled weight decay on the matrices
  // only, gradients clipped to norm 1; linear warmup, then a cosine to a tenth of the peak.
  optim::AdamW opt({.betas = {0.9, 0.95},
                    .weight_decay = a.weight_decay,
                    .groups = {{.pattern = "(bias|ln_[12f]\\.weight)$", .weight_decay = 0.0}},
                    .clipping = optim::GradientClipping::by_norm(1.0)});
  auto warm = std::make_unique<optim::LinearLR>(
      a.lr, optim::LinearLRConfig{.start_factor = 1.0 / double(std::max<int64_t>(1, a.warmup)), .end_factor = 1.0,
                                  .total_iters = std::max<int64_t>(1, a.warmup)});
  auto cosine = std::make_unique<optim::CosineAnnealingLR>(
      a.lr, optim::CosineAnnealingLRConfig{.t_max = std::max<int64_t>(1, a.steps - a.warmup), .eta_min = a.lr / 10});
  std::vector<std::unique_ptr<optim::LrScheduler>> parts;
  parts.push_back(std::move(warm));
  parts.push_back(std::move(cosine));
  auto schedule = std::make_unique<optim::SequentialLR>(std::move(parts), std::vector<int64_t>{a.warmup});

  train::LearnerBuilder<gpt2::Model, Batch> builder(std::move(model), train_step, valid_step);
  builder
                     .optimizer(std::move(opt))
                     .scheduler(std::move(schedule))
                     .epochs(rounds)
                     .grad_accumulation(a.accum)
                     .metrics({})
                     .run_dir(a.run_dir)
                     .checkpoints({.keep_last = 2})
                     .seed(uint64_t(a.seed));
  if (a.amp != "off") builder.mixed_precision(a.amp == "bf16" ? DType::bf16 : DType::f16);
  if (a.resume) builder.resume_from(a.run_dir + "/checkpoints", /*required=*/false);
  auto learner = builder.build();
  gpt2::Model trained = learner.fit(train_loader, valid_subset);

  if (record) {
    const auto n = int64_t(record->size()) / (a.batch * (a.seq + 1));
    nn::write_tensors(a.dump + "/batches.safetensors",
                      {{"tokens", DynTensor::from_vector(*record, {n, a.batch, a.seq + 1}, Device::cpu())}});
  }
  trained = nn::to_device(trained, device);
  nn::set_training(trained, false);
  nn::save(trained, weights, {{"format", "pt"}});
  std::printf("saved %s (Hugging Face GPT-2 names and layouts)\n", weights.c_str());
  if (a.sample > 0) std::printf("\n--- sample (temperature %.2f, top-k %lld) ---\n%s\n---\n", a.temperature,
                                (long long)a.top_k, sample(trained, tok, a, device).c_str());
  const train::EvalResult val = learner.evaluate(valid_subset);
  std::printf("val loss: %.4f\n", val.value("loss"));
  return 0;
} catch (const ember::Error& e) {
  std::cerr << "error: " << e.what() << "\n";
  return 1;
}
