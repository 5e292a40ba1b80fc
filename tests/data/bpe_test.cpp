// The byte-level BPE tokenizer (src/data/bpe.cpp).
//
// Expected values come from outside ember:
// - GPT-2's encodings: fixtures/gpt2_reference.json, ids from the npm package gpt-3-encoder
//   1.1.4 (a port of GPT-2's encoder.py; gen_gpt2_reference.js), cross-checked against
//   encoder.py's algorithm with Python's `regex` module (check_gpt2_reference.py). GPT-2's own
//   encoder.json and vocab.bpe are read from $EMBER_GPT2_VOCAB_DIR (test.sh installs the
//   package there); without them those tests are skipped, never passed.
// - pre-tokens and trained merges: worked out by hand from GPT-2's regex and from the BPE
//   definition (the comments show the counting).
#include "ember/data/bpe.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <sstream>
#include <thread>

#include "ember/core/error.hpp"

namespace fs = std::filesystem;
using ember::data::BpeTokenizer;
using ember::data::BpeTrainOptions;
using Merges = std::vector<std::pair<std::string, std::string>>;
using Ids = std::vector<int32_t>;

namespace {

std::string read(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

void write(const std::string& path, std::string_view bytes) {
  std::ofstream f(path, std::ios::binary);
  f << bytes;
}

// A fresh directory per test, removed at the end.
struct TempDir {
  std::string path;
  TempDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path = (fs::temp_directory_path() / ("ember_bpe_" + std::to_string(::getpid()) + "_" + info->name())).string();
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
};

// GPT-2's files, or empty when the npm package is not installed.
std::string gpt2_dir() {
  const char* dir = std::getenv("EMBER_GPT2_VOCAB_DIR");
  if (dir == nullptr || !fs::exists(std::string(dir) + "/encoder.json") || !fs::exists(std::string(dir) + "/vocab.bpe"))
    return "";
  return dir;
}

const BpeTokenizer& gpt2() {
  static const BpeTokenizer tok =
      BpeTokenizer::from_gpt2_files(gpt2_dir() + "/encoder.json", gpt2_dir() + "/vocab.bpe");
  return tok;
}

#define REQUIRE_GPT2()                                                                                    \
  if (gpt2_dir().empty())                                                                                 \
  GTEST_SKIP() << "GPT-2's encoder.json/vocab.bpe not found: set EMBER_GPT2_VOCAB_DIR (test.sh installs " \
                  "npm gpt-3-encoder@1.1.4 into build/npm)"

std::vector<std::string> pieces(std::string_view text) {
  std::vector<std::string> out;
  for (auto p : BpeTokenizer::pretokenize(text)) out.emplace_back(p);
  return out;
}

// The message of the ember::Error that `f` throws ("" if it throws none).
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const ember::Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

// ---- GPT-2's tokenizer against the outside reference -------------------------------------------

TEST(BpeGpt2, EncodesTheReferenceStrings) {
  REQUIRE_GPT2();
  const auto fixture = nlohmann::json::parse(read(EMBER_BPE_FIXTURES "/gpt2_reference.json"));
  ASSERT_GE(fixture["cases"].size(), 60u);
  for (const auto& c : fixture["cases"]) {
    const std::string text = c["text"];
    const Ids want = c["ids"];
    EXPECT_EQ(gpt2().encode(text), want) << "text: " << nlohmann::json(text).dump();
    EXPECT_EQ(gpt2().decode(want), text) << "text: " << nlohmann::json(text).dump();
  }
}

TEST(BpeGpt2, VocabularyAndSpecialToken) {
  REQUIRE_GPT2();
  EXPECT_EQ(gpt2().vocab_size(), 50257);
  EXPECT_EQ(gpt2().merge_count(), 50000u);
  const std::vector<std::pair<std::string, int32_t>> special = {{"<|endoftext|>", 50256}};
  EXPECT_EQ(gpt2().special_tokens(), special);
  // encoder.json: "!" is id 0, "\u0100" (byte 0) is id 188, "\u0120" (the space byte) is 220.
  EXPECT_EQ(gpt2().token_id("!"), 0);
  EXPECT_EQ(gpt2().token_id(std::string(1, '\0')), 188);
  EXPECT_EQ(gpt2().token_id(" "), 220);
  EXPECT_EQ(gpt2().token_bytes(50256), "<|endoftext|>");
  // encode() reads "<|endoftext|>" as text, as encoder.py does (the fixture has that case);
  // encode_with_special() gives its id.
  Ids want = gpt2().encode("text");
  want.push_back(50256);
  const Ids more = gpt2().encode(" more");
  want.insert(want.end(), more.begin(), more.end());
  want.push_back(50256);
  EXPECT_EQ(gpt2().encode_with_special("text<|endoftext|> more<|endoftext|>"), want);
  EXPECT_EQ(gpt2().encode_with_special("<|endoftext|>"), Ids{50256});
}

TEST(BpeGpt2, SavesTheSameFiles) {
  REQUIRE_GPT2();
  TempDir dir;
  gpt2().save(dir.path);
  // vocab.bpe comes back byte for byte; encoder.json with the same entries (the spelling of the
  // JSON differs: GPT-2's file escapes non-ASCII characters).
  EXPECT_EQ(read(dir.path + "/vocab.bpe"), read(gpt2_dir() + "/vocab.bpe"));
  EXPECT_EQ(nlohmann::json::parse(read(dir.path + "/encoder.json")),
            nlohmann::json::parse(read(gpt2_dir() + "/encoder.json")));
  const auto again = BpeTokenizer::load(dir.path);
  const std::string text = "Reloaded: the same ids, naïve café, 12345 ... <|endoftext|>";
  EXPECT_EQ(again.encode(text), gpt2().encode(text));
}

TEST(BpeGpt2, RandomTextRoundTrips) {
  REQUIRE_GPT2();
  std::mt19937 rng(7);
  // Random UTF-8 from a mix of ranges (ASCII, Latin-1, Greek, CJK, emoji, spaces).
  const std::vector<std::pair<char32_t, char32_t>> ranges = {
      {0x20, 0x7E}, {0x09, 0x0D}, {0xA0, 0xFF}, {0x370, 0x3FF}, {0x4E00, 0x4E80}, {0x1F600, 0x1F64F}, {0x2000, 0x200B}};
  for (int round = 0; round < 200; ++round) {
    std::string s;
    const int n = int(rng() % 60);
    for (int i = 0; i < n; ++i) {
      const auto [lo, hi] = ranges[rng() % ranges.size()];
      const char32_t c = lo + rng() % (hi - lo + 1);
      if (c < 0x80)
        s += char(c);
      else if (c < 0x800)
        s += {char(0xC0 | (c >> 6)), char(0x80 | (c & 0x3F))};
      else if (c < 0x10000)
        s += {char(0xE0 | (c >> 12)), char(0x80 | ((c >> 6) & 0x3F)), char(0x80 | (c & 0x3F))};
      else
        s += {char(0xF0 | (c >> 18)), char(0x80 | ((c >> 12) & 0x3F)), char(0x80 | ((c >> 6) & 0x3F)),
              char(0x80 | (c & 0x3F))};
    }
    EXPECT_EQ(gpt2().decode(gpt2().encode(s)), s);
  }
  // Random bytes, most of them not UTF-8: byte-level BPE still round-trips them.
  for (int round = 0; round < 200; ++round) {
    std::string s(rng() % 80, '\0');
    for (char& c : s) c = char(rng() % 256);
    EXPECT_EQ(gpt2().decode(gpt2().encode(s)), s);
  }
}

TEST(BpeGpt2, SafeFromSeveralThreads) {
  REQUIRE_GPT2();
  const BpeTokenizer tok = BpeTokenizer::load(gpt2_dir());  // a fresh cache, filled concurrently
  std::string text;
  for (int i = 0; i < 300; ++i) text += "word" + std::to_string(i * 7919) + " and more, ";
  const Ids want = gpt2().encode(text);
  std::vector<Ids> got(4);
  std::vector<std::thread> threads;
  for (auto& g : got) threads.emplace_back([&] { g = tok.encode(text); });
  for (auto& t : threads) t.join();
  for (const auto& g : got) EXPECT_EQ(g, want);
}

// ---- pre-tokens: GPT-2's regex, worked by hand -----------------------------------------------

TEST(BpePretokenize, FollowsGpt2Regex) {
  using V = std::vector<std::string>;
  EXPECT_EQ(pieces(""), V{});
  EXPECT_EQ(pieces("Hello world"), (V{"Hello", " world"}));
  // Contractions: lower-case, ASCII apostrophe, no leading space.
  EXPECT_EQ(pieces("I'm they're we've"), (V{"I", "'m", " they", "'re", " we", "'ve"}));
  EXPECT_EQ(pieces("IT'S"), (V{"IT", "'", "S"}));
  EXPECT_EQ(pieces(" 's"), (V{" '", "s"}));
  EXPECT_EQ(pieces("?!'s"), (V{"?!'", "s"}));
  // Letters, numbers and the rest are separate runs; one optional U+0020 in front.
  EXPECT_EQ(pieces("12abc 34 x5"), (V{"12", "abc", " 34", " x", "5"}));
  EXPECT_EQ(pieces("a... !?"), (V{"a", "...", " !?"}));
  // Whitespace: a run before a word leaves its last space to the word; at the end it stays whole.
  EXPECT_EQ(pieces("a  b"), (V{"a", " ", " b"}));
  EXPECT_EQ(pieces("a   "), (V{"a", "   "}));
  EXPECT_EQ(pieces("a\n\nb"), (V{"a", "\n", "\n", "b"}));
  // The optional prefix is U+0020 only: a tab stays by itself.
  EXPECT_EQ(pieces("\t\tx"), (V{"\t", "\t", "x"}));
  EXPECT_EQ(pieces("x \ty"), (V{"x", " ", "\t", "y"}));
  // Unicode classes: Greek letters, a CJK letter run, superscript two (No), U+3000 as space.
  EXPECT_EQ(pieces("αβ 中文²\u3000z"), (V{"αβ", " 中文", "²", "\u3000", "z"}));
  // \s is Unicode White_Space, as in Python's regex: U+0085 is a space, U+FEFF is not.
  EXPECT_EQ(pieces("a \u0085b"), (V{"a", " ", "\u0085", "b"}));
  EXPECT_EQ(pieces("x \ufeffy"), (V{"x", " \ufeff", "y"}));
  // Bytes that are not UTF-8 are "other" characters, one byte each.
  EXPECT_EQ(pieces("a\xff\xfe b\xc3"), (V{"a", "\xff\xfe", " b", "\xc3"}));
}

// ---- training: merges worked out by hand -------------------------------------------------------

TEST(BpeTrain, MergesTheMostFrequentPairWithinPretokens) {
  // "ab ab ab cd" -> pre-tokens "ab", " ab" x2, " cd". Pair counts: (a,b) 3, (" ",a) 2,
  // (" ",c) 1, (c,d) 1. Merge 1: a+b. Now " ab" x2 gives (" ",ab) 2 -> merge 2: " "+ab.
  // Left: (" ",c) 1 and (c,d) 1, a tie, which the smaller left bytes " " < "c" wins:
  // merge 3: " "+c, then merge 4: " c"+d.
  BpeTrainOptions opt{.vocab_size = 1000, .min_frequency = 1, .special_tokens = {}};
  const auto tok = BpeTokenizer::train("ab ab ab cd", opt);
  EXPECT_EQ(tok.merges(), (Merges{{"a", "b"}, {" ", "ab"}, {" ", "c"}, {" c", "d"}}));
  EXPECT_EQ(tok.vocab_size(), 260);
  EXPECT_EQ(tok.encode("ab cd ab"), (Ids{*tok.token_id("ab"), *tok.token_id(" cd"), *tok.token_id(" ab")}));
  EXPECT_EQ(tok.token_id("ab"), 256);
  EXPECT_EQ(tok.token_id(" c"), 258);

  // With the default min_frequency 2, only the first two merges happen.
  opt.min_frequency = 2;
  EXPECT_EQ(BpeTokenizer::train("ab ab ab cd", opt).merges(), (Merges{{"a", "b"}, {" ", "ab"}}));

  // Never across pre-tokens: "ab!ab!ab!" -> "ab", "!" three times each. Only (a,b) is inside
  // a pre-token; ("ab","!") would be the next merge if boundaries were crossed.
  opt.min_frequency = 1;
  EXPECT_EQ(BpeTokenizer::train("ab!ab!ab!", opt).merges(), (Merges{{"a", "b"}}));
}

TEST(BpeTrain, BreaksTiesByBytes) {
  // "cd ab": (c,d), (" ",a), (a,b) once each. Smallest (left, right) bytes first: (" ","a"),
  // then (" a","b") (" a" < "c"), then (c,d).
  BpeTrainOptions opt{.vocab_size = 1000, .min_frequency = 1, .special_tokens = {}};
  EXPECT_EQ(BpeTokenizer::train("cd ab", opt).merges(), (Merges{{" ", "a"}, {" a", "b"}, {"c", "d"}}));
  // A run of one letter: "aaaa" -> (a,a) 3 -> "aa aa" (left to right) -> (aa,aa) 1.
  EXPECT_EQ(BpeTokenizer::train("aaaa", opt).merges(), (Merges{{"a", "a"}, {"aa", "aa"}}));
  // "aaa" -> (a,a) 2 (overlapping) -> "aa a" -> (aa,a) 1.
  EXPECT_EQ(BpeTokenizer::train("aaa", opt).merges(), (Merges{{"a", "a"}, {"aa", "a"}}));
}

TEST(BpeTrain, VocabularyLayoutAndSize) {
  BpeTrainOptions opt{.vocab_size = 259, .min_frequency = 1, .special_tokens = {"<|endoftext|>"}};
  const auto tok = BpeTokenizer::train("ab ab ab cd", opt);
  // 256 bytes + 2 merges + 1 special = 259.
  EXPECT_EQ(tok.merges(), (Merges{{"a", "b"}, {" ", "ab"}}));
  EXPECT_EQ(tok.vocab_size(), 259);
  EXPECT_EQ(tok.special_tokens(), (std::vector<std::pair<std::string, int32_t>>{{"<|endoftext|>", 258}}));
  // Byte tokens in GPT-2's order: the printable bytes '!'..'~', '¡'..'¬', '®'..'ÿ' (188), then the
  // others from byte 0 up.
  EXPECT_EQ(tok.token_bytes(0), "!");
  EXPECT_EQ(tok.token_bytes(187), "\xff");
  EXPECT_EQ(tok.token_bytes(188), std::string(1, '\0'));
  EXPECT_EQ(tok.token_bytes(188 + 32), " ");
  EXPECT_EQ(tok.token_bytes(255), "\xad");
  EXPECT_EQ(tok.encode_with_special("ab<|endoftext|>"), (Ids{256, 258}));
  EXPECT_THROW(BpeTokenizer::train("x", BpeTrainOptions{.vocab_size = 256}), ember::Error);
}

TEST(BpeTrain, IsDeterministic) {
  std::vector<std::string> texts;
  std::mt19937 rng(1);
  for (int i = 0; i < 200; ++i) {  // words over a small alphabet: many equal pair counts
    std::string t;
    for (int j = 0; j < 20; ++j) {
      t += j ? " " : "";
      for (int k = 0, n = 1 + int(rng() % 7); k < n; ++k) t += "abcde"[rng() % 5];
    }
    texts.push_back(t);
  }
  BpeTrainOptions opt{.vocab_size = 400, .min_frequency = 1};
  const auto a = BpeTokenizer::train(texts, opt);
  std::vector<std::string> shuffled = texts;
  std::shuffle(shuffled.begin(), shuffled.end(), rng);
  const auto b = BpeTokenizer::train(shuffled, opt);
  EXPECT_EQ(a.vocab_size(), 400);
  EXPECT_EQ(a.merges(), b.merges());
  EXPECT_EQ(a.merges(), BpeTokenizer::train(texts, opt).merges());
}

TEST(BpeTrain, RoundTripsAndReloads) {
  std::string corpus;
  for (int i = 0; i < 300; ++i) corpus += "Lorem ipsum dolor sit amet " + std::to_string(i) + ", naïve café ὕαλον.\n";
  const auto tok = BpeTokenizer::train(corpus, BpeTrainOptions{.vocab_size = 600});
  EXPECT_LT(tok.encode(corpus).size(), corpus.size() / 3);
  TempDir dir;
  tok.save(dir.path);
  const auto again = BpeTokenizer::load(dir.path);
  EXPECT_EQ(again.merges(), tok.merges());
  EXPECT_EQ(again.vocab_size(), tok.vocab_size());
  EXPECT_EQ(again.special_tokens(), tok.special_tokens());
  for (int32_t id = 0; id < tok.vocab_size(); ++id) EXPECT_EQ(again.token_bytes(id), tok.token_bytes(id));
  std::mt19937 rng(3);
  for (int round = 0; round < 100; ++round) {
    std::string s = corpus.substr(rng() % corpus.size(), rng() % 50);
    for (int k = 0; k < 3; ++k)
      s.insert(s.begin() + std::ptrdiff_t(s.empty() ? 0 : rng() % s.size()), char(rng() % 256));
    EXPECT_EQ(again.encode(s), tok.encode(s));
    EXPECT_EQ(tok.decode(tok.encode(s)), s);
  }
  // Files: no temporaries left behind by the atomic writes.
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path), fs::directory_iterator()), 2);
}

