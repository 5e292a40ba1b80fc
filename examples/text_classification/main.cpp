// A transformer text classifier on real text with real labels: the one-line descriptions of Debian
// packages, labelled by the package's section (games, sound, fonts, ...), read from the package
// lists that `apt-get update` writes to /var/lib/apt/lists. A byte-level BPE vocabulary is learned
// from the training descriptions (data::BpeTokenizer); a small transformer encoder reads the tokens
// and classifies its [cls] position. It reports test accuracy and a confusion matrix, then
// classifies the texts given with --classify.
//
//   ./build/examples/text_classification [--classify TEXT]... [--sections a,b,...] [--per-class N]
//                                        [--epochs N] [--batch-size N] [--lr X] [--lists DIR]
//
// The last line is "test accuracy: X" (examples/text_classification/README.md).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ember/data.hpp>
#include <ember/ember.hpp>
#include <ember/nn.hpp>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "../common/args.hpp"

using namespace ember;
namespace fs = std::filesystem;

constexpr int64_t kMaxTokens = 32;  // [cls] + up to 31 tokens of a description

struct Args {
  std::string lists = "/var/lib/apt/lists";
  std::vector<std::string> sections = {"fonts", "games", "graphics", "net", "science", "sound"};
  std::vector<std::string> classify;
  int64_t per_class = 600, epochs = 4, batch_size = 32;
  double lr = 2e-3;
};

Args parse(int argc, char** argv) {
  Args a;
  examples::ArgReader r("text_classification", argc, argv);
  while (r.next()) {
    if (r.is("--classify"))
      a.classify.push_back(r.value());
    else if (r.is("--sections")) {
      a.sections.clear();
      std::istringstream in(r.value());
      for (std::string s; std::getline(in, s, ',');)
        if (!s.empty()) a.sections.push_back(s);
      std::sort(a.sections.begin(), a.sections.end());
      EMBER_CHECK(a.sections.size() >= 2, "text_classification: --sections needs at least two sections");
    } else if (r.is("--per-class"))
      a.per_class = r.count();
    else if (r.is("--epochs"))
      a.epochs = r.count();
    else if (r.is("--batch-size"))
      a.batch_size = r.count();
    else if (r.is("--lr"))
      a.lr = r.number();
    else if (r.is("--lists"))
      a.lists = r.value();
    else
      r.unknown("--classify, --sections, --per-class, --epochs, --batch-size, --lr, --lists");
  }
  return a;
}

struct Package {
  std::string name, section, description;
};

// The packages of every *_Packages list in `dir` (plain or compressed: apt-helper cat-file reads
// both, as apt does), the first record of each package name.
std::vector<Package> read_package_lists(const std::string& dir) {
  std::vector<std::string> files;
  if (fs::is_directory(dir))
    for (const auto& entry : fs::directory_iterator(dir)) {
      const std::string name = entry.path().filename().string();
      if (name.find("_Packages") != std::string::npos) files.push_back(entry.path().string());
    }
  std::sort(files.begin(), files.end());
  EMBER_CHECK(!files.empty(), "text_classification: no package lists (*_Packages) in ", dir,
              "; run apt-get update (as root) to fetch them, or pass --lists DIR");
  std::vector<Package> packages;
  std::set<std::string> seen;
  for (const std::string& file : files) {
    const std::string command = "/usr/lib/apt/apt-helper cat-file '" + file + "'";
    std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
    EMBER_CHECK(pipe != nullptr, "text_classification: cannot run ", command);
    Package p;
    auto finish = [&] {
      if (!p.name.empty() && !p.section.empty() && !p.description.empty() && seen.insert(p.name).second)
        packages.push_back(p);
      p = {};
    };
    std::string line;
    char buffer[1 << 16];
    while (std::fgets(buffer, sizeof buffer, pipe.get())) {
      line = buffer;
      if (!line.empty() && line.back() == '\n') line.pop_back();
      if (line.empty()) {
        finish();
      } else if (line.rfind("Package: ", 0) == 0) {
        p.name = line.substr(9);
      } else if (line.rfind("Section: ", 0) == 0) {
        p.section = line.substr(9);
        if (const size_t slash = p.section.find('/'); slash != std::string::npos) p.section.erase(0, slash + 1);
      } else if (line.rfind("Description: ", 0) == 0) {
        p.description = line.substr(13);  // the synopsis; long descriptions live in Translation files
      }
    }
    finish();
  }
  return packages;
}

struct Example {
  std::vector<int64_t> tokens;  // [cls], then the description's tokens: at most kMaxTokens ids
  int64_t label = 0;
};
struct Batch {
  DynTensor tokens;  // i64 [N, L]: padded to the batch's longest example
  DynTensor labels;  // i64 [N]
};

std::string lowercase(std::string s) {
  for (char& c : s)
    if (c >= 'A' && c <= 'Z') c = char(c - 'A' + 'a');
  return s;
}

