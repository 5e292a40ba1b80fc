// Text generation with a Llama-architecture checkpoint in Hugging Face's layout (README.md):
// prefill of the prompt in one pass, then one token per step against the KV cache, greedy or
// sampled (temperature, top-k, seed). Prints the text, then tokens/s of prefill and decode.
//
//   ./build/examples/llama --model DIR --prompt "Once upon a time" --max-new-tokens 64 [--quant int4]
//
// Options: --model DIR (config.json, model.safetensors, tokenizer.json), --prompt TEXT,
// --prompt-ids "1 2 3" (token ids instead of a prompt, for tokenizers that tokenizer.hpp does not
// read), --max-new-tokens N (default 32), --quant f32|int8|int4, --threads N, --temperature X
// (0: greedy, the default), --top-k N (0: all), --seed N, --no-bos (do not prepend the config's
// bos_token_id), --ignore-eos (run all N steps), --q8-activations (with int8 / int4: round activations
// to int8 blocks too, for int8 dot products), --dump-logits FILE (the test hook: JSON with the
// prompt's ids, the generated ids, and the logits of every prompt position and of every decode step).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ember/backends/cpu.hpp>
#include <ember/core/atomic_write.hpp>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "llama.hpp"
#include "tokenizer.hpp"

using namespace ember;

namespace {

struct Args {
  std::string model, prompt = "Once upon a time", prompt_ids, quant = "f32", dump_logits;
  int64_t max_new_tokens = 32, threads = 0, top_k = 0, seed = 1234;
  double temperature = 0;
  bool bos = true, ignore_eos = false, q8_activations = false;
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    auto value = [&] {
      EMBER_CHECK(i + 1 < argc, "llama: ", k, " needs a value");
      return std::string(argv[++i]);
    };
    auto number = [&] {
      const std::string v = value();
      char* end = nullptr;
      const double x = std::strtod(v.c_str(), &end);
      EMBER_CHECK(!v.empty() && *end == 0 && x >= 0, "llama: ", k, " takes a number >= 0, not '", v, "'");
      return x;
    };
    if (k == "--model") a.model = value();
    else if (k == "--prompt") a.prompt = value();
    else if (k == "--prompt-ids") a.prompt_ids = value();
    else if (k == "--max-new-tokens") a.max_new_tokens = int64_t(number());
    else if (k == "--quant") a.quant = value();
    else if (k == "--threads") a.threads = int64_t(number());
    else if (k == "--temperature") a.temperature = number();
    else if (k == "--top-k") a.top_k = int64_t(number());
    else if (k == "--seed") a.seed = int64_t(number());
    else if (k == "--no-bos") a.bos = false;
    else if (k == "--ignore-eos") a.ignore_eos = true;
    else if (k == "--q8-activations") a.q8_activations = true;
    else if (k == "--dump-logits") a.dump_logits = value();
    else EMBER_FAIL("llama: unknown argument ", k, " (see the options at the top of examples/llama/main.cpp)");
  }
  EMBER_CHECK(!a.model.empty(), "llama: --model DIR is required");
  EMBER_CHECK(a.quant == "f32" || a.quant == "int8" || a.quant == "int4", "llama: --quant is f32, int8 or int4, not '",
              a.quant, "'");
  return a;
}