TEST(BpeTrain, FromFiles) {
  TempDir dir;
  write(dir.path + "/a.txt", "ab ab");
  write(dir.path + "/b.txt", " ab cd");
  BpeTrainOptions opt{.vocab_size = 1000, .min_frequency = 1, .special_tokens = {}};
  EXPECT_EQ(BpeTokenizer::train_files({dir.path + "/a.txt", dir.path + "/b.txt"}, opt).merges(),
            (Merges{{"a", "b"}, {" ", "ab"}, {" ", "c"}, {" c", "d"}}));
  const std::string msg = error_of([&] { BpeTokenizer::train_files({dir.path + "/missing.txt"}, opt); });
  EXPECT_NE(msg.find("missing.txt"), std::string::npos) << msg;
}

// ---- bad files: each error names the file and the line or key --------------------------------

class BpeBadFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    // A small valid pair of files to spoil: bytes + merges a+b, " "+ab ("Ġ" is GPT-2's space).
    BpeTrainOptions opt{.vocab_size = 259, .min_frequency = 1};
    BpeTokenizer::train("ab ab ab cd", opt).save(dir.path);
    json = dir.path + "/encoder.json";
    merges = dir.path + "/vocab.bpe";
    ASSERT_EQ(read(merges), "#version: 0.2\na b\nĠ ab\n");
    good_json = read(json);
  }
  // The error of loading the files after writing `encoder_json` / `vocab_bpe` (when given).
  std::string load_error(std::optional<std::string> encoder_json, std::optional<std::string> vocab_bpe) {
    if (encoder_json) write(json, *encoder_json);
    if (vocab_bpe) write(merges, *vocab_bpe);
    return error_of([&] { BpeTokenizer::load(dir.path); });
  }
  static void expect_has(const std::string& msg, std::initializer_list<std::string_view> parts) {
    ASSERT_FALSE(msg.empty()) << "no ember::Error";
    for (auto p : parts) EXPECT_NE(msg.find(p), std::string::npos) << "'" << p << "' not in: " << msg;
  }
  // encoder.json with one entry changed: the text `from` replaced by `to`.
  std::string json_with(std::string_view from, std::string_view to) {
    std::string s = good_json;
    const size_t at = s.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return s.replace(at, from.size(), to);
  }

  TempDir dir;
  std::string json, merges, good_json;
};