// Token and position embeddings, a pre-norm transformer encoder that ignores padding, and a
// linear head on the [cls] position.
struct Classifier {
  nn::Embedding token, position;
  nn::TransformerEncoder encoder;
  nn::Linear head;
  int64_t pad_id = 0;
  EMBER_MODULE(token, position, encoder, head)

  DynTensor forward(const DynTensor& tokens) const {  // i64 [N, L] -> logits [N, classes]
    DynTensor positions = DynTensor::arange(0, tokens.size(1), 1, DType::i64, tokens.device());
    DynTensor x = token.forward(tokens) + position.forward(positions);
    x = encoder.forward(x, {.key_padding_mask = tokens == Scalar(pad_id)});
    return head.forward(x.select(1, 0));
  }
};

Classifier make_classifier(int64_t vocab, int64_t classes, int64_t pad_id, const Device& device) {
  const int64_t d_model = 64;
  const auto small = nn::Initializer::normal(0, 0.02);
  nn::TransformerEncoderLayerConfig layer{.d_model = d_model,
                                          .nhead = 4,
                                          .dim_feedforward = 2 * d_model,
                                          .dropout = 0.1,
                                          .activation = nn::FeedForwardActivation::gelu,
                                          .batch_first = true,
                                          .norm_first = true};
  return Classifier{
      nn::EmbeddingConfig{.num_embeddings = vocab, .embedding_dim = d_model, .initializer = small}.init(device),
      nn::EmbeddingConfig{.num_embeddings = kMaxTokens, .embedding_dim = d_model, .initializer = small}.init(device),
      nn::TransformerEncoderConfig{.layer = layer, .num_layers = 2, .final_norm = true}.init(device),
      nn::LinearConfig{.in_features = d_model, .out_features = classes}.init(device),
      pad_id,
  };
}

