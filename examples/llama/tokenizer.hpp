// Hugging Face tokenizers' tokenizer.json, for the byte-level BPE model (GPT-2, Llama 3 style
// vocabularies without a custom split regex), on ember's data::BpeTokenizer:
//
//   auto tok = llama::HfTokenizer::load("model_dir/tokenizer.json");
//   std::vector<int32_t> ids = tok.encode("Hello world");   // added tokens ("<s>") map to their ids
//   std::string text = tok.decode(ids);
//
// Supported: model.type "BPE" with a vocab object and merges (as "a b" strings or [a, b]
// pairs), no byte_fallback, no continuing_subword_prefix / end_of_word_suffix; a ByteLevel
// pre-tokenizer with use_regex (GPT-2's pattern) and optional add_prefix_space, alone or as the
// only member of a Sequence; no normalizer; added_tokens as special tokens. Anything else
// (SentencePiece-style BPE with byte_fallback, Unigram, WordPiece, a Split pre-tokenizer with its
// own regex, normalizers) is an ember::Error naming the file and the key.
#pragma once

#include <cstdint>
#include <ember/data/bpe.hpp>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace llama {

// A tokenizer.json of a byte-level BPE model (see above).
class HfTokenizer {
 public:
  // Parses tokenizer.json's text; `source` names it in errors.
  static HfTokenizer parse(const std::string& json_text, const std::string& source = "tokenizer.json");
  // Reads and parses a tokenizer.json file.
  static HfTokenizer load(const std::string& path);

  // Text to ids; added tokens in the text become their ids.
  std::vector<int32_t> encode(std::string_view text) const;
  // Ids to text; added (special) tokens are left out when skip_special, and ids outside
  // [0, vocab_size()) always (a model's embedding may have more rows than the tokenizer has tokens).
  std::string decode(std::span<const int32_t> ids, bool skip_special = false) const;
  // Number of ids (vocabulary and added tokens).
  int32_t vocab_size() const { return bpe_.vocab_size(); }
  // The underlying byte-level BPE tokenizer.
  const ember::data::BpeTokenizer& bpe() const { return bpe_; }

 private:
  explicit HfTokenizer(ember::data::BpeTokenizer bpe) : bpe_(std::move(bpe)) {}
  ember::data::BpeTokenizer bpe_;
  bool add_prefix_space_ = false;
  std::vector<bool> special_;  // by id
};

}  // namespace llama