TEST_F(BpeBadFiles, GoodFilesLoad) { EXPECT_EQ(BpeTokenizer::load(dir.path).merge_count(), 2u); }

TEST_F(BpeBadFiles, MissingFiles) {
  fs::remove(merges);
  expect_has(load_error({}, {}), {merges, "cannot open"});
  fs::remove(json);
  expect_has(load_error({}, {}), {json, "cannot open"});
}

TEST_F(BpeBadFiles, EncoderJsonSyntax) {
  expect_has(load_error("{\n\"a\": 1,\n\"b\" 2\n}", {}), {json, "line 3", "not valid JSON"});
  expect_has(load_error(good_json.substr(0, good_json.size() / 2), {}), {json, "line 1", "not valid JSON"});
  expect_has(load_error("", {}), {json, "not valid JSON"});
}

TEST_F(BpeBadFiles, EncoderJsonShape) {
  expect_has(load_error("[1, 2]", {}), {json, "array", "expected an object"});
  expect_has(load_error("{}", {}), {json, "empty"});
  expect_has(load_error(json_with("\"ab\": 256", "\"ab\": \"x\""), {}), {json, "key \"ab\"", "integer"});
  expect_has(load_error(json_with("\"ab\": 256", "\"ab\": 2.5"), {}), {json, "key \"ab\"", "integer"});
  expect_has(load_error(json_with("\"ab\": 256", "\"ab\": {}"), {}), {json, "key \"ab\"", "integer"});
  expect_has(load_error(json_with("\"ab\": 256", "\"ab\": -1"), {}), {json, "key \"ab\"", "-1"});
}

