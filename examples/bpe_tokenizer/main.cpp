// Byte-level BPE from the command line: train a tokenizer on text files and save it in GPT-2's
// format, or encode and decode with one (yours, or GPT-2's own encoder.json + vocab.bpe).
//
//   bpe_tokenizer train tok/ 8192 corpus1.txt corpus2.txt   # tok/encoder.json, tok/vocab.bpe
//   bpe_tokenizer encode tok/ "Hello world"                 # ids, one line
//   bpe_tokenizer decode tok/ 15496 995                     # text
//   bpe_tokenizer pieces tok/ "Hello world"                 # the tokens, as bytes
#include <chrono>
#include <ember/core/error.hpp>
#include <ember/data/bpe.hpp>
#include <iostream>
#include <string>
#include <vector>

using ember::data::BpeTokenizer;

namespace {

int usage() {
  std::cerr << "usage: bpe_tokenizer train DIR VOCAB_SIZE FILE...\n"
               "       bpe_tokenizer encode DIR TEXT\n"
               "       bpe_tokenizer decode DIR ID...\n"
               "       bpe_tokenizer pieces DIR TEXT\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) return usage();
  const std::string command = argv[1], dir = argv[2];
  try {
    if (command == "train") {
      if (argc < 5) return usage();
      const std::vector<std::string> files(argv + 4, argv + argc);
      const auto start = std::chrono::steady_clock::now();
      const auto tok = BpeTokenizer::train_files(files, {.vocab_size = std::stoi(argv[3])});
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      tok.save(dir);
      std::cout << "learned " << tok.merge_count() << " merges in " << seconds << " s; vocabulary " << tok.vocab_size()
                << " tokens, saved to " << dir << "/encoder.json and " << dir << "/vocab.bpe\n";
      return 0;
    }
    const auto tok = BpeTokenizer::load(dir);
    if (command == "encode" || command == "pieces") {
      const std::vector<int32_t> ids = tok.encode_with_special(argv[3]);
      for (size_t i = 0; i < ids.size(); ++i) {
        std::cout << (i ? " " : "");
        if (command == "encode")
          std::cout << ids[i];
        else
          std::cout << '[' << tok.token_bytes(ids[i]) << ']';
      }
      std::cout << "\n";
      return 0;
    }
    if (command == "decode") {
      std::vector<int32_t> ids;
      for (int i = 3; i < argc; ++i) ids.push_back(std::stoi(argv[i]));
      std::cout << tok.decode(ids) << "\n";
      return 0;
    }
    return usage();
  } catch (const ember::Error& e) {
    std::cerr << "bpe_tokenizer: " << e.what() << "\n";
    return 1;
  } catch (const std::invalid_argument&) {
    std::cerr << "bpe_tokenizer: not a number in the arguments\n";
    return 2;
  }
}
