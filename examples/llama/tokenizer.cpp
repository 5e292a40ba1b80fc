// tokenizer.json (byte-level BPE) onto data::BpeTokenizer::from_vocab_and_merges.
#include "tokenizer.hpp"

#include <ember/core/error.hpp>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace llama {

using nlohmann::json;

HfTokenizer HfTokenizer::parse(const std::string& json_text, const std::string& source) {
  json j;
  try {
    j = json::parse(json_text);
  } catch (const json::exception& e) {
    EMBER_FAIL("llama: ", source, ": not valid JSON: ", e.what());
  }
  auto unsupported = [&](const std::string& key, const json& v, const char* why) {
    EMBER_FAIL("llama: ", source, ": ", key, " = ", v.dump().substr(0, 120), " is not supported: ", why);
  };
  EMBER_CHECK(j.is_object() && j.contains("model") && j["model"].is_object(), "llama: ", source,
              ": key \"model\" is missing");
  const json& model = j["model"];
  const json type = model.value("type", json("BPE"));
  if (type != "BPE") unsupported("model.type", type, "only byte-level BPE models are");
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"})
    if (model.contains(key) && !model[key].is_null() && model[key] != "") unsupported(std::string("model.") + key, model[key], "");
  if (model.value("byte_fallback", false))
    unsupported("model.byte_fallback", model["byte_fallback"],
                "SentencePiece-style BPE (Llama 2, TinyLlama) is not byte-level BPE; pass token ids with --prompt-ids");
  if (j.contains("normalizer") && !j["normalizer"].is_null())
    unsupported("normalizer", j["normalizer"], "byte-level BPE needs none");

  // The pre-tokenizer: ByteLevel (GPT-2's regex), possibly the only member of a Sequence.
  bool add_prefix_space = false;
  const json pre = j.value("pre_tokenizer", json());
  const json* byte_level = nullptr;
  if (pre.is_object() && pre.value("type", "") == "ByteLevel") byte_level = &pre;
  if (pre.is_object() && pre.value("type", "") == "Sequence" && pre.contains("pretokenizers") &&
      pre["pretokenizers"].is_array() && pre["pretokenizers"].size() == 1 &&
      pre["pretokenizers"][0].value("type", "") == "ByteLevel")
    byte_level = &pre["pretokenizers"][0];
  if (!byte_level)
    unsupported("pre_tokenizer", pre, "only a ByteLevel pre-tokenizer (GPT-2's split) is; a Split with its own regex is not");
  if (!byte_level->value("use_regex", true))
    unsupported("pre_tokenizer.use_regex", (*byte_level)["use_regex"], "ByteLevel must split with GPT-2's regex");
  add_prefix_space = byte_level->value("add_prefix_space", false);

  EMBER_CHECK(model.contains("vocab") && model["vocab"].is_object(), "llama: ", source, ": key \"model.vocab\" is missing");
  std::vector<std::pair<std::string, int32_t>> vocab;
  for (const auto& [token, id] : model["vocab"].items()) {
    EMBER_CHECK(id.is_number_integer(), "llama: ", source, ": model.vocab[\"", token, "\"] is not an integer id");
    vocab.emplace_back(token, id.get<int32_t>());
  }
  EMBER_CHECK(model.contains("merges") && model["merges"].is_array(), "llama: ", source, ": key \"model.merges\" is missing");
  std::vector<std::pair<std::string, std::string>> merges;
  for (size_t m = 0; m < model["merges"].size(); ++m) {
    const json& e = model["merges"][m];
    if (e.is_string()) {  // "a b"
      const std::string s = e.get<std::string>();
      const size_t space = s.find(' ');
      EMBER_CHECK(space != std::string::npos && space > 0 && space + 1 < s.size() && s.find(' ', space + 1) == std::string::npos,
                  "llama: ", source, ": model.merges[", m, "] = \"", s, "\" is not two tokens separated by one space");
      merges.emplace_back(s.substr(0, space), s.substr(space + 1));
    } else {  // ["a", "b"]
      EMBER_CHECK(e.is_array() && e.size() == 2 && e[0].is_string() && e[1].is_string(), "llama: ", source,
                  ": model.merges[", m, "] is neither \"a b\" nor [\"a\", \"b\"]");
      merges.emplace_back(e[0].get<std::string>(), e[1].get<std::string>());
    }
  }
  std::vector<std::pair<std::string, int32_t>> added;
  if (j.contains("added_tokens") && j["added_tokens"].is_array())
    for (const json& t : j["added_tokens"]) {
      EMBER_CHECK(t.is_object() && t.contains("id") && t["id"].is_number_integer() && t.contains("content") &&
                      t["content"].is_string(),
                  "llama: ", source, ": an added_tokens entry lacks an integer \"id\" or a string \"content\": ",
                  t.dump().substr(0, 120));
      added.emplace_back(t["content"].get<std::string>(), t["id"].get<int32_t>());
    }
  // Added tokens that the vocab also holds (GPT-2's "<|endoftext|>") are given once, as vocab entries'
  // bytes equal their text; from_vocab_and_merges accepts the same id twice only for the same bytes.
  HfTokenizer tok(ember::data::BpeTokenizer::from_vocab_and_merges(vocab, merges, added, source));
  tok.add_prefix_space_ = add_prefix_space;
  tok.special_.assign(size_t(tok.vocab_size()), false);
  for (const auto& [text, id] : added) tok.special_[size_t(id)] = true;
  return tok;
}

HfTokenizer HfTokenizer::load(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  EMBER_CHECK(f.good(), "llama: cannot open ", path);
  std::ostringstream s;
  s << f.rdbuf();
  return parse(s.str(), path);
}

std::vector<int32_t> HfTokenizer::encode(std::string_view text) const {
  if (add_prefix_space_ && !text.empty() && text[0] != ' ') {
    std::string spaced(text.size() + 1, ' ');
    text.copy(spaced.data() + 1, text.size());
    return bpe_.encode_with_special(spaced);
  }
  return bpe_.encode_with_special(text);
}

std::string HfTokenizer::decode(std::span<const int32_t> ids, bool skip_special) const {
  std::vector<int32_t> kept;  // a model's vocab_size may exceed the tokenizer's (padding rows): those ids have no text
  for (int32_t id : ids)
    if (id >= 0 && size_t(id) < special_.size() && !(skip_special && special_[size_t(id)])) kept.push_back(id);
  return bpe_.decode(kept);
}

}  // namespace llama