TEST_F(BpeBadFiles, EncoderJsonIds) {
  expect_has(load_error(json_with("\"ab\": 256", "\"ab\": 0"), {}), {json, "\"!\"", "\"ab\"", "both have id 0"});
  expect_has(load_error(json_with("\"ab\": 256", "\"ab\": 900"), {}), {json, "key \"ab\"", "900"});
  expect_has(load_error(json_with("\"ab\": 256", "\"a\":256"), {}), {json, "key \"a\"", "twice"});
  expect_has(load_error(json_with("\"ab\": 256", "\"a中\":256"), {}), {json, "key \"a中\"", "byte alphabet"});
  // The space byte's token "Ġ" renamed: no token for byte 0x20.
  expect_has(load_error(json_with("\"Ġ\": ", "\"Ġx\": "), {}), {json, "byte 0x20", "\"Ġ\""});
}

TEST_F(BpeBadFiles, MergesFile) {
  expect_has(load_error({}, "a b\nĠ ab\n"), {merges, "line 1", "#version"});
  expect_has(load_error({}, ""), {merges, "empty"});
  expect_has(load_error({}, "#version: 0.2\na b\nĠ\n"), {merges, "line 3", "two tokens"});
  expect_has(load_error({}, "#version: 0.2\na b\nĠ ab x\n"), {merges, "line 3", "two tokens"});
  expect_has(load_error({}, "#version: 0.2\na  b\n"), {merges, "line 2", "two tokens"});
  expect_has(load_error({}, "#version: 0.2\na b\nĠ ab\nĠ"), {merges, "line 4", "two tokens"});  // truncated
  expect_has(load_error({}, "#version: 0.2\na b\nĠ abc\n"), {merges, "line 3", "\"abc\"", json});
  expect_has(load_error({}, "#version: 0.2\na b\nb a\n"), {merges, "line 3", "\"ba\"", json});
  expect_has(load_error({}, "#version: 0.2\na b\nĠ ab\na b\n"), {merges, "line 4", "repeats line 2"});
}