int main(int argc, char** argv) try {
  const Args args = parse(argc, argv);
  const int64_t classes = int64_t(args.sections.size());

  // The descriptions of the chosen sections; a description found under two sections is dropped,
  // a repeated one (e.g. a library's -dev and runtime packages) kept once.
  const std::vector<Package> packages = read_package_lists(args.lists);
  std::map<std::string, std::set<std::string>> sections_of;  // description -> sections
  for (const Package& p : packages) sections_of[p.description].insert(p.section);
  std::vector<std::vector<std::string>> texts(static_cast<size_t>(classes));
  for (const auto& [description, sections] : sections_of) {  // sorted by description: a fixed order
    if (sections.size() != 1) continue;
    auto it = std::find(args.sections.begin(), args.sections.end(), *sections.begin());
    if (it != args.sections.end()) texts[size_t(it - args.sections.begin())].push_back(description);
  }
  // Balanced classes: the same number of descriptions from each, 80% to train, 20% to test.
  size_t per_class = size_t(args.per_class);
  for (size_t c = 0; c < texts.size(); ++c) {
    EMBER_CHECK(texts[c].size() >= 10, "text_classification: section '", args.sections[c], "' has ", texts[c].size(),
                " descriptions in ", args.lists, "; choose other --sections");
    per_class = std::min(per_class, texts[c].size());
  }
  const size_t test_per_class = per_class / 5;
  std::vector<std::string> train_texts, test_texts;
  std::vector<int64_t> train_labels, test_labels;
  for (size_t c = 0; c < texts.size(); ++c) {
    std::shuffle(texts[c].begin(), texts[c].end(), std::mt19937_64(c + 1));
    for (size_t i = 0; i < per_class; ++i) {
      (i < test_per_class ? test_texts : train_texts).push_back(lowercase(texts[c][i]));
      (i < test_per_class ? test_labels : train_labels).push_back(int64_t(c));
    }
  }
  std::printf("%zu packages in %s; %lld sections, %zu descriptions each: %zu to train, %zu to test\n", packages.size(),
              args.lists.c_str(), static_cast<long long>(classes), per_class, train_texts.size(), test_texts.size());

  // A byte-level BPE vocabulary learned from the training descriptions, plus [pad] and [cls].
  const data::BpeTokenizer tokenizer = data::BpeTokenizer::train(
      train_texts, {.vocab_size = 1500, .min_frequency = 2, .special_tokens = {"[pad]", "[cls]"}});
  const int64_t pad_id = *tokenizer.token_id("[pad]"), cls_id = *tokenizer.token_id("[cls]");
  auto encode = [&](const std::string& text, int64_t label) {
    Example e{{cls_id}, label};
    for (int32_t id : tokenizer.encode(lowercase(text)))
      if (int64_t(e.tokens.size()) < kMaxTokens) e.tokens.push_back(id);
    return e;
  };
  std::vector<Example> train_set, test_set;
  for (size_t i = 0; i < train_texts.size(); ++i) train_set.push_back(encode(train_texts[i], train_labels[i]));
  for (size_t i = 0; i < test_texts.size(); ++i) test_set.push_back(encode(test_texts[i], test_labels[i]));
  std::printf("BPE vocabulary: %d tokens (%zu merges)\n", tokenizer.vocab_size(), tokenizer.merge_count());

  Device device = Device::cpu().autodiff();
  auto batcher = [pad_id](std::vector<Example> items, const Device& d) {
    size_t length = 0;
    for (const Example& e : items) length = std::max(length, e.tokens.size());
    std::vector<int64_t> tokens, labels;
    for (const Example& e : items) {
      tokens.insert(tokens.end(), e.tokens.begin(), e.tokens.end());
      tokens.insert(tokens.end(), length - e.tokens.size(), pad_id);
      labels.push_back(e.label);
    }
    const int64_t n = int64_t(items.size());
    return Batch{DynTensor::from_vector(tokens, Shape{n, int64_t(length)}, d),
                 DynTensor::from_vector(labels, Shape{n}, d)};
  };
  auto train_loader = data::DataLoaderBuilder(batcher)
                          .batch_size(size_t(args.batch_size))
                          .shuffle(42)
                          .device(device)
                          .build(data::in_memory(train_set));
  auto test_loader = data::DataLoaderBuilder(batcher).batch_size(256).device(device).build(data::in_memory(test_set));

  device.seed(5);
  Classifier model = make_classifier(tokenizer.vocab_size(), classes, pad_id, device);
  optim::AdamW optimizer({.weight_decay = 1e-2});
  optim::OneCycleLR scheduler({.max_lr = args.lr, .total_steps = args.epochs * int64_t(train_loader->num_batches())});

  // Predictions for the test set, and the confusion matrix (rows: true section, columns: predicted).
  std::vector<std::vector<int64_t>> confusion;
  auto evaluate = [&] {
    nn::set_training(model, false);
    NoGradGuard no_grad;
    confusion.assign(size_t(classes), std::vector<int64_t>(size_t(classes), 0));
    int64_t correct = 0, seen = 0;
    for (const Batch& b : *test_loader) {
      const std::vector<int64_t> predicted = argmax(model.forward(b.tokens), 1).to_vector<int64_t>();
      const std::vector<int64_t> labels = b.labels.to_vector<int64_t>();
      for (size_t i = 0; i < labels.size(); ++i) {
        confusion[size_t(labels[i])][size_t(predicted[i])] += 1;
        correct += predicted[i] == labels[i];
        ++seen;
      }
    }
    nn::set_training(model, true);
    return double(correct) / double(seen);
  };

  double accuracy = 0;
  for (int64_t epoch = 1; epoch <= args.epochs; ++epoch) {
    const auto start = std::chrono::steady_clock::now();
    double loss_sum = 0;
    int64_t seen = 0;
    for (const Batch& b : *train_loader) {
      DynTensor loss = nn::cross_entropy(model.forward(b.tokens), b.labels);
      model = optimizer.step(std::move(model), loss.backward(), scheduler.lr());
      scheduler.step();
      loss_sum += loss.item() * double(b.labels.numel());
      seen += b.labels.numel();
    }
    accuracy = evaluate();
    std::printf("epoch %lld/%lld  train loss %.4f  test accuracy %.4f  %.1f s\n", static_cast<long long>(epoch),
                static_cast<long long>(args.epochs), loss_sum / double(seen), accuracy,
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }

  std::printf("confusion matrix (rows: section, columns: predicted)\n%10s", "");
  for (const std::string& s : args.sections) std::printf(" %8.8s", s.c_str());
  std::printf("\n");
  for (size_t r = 0; r < size_t(classes); ++r) {
    std::printf("%10.10s", args.sections[r].c_str());
    for (size_t c = 0; c < size_t(classes); ++c) std::printf(" %8lld", static_cast<long long>(confusion[r][c]));
    std::printf("\n");
  }

  // Texts from the command line: the most likely sections with their probabilities.
  nn::set_training(model, false);
  for (const std::string& text : args.classify) {
    NoGradGuard no_grad;
    const Example e = encode(text, 0);
    DynTensor logits = model.forward(DynTensor::from_vector(e.tokens, Shape{1, int64_t(e.tokens.size())}, device));
    const std::vector<float> p = softmax(logits, 1).to_vector<float>();
    std::vector<size_t> order(p.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return p[a] > p[b]; });
    std::printf("\"%s\": %s (%.2f)", text.c_str(), args.sections[order[0]].c_str(), p[order[0]]);
    for (size_t k = 1; k < std::min<size_t>(3, order.size()); ++k)
      std::printf(", %s (%.2f)", args.sections[order[k]].c_str(), p[order[k]]);
    std::printf("\n");
  }
  std::printf("test accuracy: %.4f\n", accuracy);
  return 0;
} catch (const std::exception& e) {
  std::cerr << "error: " << e.what() << "\n";
  return 1;
}
