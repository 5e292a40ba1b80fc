// A character-level language model: a small decoder-only (GPT-style) transformer learns to predict
// the next byte of a text file, then writes a sample continuing a prompt. The trained model is saved
// as safetensors, reloaded into a fresh model, and checked to give the same loss.
//
//   ./build/examples/char_transformer [--device cpu|cuda] [--fusion] [--amp bf16|f16] [--text PATH] [--steps N]
//       [--seq N] [--batch N] [--lr X] [--prompt TEXT] [--sample N] [--temperature X]
//
// --amp trains with mixed precision (docs/amp.md): the forward and backward run under an autocast
// scope (matmuls and attention in bf16 or f16, softmax, norms and the loss in f32) while the
// parameters and the optimizer stay f32; f16 adds a GradScaler.
//
// The default text is the GPL (/usr/share/common-licenses/GPL-3, on every Debian system); the
// defaults train in about 40 s on 2 CPU cores. The printed loss is the training loss: on a text
// this small (35 KB) the model learns much of it by heart.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ember/amp.hpp>
#include <ember/ember.hpp>
#include <ember/nn.hpp>
#include <fstream>
#include <iostream>
#include <iterator>
#include <random>
#include <string>
#include <utility>
#include <vector>

using namespace ember;

struct Args {
  std::string device = "cpu", amp = "", text = "/usr/share/common-licenses/GPL-3", prompt = "This License";
  bool fusion = false;
  int64_t steps = 800, seq = 64, batch = 32, sample = 300;
  double lr = 3e-3, temperature = 0.8;
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string k = argv[i];
    auto value = [&] {
      EMBER_CHECK(i + 1 < argc, "char_transformer: ", k, " needs a value");
      return std::string(argv[++i]);
    };
    // a positive number, the whole value (strtoll / strtod report where they stopped reading)
    auto real = [&] {
      const std::string v = value();
      char* end = nullptr;
      const double x = std::strtod(v.c_str(), &end);
      EMBER_CHECK(!v.empty() && *end == 0 && x > 0, "char_transformer: ", k, " takes a positive number, not '", v, "'");
      return x;
    };
    auto count = [&] {
      const std::string v = value();
      char* end = nullptr;
      const long long n = std::strtoll(v.c_str(), &end, 10);
      EMBER_CHECK(!v.empty() && *end == 0 && n > 0, "char_transformer: ", k, " takes a positive whole number, not '",
                  v, "'");
      return int64_t(n);
    };
    if (k == "--device")
      a.device = value();
    else if (k == "--fusion")
      a.fusion = true;
    else if (k == "--amp")
      a.amp = value();
    else if (k == "--text")
      a.text = value();
    else if (k == "--prompt")
      a.prompt = value();
    else if (k == "--steps")
      a.steps = count();
    else if (k == "--seq")
      a.seq = count();
    else if (k == "--batch")
      a.batch = count();
    else if (k == "--sample")
      a.sample = count();
    else if (k == "--lr")
      a.lr = real();
    else if (k == "--temperature")
      a.temperature = real();
    else
      EMBER_FAIL("char_transformer: unknown argument ", k, " (see the usage at the top of main.cpp)");
  }
  return a;
}

// The model: token and position embeddings, pre-norm transformer layers under a causal mask (each
// position sees only itself and earlier ones), a final LayerNorm and a linear head to the vocabulary.
struct CharTransformer {
  nn::Embedding token, position;
  nn::TransformerEncoder layers;
  nn::Linear head;
  EMBER_MODULE(token, position, layers, head)

  DynTensor forward(const DynTensor& tokens) const {  // i64 [N, L], L <= context -> logits [N, L, vocab]
    DynTensor positions = DynTensor::arange(0, tokens.size(1), 1, DType::i64, tokens.device());
    DynTensor x = token.forward(tokens) + position.forward(positions);
    return head.forward(layers.forward(x, {.is_causal = true}));
  }
};