TEST(BpeDecode, RejectsIdsOutsideTheVocabulary) {
  const auto tok = BpeTokenizer::train("ab", BpeTrainOptions{.vocab_size = 300});
  const std::string msg = error_of([&] { tok.decode(Ids{1, tok.vocab_size()}); });
  EXPECT_NE(msg.find("position 1"), std::string::npos) << msg;
  EXPECT_THROW(tok.decode(Ids{-1}), ember::Error);
}

// ---- training against an independent implementation -------------------------------------------

TEST(BpeTrain, MatchesANaiveTrainer) {
  // gen_bpe_train_reference.py recounts every pair after every merge (no incremental updates)
  // on a seeded 136 KB corpus with many equal counts; the first 400 merges must agree.
  const auto ref = nlohmann::json::parse(read(EMBER_BPE_FIXTURES "/bpe_train_reference.json"));
  auto unhex = [](const std::string& h) {
    std::string out;
    for (size_t i = 0; i < h.size(); i += 2) out += char(std::stoi(h.substr(i, 2), nullptr, 16));
    return out;
  };
  Merges want;
  for (const auto& m : ref["merges"]) want.emplace_back(unhex(m[0]), unhex(m[1]));
  ASSERT_EQ(want.size(), 400u);
  BpeTrainOptions opt{.vocab_size = 256 + 400, .min_frequency = ref["min_frequency"], .special_tokens = {}};
  const auto tok = BpeTokenizer::train_files({EMBER_BPE_FIXTURES "/bpe_train_corpus.txt"}, opt);
  const Merges got = tok.merges();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) ASSERT_EQ(got[i], want[i]) << "merge " << i;
}