// The next token from one row of logits: argmax, or a sample of softmax(logits / T) over the top k.
int32_t pick(const std::vector<float>& logits, const Args& a, std::mt19937_64& rng) {
  if (a.temperature <= 0) return int32_t(std::max_element(logits.begin(), logits.end()) - logits.begin());
  std::vector<int32_t> order(logits.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = int32_t(i);
  size_t k = a.top_k > 0 ? std::min<size_t>(size_t(a.top_k), order.size()) : order.size();
  std::partial_sort(order.begin(), order.begin() + std::ptrdiff_t(k), order.end(),
                    [&](int32_t x, int32_t y) { return logits[size_t(x)] > logits[size_t(y)]; });
  std::vector<double> p(k);
  const double top = logits[size_t(order[0])];
  for (size_t i = 0; i < k; ++i) p[i] = std::exp((logits[size_t(order[i])] - top) / a.temperature);
  std::discrete_distribution<size_t> dist(p.begin(), p.end());
  return order[dist(rng)];
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void append_row(std::ostringstream& out, const std::vector<float>& row) {
  out << "[";
  char buf[32];
  for (size_t i = 0; i < row.size(); ++i) {
    std::snprintf(buf, sizeof buf, "%.9g", double(row[i]));
    out << (i ? "," : "") << buf;
  }
  out << "]";
}

int run(const Args& a) {
  if (a.threads > 0) cpu::set_num_threads(int(a.threads));
  namespace fs = std::filesystem;
  const auto quant = a.quant == "int8" ? llama::WeightQuant::int8
                     : a.quant == "int4" ? llama::WeightQuant::int4
                                         : llama::WeightQuant::none;
  auto t_load = std::chrono::steady_clock::now();
  const llama::Model model = llama::load_model(a.model, {.quant = quant, .quantize_activations = a.q8_activations});
  const llama::Config& c = model.config;
  std::printf("model: %lld layers, hidden %lld, heads %lld (kv %lld), vocab %lld; weights %s (%.1f MB of linear "
              "weights), loaded in %.2f s, %d threads\n",
              (long long)c.num_hidden_layers, (long long)c.hidden_size, (long long)c.num_attention_heads,
              (long long)c.num_key_value_heads, (long long)c.vocab_size, a.quant.c_str(),
              double(model.linear_weight_bytes()) / 1e6, seconds_since(t_load), cpu::num_threads());

  std::optional<llama::HfTokenizer> tok;
  std::vector<int32_t> ids;
  if (!a.prompt_ids.empty()) {
    std::istringstream s(a.prompt_ids);
    for (int64_t v; s >> v;) ids.push_back(int32_t(v));
    EMBER_CHECK(s.eof(), "llama: --prompt-ids takes whole numbers separated by spaces");
    if (fs::exists(fs::path(a.model) / "tokenizer.json")) {
      try {
        tok = llama::HfTokenizer::load((fs::path(a.model) / "tokenizer.json").string());
      } catch (const Error& e) {
        std::printf("(no text output: %s)\n", e.what());
      }
    }
  } else {
    tok = llama::HfTokenizer::load((fs::path(a.model) / "tokenizer.json").string());
    ids = tok->encode(a.prompt);
  }
  if (a.bos && c.bos_token_id && (ids.empty() || ids[0] != *c.bos_token_id)) ids.insert(ids.begin(), int32_t(*c.bos_token_id));
  EMBER_CHECK(!ids.empty(), "llama: the prompt has no tokens");
  for (int32_t id : ids)
    EMBER_CHECK(id >= 0 && id < c.vocab_size, "llama: prompt token ", id, " is outside the vocabulary [0, ", c.vocab_size, ")");

  const bool dump = !a.dump_logits.empty();
  std::ostringstream rows;  // dumped logits rows
  size_t n_rows = 0;
  auto dump_rows = [&](const DynTensor& logits) {
    const int64_t V = logits.size(-1), n = logits.numel() / V;
    const std::vector<float> all = logits.cast(DType::f32).to_vector<float>();
    for (int64_t r = 0; r < n; ++r) {
      rows << (n_rows++ ? ",\n" : "");
      append_row(rows, std::vector<float>(all.begin() + r * V, all.begin() + (r + 1) * V));
    }
  };
  auto last_row = [&](const DynTensor& logits) {
    const int64_t V = logits.size(-1);
    const std::vector<float> all = logits.cast(DType::f32).to_vector<float>();
    return std::vector<float>(all.end() - V, all.end());
  };

  std::mt19937_64 rng(uint64_t(a.seed));
  llama::KvCache cache = model.new_cache();
  const int64_t T = int64_t(ids.size());
  const auto t0 = std::chrono::steady_clock::now();
  DynTensor logits = model.forward(DynTensor::from_vector(std::vector<int64_t>(ids.begin(), ids.end()), {1, T}), cache, dump);
  std::vector<float> row = last_row(logits);  // reading the result waits for the computation
  const double prefill_s = seconds_since(t0);
  if (dump) dump_rows(logits);

  std::vector<int32_t> generated;
  double decode_s = 0;
  int64_t decode_steps = 0;
  auto is_eos = [&](int32_t id) {
    return !a.ignore_eos && std::find(c.eos_token_ids.begin(), c.eos_token_ids.end(), id) != c.eos_token_ids.end();
  };
  // The text streams out as it is generated: the prompt, then each token (bold on a terminal).
  const bool tty = isatty(fileno(stdout));
  if (tok) std::printf("%s%s", tok->decode(ids, /*skip_special=*/true).c_str(), tty ? "\033[1m" : "");
  while (int64_t(generated.size()) < a.max_new_tokens) {
    const int32_t next = pick(row, a, rng);
    generated.push_back(next);
    if (tok) {
      std::fputs(tok->decode(std::span(&next, 1), /*skip_special=*/true).c_str(), stdout);
      std::fflush(stdout);
    }
    if (is_eos(next) || int64_t(generated.size()) == a.max_new_tokens || cache.length >= c.max_position_embeddings) break;
    const auto t1 = std::chrono::steady_clock::now();
    logits = model.forward(DynTensor::from_vector(std::vector<int64_t>{next}, {1, 1}), cache);
    row = last_row(logits);
    decode_s += seconds_since(t1);
    ++decode_steps;
    if (dump) dump_rows(logits);
  }

  if (tok) std::printf("%s\n", tty ? "\033[0m" : "");
  std::printf("tokens:");
  for (int32_t id : generated) std::printf(" %d", id);
  std::printf("\n");
  std::printf("prefill: %lld tokens in %.3f s, %.1f tokens/s\n", (long long)T, prefill_s, double(T) / prefill_s);
  if (decode_steps > 0)
    std::printf("decode: %lld tokens in %.3f s, %.2f tokens/s (%.1f GB/s of linear weights)\n", (long long)decode_steps,
                decode_s, double(decode_steps) / decode_s,
                double(model.linear_weight_bytes()) * double(decode_steps) / decode_s / 1e9);

  if (dump) {
    std::ostringstream out;
    out << "{\"quant\": \"" << a.quant << "\", \"prompt_ids\": [";
    for (size_t i = 0; i < ids.size(); ++i) out << (i ? ", " : "") << ids[i];
    out << "], \"generated_ids\": [";
    for (size_t i = 0; i < generated.size(); ++i) out << (i ? ", " : "") << generated[i];
    out << "], \"logits\": [\n" << rows.str() << "]}\n";
    EMBER_CHECK(ember::write_file_atomically(a.dump_logits, out.str()), "llama: cannot write ", a.dump_logits);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(parse(argc, argv));
  } catch (const Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}