CharTransformer make_model(int64_t vocab, int64_t context, const Device& device) {
  const int64_t d_model = 128;
  const auto small = nn::Initializer::normal(0, 0.02);  // GPT-2's embedding init
  nn::TransformerEncoderLayerConfig layer{.d_model = d_model,
                                          .nhead = 4,
                                          .dim_feedforward = 4 * d_model,
                                          .dropout = 0,
                                          .activation = nn::FeedForwardActivation::gelu,
                                          .batch_first = true,
                                          .norm_first = true};
  return CharTransformer{
      nn::EmbeddingConfig{.num_embeddings = vocab, .embedding_dim = d_model, .initializer = small}.init(device),
      nn::EmbeddingConfig{.num_embeddings = context, .embedding_dim = d_model, .initializer = small}.init(device),
      nn::TransformerEncoderConfig{.layer = layer, .num_layers = 2, .final_norm = true}.init(device),
      nn::LinearConfig{.in_features = d_model, .out_features = vocab}.init(device),
  };
}

// The text as token ids: the vocabulary is the distinct bytes of the file, in byte order.
struct Corpus {
  std::vector<int64_t> ids;
  std::vector<char> chars;      // token id -> byte
  std::vector<int64_t> lookup;  // byte -> token id, or -1
};

Corpus read_corpus(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EMBER_CHECK(in, "char_transformer: cannot read '", path, "' (pass another text file with --text PATH)");
  std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  Corpus c{{}, {}, std::vector<int64_t>(256, -1)};
  for (unsigned char b : text) c.lookup[b] = 0;
  for (int b = 0; b < 256; ++b)
    if (c.lookup[b] == 0) {
      c.lookup[b] = int64_t(c.chars.size());
      c.chars.push_back(char(b));
    }
  for (unsigned char b : text) c.ids.push_back(c.lookup[b]);
  return c;
}

std::vector<int64_t> encode(const Corpus& c, const std::string& text) {
  EMBER_CHECK(!text.empty(), "char_transformer: --prompt must not be empty");
  std::vector<int64_t> ids;
  for (unsigned char b : text) {
    EMBER_CHECK(c.lookup[b] >= 0, "char_transformer: the prompt's byte ", int(b), " does not occur in the text");
    ids.push_back(c.lookup[b]);
  }
  return ids;
}

// `batch` random windows of `seq` tokens (inputs) and the same windows shifted by one (targets).
std::pair<DynTensor, DynTensor> random_batch(const Corpus& c, int64_t batch, int64_t seq, std::mt19937_64& rng,
                                             const Device& device) {
  std::uniform_int_distribution<size_t> start(0, c.ids.size() - size_t(seq) - 1);
  std::vector<int64_t> x, y;
  for (int64_t b = 0; b < batch; ++b) {
    auto window = c.ids.begin() + std::ptrdiff_t(start(rng));
    x.insert(x.end(), window, window + seq);
    y.insert(y.end(), window + 1, window + seq + 1);
  }
  return {DynTensor::from_vector(x, {batch, seq}, device), DynTensor::from_vector(y, {batch, seq}, device)};
}

// Mean next-character cross-entropy: logits [N, L, V] and targets [N, L] flattened to N * L rows.
DynTensor loss_of(const CharTransformer& model, const DynTensor& x, const DynTensor& y) {
  DynTensor logits = model.forward(x);
  return nn::cross_entropy(reshape(logits, {-1, logits.size(2)}), reshape(y, {-1}));
}