TEST(BpeEncode, MergesOneRankAtATimeEvenWhenRanksAreOutOfOrder) {
  // A merges file whose first merge uses a token that only the second one makes: rank 0 is
  // "ab"+"a", rank 1 is "a"+"b". GPT-2's bpe() merges every occurrence of the lowest-ranked pair
  // present, then looks again: in "abab...ab" only (a,b) has a rank, so all of them merge and
  // (ab,ab) has none; with a final "a", the next round finds (ab,a) at the end.
  TempDir dir;
  BpeTokenizer::train("", BpeTrainOptions{.vocab_size = 256, .special_tokens = {}}).save(dir.path);
  auto encoder = nlohmann::json::parse(read(dir.path + "/encoder.json"));
  encoder["ab"] = 256;
  encoder["aba"] = 257;
  write(dir.path + "/encoder.json", encoder.dump());
  write(dir.path + "/vocab.bpe", "#version: 0.2\nab a\na b\n");
  const auto tok = BpeTokenizer::load(dir.path);
  std::string abs;
  for (int i = 0; i < 40; ++i) abs += "ab";  // 80 bytes: long enough for the heap path
  for (const std::string& s : {std::string("abab"), abs}) {
    EXPECT_EQ(tok.encode(s), Ids(s.size() / 2, 256)) << s.size();
    Ids want(s.size() / 2 - 1, 256);
    want.push_back(257);
    EXPECT_EQ(tok.encode(s + "a"), want) << s.size();
  }
}

TEST_F(BpeBadFiles, DamagedBytesGiveAnErrorOrALoad) {
  // Random byte flips, insertions and truncations of both files: each load either succeeds or
  // throws ember::Error naming the damaged file; nothing else escapes.
  const std::string good_merges = read(merges);
  std::mt19937 rng(11);
  for (int round = 0; round < 200; ++round) {
    const bool in_json = round % 2 == 0;
    std::string s = in_json ? good_json : good_merges;
    switch (rng() % 3) {
      case 0:
        s[rng() % s.size()] = char(rng() % 256);
        break;
      case 1:
        s.insert(s.begin() + std::ptrdiff_t(rng() % s.size()), char(rng() % 256));
        break;
      default:
        s.resize(rng() % s.size());
        break;
    }
    write(in_json ? json : merges, s);
    write(in_json ? merges : json, in_json ? good_merges : good_json);
    try {
      BpeTokenizer::load(dir.path);
    } catch (const ember::Error& e) {
      EXPECT_NE(std::string(e.what()).find(in_json ? json : merges), std::string::npos) << e.what();
    } catch (const std::exception& e) {
      ADD_FAILURE() << "round " << round << ": not an ember::Error: " << e.what();
    }
  }
}

// ---- from_vocab_and_merges (Hugging Face tokenizer.json's parts) -------------------------------

// GPT-2's byte -> character table (bytes_to_unicode in encoder.py): printable Latin-1 bytes keep
// their code point, the others take 256, 257, ... in byte order. Written here from that definition.
std::string gpt2_spelling(std::string_view bytes) {
  std::string out;
  for (unsigned char b : bytes) {
    unsigned cp = b;
    if (!((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174))) {
      unsigned n = 0;
      for (unsigned c = 0; c < b; ++c)
        if (!((c >= 33 && c <= 126) || (c >= 161 && c <= 172) || (c >= 174))) ++n;
      cp = 256 + n;
    }
    if (cp < 0x80) out += char(cp);
    else out += {char(0xC0 | (cp >> 6)), char(0x80 | (cp & 0x3F))};
  }
  return out;
}