int main(int argc, char** argv) try {
  Args args = parse(argc, argv);
  EMBER_CHECK(args.device == "cpu" || args.device == "cuda", "char_transformer: --device is cpu or cuda");
  EMBER_CHECK(args.amp.empty() || args.amp == "bf16" || args.amp == "f16", "char_transformer: --amp is bf16 or f16");
  const DType amp_dtype = args.amp == "f16" ? DType::f16 : args.amp == "bf16" ? DType::bf16 : DType::f32;
  if (args.device == "cuda" && !cuda::available()) {
    std::cerr << "char_transformer: --device cuda, but no GPU is usable. CUDA devices: " << cuda::describe_devices()
              << "\nRun with --device cpu instead.\n";
    return 1;
  }
  Device device = args.device == "cuda" ? Device::cuda(0) : Device::cpu();
  if (args.fusion) device = device.fusion();  // elementwise chains run as fused kernels
  Device train_device = device.autodiff();

  Corpus corpus = read_corpus(args.text);
  EMBER_CHECK(corpus.ids.size() > size_t(args.seq) + 1, "char_transformer: ", args.text, " is shorter than --seq");
  std::vector<int64_t> context = encode(corpus, args.prompt);  // checked before training
  const auto vocab = int64_t(corpus.chars.size());
  std::printf("%s: %zu characters, vocabulary of %lld (ln %lld = %.2f, the loss of a uniform guess)\n",
              args.text.c_str(), corpus.ids.size(), (long long)vocab, (long long)vocab, std::log(double(vocab)));

  train_device.seed(42);
  std::mt19937_64 rng(42);
  CharTransformer model = make_model(vocab, args.seq, train_device);
  std::printf("model: %lld parameters; training %lld steps of %lld x %lld characters on %s\n",
              (long long)nn::num_params(model), (long long)args.steps, (long long)args.batch, (long long)args.seq,
              args.device.c_str());

  // AdamW with gradient clipping; the learning rate decays along half a cosine to a tenth.
  optim::AdamW opt({.weight_decay = 0.01, .clipping = optim::GradientClipping::by_norm(1.0)});
  optim::CosineAnnealingLR schedule(args.lr, {.t_max = args.steps, .eta_min = args.lr / 10});
  // Mixed precision: autocast off (f32) without --amp; the scaler passes through unless f16.
  amp::GradScaler scaler({.enabled = amp_dtype == DType::f16});
  const auto start = std::chrono::steady_clock::now();
  for (int64_t step = 1; step <= args.steps; ++step) {
    auto [x, y] = random_batch(corpus, args.batch, args.seq, rng, train_device);
    DynTensor loss;
    Gradients grads;
    {
      amp::Autocast autocast(amp_dtype);
      loss = loss_of(model, x, y);
      grads = scaler.scale(loss).backward();
    }
    model = scaler.step(opt, std::move(model), grads, schedule.lr());
    scaler.update();
    schedule.step();
    if (step == 1 || step % 50 == 0 || step == args.steps) {
      std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
      if (scaler.is_enabled())
        std::printf("step %5lld  loss %.3f  %6.1f s  loss scale %g\n", (long long)step, loss.item(), elapsed.count(),
                    scaler.get_scale());
      else
        std::printf("step %5lld  loss %.3f  %6.1f s\n", (long long)step, loss.item(), elapsed.count());
    }
  }

  // Inference: the plain device (no autodiff), eval mode (no dropout).
  model = nn::to_device(model, device);
  nn::set_training(model, false);

  // Sampling: feed the last `seq` characters, draw the next from softmax(logits / temperature).
  std::string text = args.prompt;
  std::mt19937_64 sampler(7);
  for (int64_t i = 0; i < args.sample; ++i) {
    const auto length = std::min(int64_t(context.size()), args.seq);
    std::vector<int64_t> window(context.end() - length, context.end());
    DynTensor logits = model.forward(DynTensor::from_vector(window, {1, length}, device));
    DynTensor last = select(select(std::move(logits), 0, 0), 0, length - 1);  // [vocab]
    std::vector<float> probs = softmax(last / args.temperature, -1).to_vector<float>();
    const auto next = int64_t(std::discrete_distribution<int64_t>(probs.begin(), probs.end())(sampler));
    context.push_back(next);
    text += corpus.chars[size_t(next)];
  }
  std::printf("\n--- sample (temperature %.2f) ---\n%s\n---\n\n", args.temperature, text.c_str());

  // Save, reload into a freshly initialised model, and compare the loss on one batch.
  const std::string path = "char_transformer.safetensors";
  nn::save(model, path);
  CharTransformer reloaded = make_model(vocab, args.seq, device);
  nn::load(reloaded, path);
  nn::set_training(reloaded, false);
  auto [x, y] = random_batch(corpus, args.batch, args.seq, rng, device);
  const double before = loss_of(model, x, y).item(), after = loss_of(reloaded, x, y).item();
  const bool same = std::abs(before - after) <= 1e-6;
  std::printf("saved %s; loss on a batch: trained %.6f, reloaded %.6f (%s)\n", path.c_str(), before, after,
              same ? "same" : "DIFFERENT");
  return same ? 0 : 1;
} catch (const ember::Error& e) {
  std::cerr << "error: " << e.what() << "\n";
  return 1;
}