// Bytes are ids 0..255; merges he (256), ll (257), hell (258), " w" (259); special <|end|> (260).
BpeTokenizer hand_made_tokenizer() {
  std::vector<std::pair<std::string, int32_t>> vocab;
  for (int b = 0; b < 256; ++b) vocab.emplace_back(gpt2_spelling(std::string(1, char(b))), b);
  vocab.insert(vocab.end(), {{"he", 256}, {"ll", 257}, {"hell", 258}, {gpt2_spelling(" w"), 259}});
  return BpeTokenizer::from_vocab_and_merges(vocab, {{"h", "e"}, {"l", "l"}, {"he", "ll"}, {gpt2_spelling(" "), "w"}},
                                             {{"<|end|>", 260}}, "test.json");
}

TEST(BpeFromParts, EncodesWithHandComputedIds) {
  const BpeTokenizer tok = hand_made_tokenizer();
  EXPECT_EQ(tok.vocab_size(), 261);
  EXPECT_EQ(tok.merge_count(), 4u);
  // "hello": h e l l o -> he l l o (rank 0) -> he ll o (rank 1) -> hell o (rank 2)
  // " world": Ġ w o r l d -> " w" o r l d (rank 3)
  EXPECT_EQ(tok.encode("hello world"), (Ids{258, 'o', 259, 'o', 'r', 'l', 'd'}));
  EXPECT_EQ(tok.encode_with_special("hi<|end|>he"), (Ids{'h', 'i', 260, 256}));
  EXPECT_EQ(tok.encode("hi<|end|>"), (Ids{'h', 'i', '<', '|', 'e', 'n', 'd', '|', '>'}));
  EXPECT_EQ(tok.decode(Ids{258, 'o', 259, 260}), "hello w<|end|>");
  for (std::string s : {"hello world", "well, hell\n\tworld ", "\xff\xfe odd bytes"})
    EXPECT_EQ(tok.decode(tok.encode(s)), s);
  ASSERT_EQ(tok.special_tokens().size(), 1u);
  EXPECT_EQ(tok.special_tokens()[0], (std::pair<std::string, int32_t>{"<|end|>", 260}));
}

void expect_has(const std::string& msg, std::initializer_list<std::string_view> parts) {
  ASSERT_FALSE(msg.empty()) << "no ember::Error";
  for (auto p : parts) EXPECT_NE(msg.find(p), std::string::npos) << "'" << p << "' not in: " << msg;
}

TEST(BpeFromParts, RejectsBadParts) {
  std::vector<std::pair<std::string, int32_t>> bytes;
  for (int b = 0; b < 256; ++b) bytes.emplace_back(gpt2_spelling(std::string(1, char(b))), b);
  auto error = [&](std::vector<std::pair<std::string, int32_t>> extra, std::vector<std::pair<std::string, std::string>> merges,
                   std::vector<std::pair<std::string, int32_t>> specials = {}) {
    auto vocab = bytes;
    vocab.insert(vocab.end(), extra.begin(), extra.end());
    return error_of([&] { BpeTokenizer::from_vocab_and_merges(vocab, merges, specials, "t.json"); });
  };
  expect_has(error({{"ab", 257}}, {}), {"t.json", "\"ab\"", "id 257 is outside [0, 257)"});
  expect_has(error({{"ab", 256}}, {}, {{"ab", 256}, {"<s>", 258}}), {"no token has id 257"});
  expect_has(error({{"ab", 256}}, {{"a", "c"}, {"a", "b"}}), {"t.json", "merge 0", "\"ac\"", "not in the vocabulary"});
  expect_has(error({{"ab", 256}}, {{"a", "b"}, {"a", "b"}}), {"merge 1 repeats merge 0"});
  expect_has(error({{"ab", 256}}, {{"a", "x y"}}), {"merge 0", "\"x y\"", "not in the vocabulary"});
  expect_has(error({{"ab", 256}}, {}, {{"<s>", 256}}), {"special token \"<s>\"", "id 256", "taken"});
  expect_has(error({{"\xe2\x82\xac", 256}}, {}), {"outside GPT-2's byte alphabet"});
  auto no_byte = bytes;
  no_byte.pop_back();
  expect_has(error_of([&] { BpeTokenizer::from_vocab_and_merges(no_byte, {}, {}, "t.json"); }), {"no token for byte 255"});
}
