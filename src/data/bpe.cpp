// Byte-level BPE: GPT-2's pre-tokeniser (a hand-written matcher of its regex), merge-rank
// encoding with a per-pre-token cache, GPT-2's two files, and incremental-count training.
#include "ember/data/bpe.hpp"

#include <algorithm>
#include <climits>
#include <filesystem>
#include <mutex>
#include <nlohmann/json.hpp>
#include <queue>
#include <unordered_map>

#include "ember/core/atomic_write.hpp"
#include "ember/core/error.hpp"
#include "file_io.hpp"

namespace ember::data {
namespace {

// ---- Unicode classes ------------------------------------------------------------------------

struct CodePointRange {
  char32_t first, last;
};
#include "bpe_unicode_tables.inc"

bool in_ranges(std::span<const CodePointRange> ranges, char32_t c) {
  auto it = std::upper_bound(ranges.begin(), ranges.end(), c,
                             [](char32_t v, const CodePointRange& r) { return v < r.first; });
  return it != ranges.begin() && c <= std::prev(it)->last;
}

// The Unicode White_Space property: what \s matches in Python's `regex` module (GPT-2's).
// JavaScript's \s differs on two code points (it has U+FEFF and lacks U+0085).
bool is_white_space(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

enum class CharClass : uint8_t { letter, number, space, other };

struct AsciiClasses {
  CharClass table[128];
  constexpr AsciiClasses() : table() {
    for (int c = 0; c < 128; ++c) {
      table[c] = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ? CharClass::letter
                 : (c >= '0' && c <= '9')                         ? CharClass::number
                 : ((c >= 0x09 && c <= 0x0D) || c == ' ')         ? CharClass::space
                                                                  : CharClass::other;
    }
  }
};
constexpr AsciiClasses kAscii;

CharClass classify(char32_t c) {
  if (c < 128) return kAscii.table[c];
  if (is_white_space(c)) return CharClass::space;
  if (in_ranges(kLetterRanges, c)) return CharClass::letter;
  if (in_ranges(kNumberRanges, c)) return CharClass::number;
  return CharClass::other;
}

// One character of the text: its class and its length in bytes. A byte that does not start a
// valid UTF-8 sequence (overlong, surrogate, above U+10FFFF, truncated) is one "other" character.
struct Char {
  CharClass cls;
  uint8_t len;
};

Char char_at(std::string_view s, size_t i) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  if (b0 < 0x80) return {kAscii.table[b0], 1};
  int len;
  char32_t c, min;
  if ((b0 & 0xE0) == 0xC0) {
    len = 2;
    c = b0 & 0x1F;
    min = 0x80;
  } else if ((b0 & 0xF0) == 0xE0) {
    len = 3;
    c = b0 & 0x0F;
    min = 0x800;
  } else if ((b0 & 0xF8) == 0xF0) {
    len = 4;
    c = b0 & 0x07;
    min = 0x10000;
  } else
    return {CharClass::other, 1};
  if (i + len > s.size()) return {CharClass::other, 1};
  for (int k = 1; k < len; ++k) {
    const auto b = static_cast<unsigned char>(s[i + k]);
    if ((b & 0xC0) != 0x80) return {CharClass::other, 1};
    c = (c << 6) | (b & 0x3F);
  }
  if (c < min || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) return {CharClass::other, 1};
  return {classify(c), static_cast<uint8_t>(len)};
}

// The length of the pre-token that GPT-2's regex matches at `pos` (the text has a char there).
// Alternatives in the pattern's order; the first that matches wins, as in a backtracking engine.
size_t match_at(std::string_view s, size_t pos) {
  const size_t n = s.size();
  // 's|'t|'re|'ve|'m|'ll|'d (ASCII apostrophe, lower case only)
  if (s[pos] == '\'' && pos + 1 < n) {
    const char a = s[pos + 1];
    if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
    if (pos + 2 < n) {
      const char b = s[pos + 2];
      if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
    }
  }
  const Char first = char_at(s, pos);
  // ` ?\p{L}+`, ` ?\p{N}+`, ` ?[^\s\p{L}\p{N}]+`: an optional U+0020, then a run of one class.
  size_t start = pos;
  Char c = first;
  if (s[pos] == ' ' && pos + 1 < n) {
    start = pos + 1;
    c = char_at(s, start);
  }
  if (c.cls == CharClass::space) {  // the space (if any) was not followed by a run; retry without it
    start = pos;
    c = first;
  }
  if (c.cls != CharClass::space) {
    size_t end = start + c.len;
    while (end < n) {
      const Char d = char_at(s, end);
      if (d.cls != c.cls) break;
      end += d.len;
    }
    return end - pos;
  }
  // `\s+(?!\S)|\s+`: a whitespace run; if a non-space follows, leave its last char to the next
  // pre-token (which then starts with it, e.g. " word"), unless the run is one char long.
  size_t end = pos, last = pos;
  while (end < n) {
    const Char d = char_at(s, end);
    if (d.cls != CharClass::space) break;
    last = end;
    end += d.len;
  }
  if (end == n || last == pos) return end - pos;
  return last - pos;
}

// ---- GPT-2's byte <-> character table ------------------------------------------------------

// Printable Latin-1 bytes ('!'..'~', '¡'..'¬', '®'..'ÿ') stand for themselves; the other 68
// bytes map, in byte order, to U+0100, U+0101, ... The same order gives a trained vocabulary's
// first 256 ids (id i is byte kByteOrder[i]), so they match GPT-2's.
struct ByteTables {
  char32_t to_char[256];
  uint8_t order[256];
  ByteTables() {
    auto printable = [](int b) {
      return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    };
    int k = 0, extra = 0;
    for (int b = 0; b < 256; ++b)
      if (printable(b)) {
        to_char[b] = static_cast<char32_t>(b);
        order[k++] = static_cast<uint8_t>(b);
      }
    for (int b = 0; b < 256; ++b)
      if (!printable(b)) {
        to_char[b] = static_cast<char32_t>(0x100 + extra++);
        order[k++] = static_cast<uint8_t>(b);
      }
  }
};
const ByteTables& byte_tables() {
  static const ByteTables t;
  return t;
}

void append_utf8(std::string& out, char32_t c) {
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else {  // the table's characters are all below U+0800
    out += static_cast<char>(0xC0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3F));
  }
}

// A token's bytes as GPT-2 writes them in its files.
std::string bytes_to_gpt2_string(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char b : bytes) append_utf8(out, byte_tables().to_char[b]);
  return out;
}

// The inverse; nullopt when `s` has a character outside the 256 of the table.
std::optional<std::string> gpt2_string_to_bytes(std::string_view s) {
  static const auto from_char = [] {
    std::vector<int> v(0x144, -1);
    for (int b = 0; b < 256; ++b) v[byte_tables().to_char[b]] = b;
    return v;
  }();
  std::string out;
  for (size_t i = 0; i < s.size();) {
    const auto b0 = static_cast<unsigned char>(s[i]);
    char32_t c;
    if (b0 < 0x80) {
      c = b0;
      i += 1;
    } else if ((b0 & 0xE0) == 0xC0 && i + 1 < s.size() && (static_cast<unsigned char>(s[i + 1]) & 0xC0) == 0x80) {
      c = ((b0 & 0x1F) << 6) | (static_cast<unsigned char>(s[i + 1]) & 0x3F);
      i += 2;
    } else {
      return std::nullopt;
    }
    if (c >= from_char.size() || from_char[c] < 0) return std::nullopt;
    out += static_cast<char>(from_char[c]);
  }
  return out;
}

// ---- helpers --------------------------------------------------------------------------------

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
template <class V>
using StringMap = std::unordered_map<std::string, V, StringHash, std::equal_to<>>;

uint64_t pair_key(int32_t a, int32_t b) { return (uint64_t(uint32_t(a)) << 32) | uint32_t(b); }

size_t line_of(std::string_view text, size_t byte) {
  byte = std::min(byte, text.size());
  return 1 + static_cast<size_t>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(byte), '\n'));
}

}  // namespace

// ---- the tokenizer's state ------------------------------------------------------------------

struct BpeTokenizer::Impl {
  struct Merge {
    int32_t rank, result;
  };
  std::vector<std::string> tokens;  // id -> bytes
  StringMap<int32_t> ids;           // bytes -> id
  int32_t byte_ids[256];
  std::vector<std::pair<int32_t, int32_t>> merge_list;  // by rank
  std::vector<int32_t> merge_result;                    // by rank
  std::unordered_map<uint64_t, Merge> merges;
  std::vector<int32_t> specials;  // ids, ascending

  std::mutex cache_mutex;
  StringMap<std::vector<int32_t>> cache;
  static constexpr size_t kCacheEntries = 1 << 17, kCachedTokenBytes = 128;

  // Ranks every merge; `specials` = tokens that are neither a byte nor a merge result.
  void index_merges_and_specials() {
    merges.clear();
    merge_result.clear();
    std::vector<bool> made(tokens.size(), false);
    for (int b = 0; b < 256; ++b) made[size_t(byte_ids[b])] = true;
    for (size_t r = 0; r < merge_list.size(); ++r) {
      const auto [a, b] = merge_list[r];
      const int32_t result = ids.at(tokens[size_t(a)] + tokens[size_t(b)]);
      merges.emplace(pair_key(a, b), Merge{int32_t(r), result});
      merge_result.push_back(result);
      made[size_t(result)] = true;
    }
    specials.clear();
    for (size_t id = 0; id < tokens.size(); ++id)
      if (!made[id]) specials.push_back(int32_t(id));
  }

  // GPT-2's bpe(): merge the lowest-ranked adjacent pair, all its occurrences left to right,
  // until no pair has a rank. A scan per merge is quadratic in the piece's length, so long
  // pieces (a run of letters without spaces, say) take the heap path, which gives the same result.
  static constexpr size_t kShortPiece = 64;
  void bpe(std::string_view piece, std::vector<int32_t>& out) const {
    if (piece.size() > kShortPiece) return bpe_long(piece, out);
    std::vector<int32_t> sym(piece.size());
    for (size_t i = 0; i < piece.size(); ++i) sym[i] = byte_ids[static_cast<unsigned char>(piece[i])];
    auto lookup = [&](int32_t a, int32_t b) -> Merge {
      auto it = merges.find(pair_key(a, b));
      return it == merges.end() ? Merge{INT32_MAX, -1} : it->second;
    };
    std::vector<Merge> pair(sym.size() > 1 ? sym.size() - 1 : 0);  // pair[i]: sym[i], sym[i+1]
    for (size_t i = 0; i + 1 < sym.size(); ++i) pair[i] = lookup(sym[i], sym[i + 1]);
    while (sym.size() > 1) {
      size_t best = 0;
      for (size_t i = 1; i < pair.size(); ++i)
        if (pair[i].rank < pair[best].rank) best = i;
      if (pair[best].rank == INT32_MAX) break;
      const int32_t a = sym[best], b = sym[best + 1], c = pair[best].result;
      // Rewrite in place; pairs that touch a new token are looked up again, others are kept.
      size_t w = 0;
      std::vector<bool> fresh;  // whether out symbol w is a new c
      fresh.reserve(sym.size());
      for (size_t i = 0; i < sym.size();) {
        if (i >= best && i + 1 < sym.size() && sym[i] == a && sym[i + 1] == b) {
          sym[w] = c;
          fresh.push_back(true);
          i += 2;
        } else {
          const bool kept_pair = i + 1 < sym.size();
          sym[w] = sym[i];
          if (kept_pair) pair[w] = pair[i];  // provisional: valid if neither side changes
          fresh.push_back(false);
          i += 1;
        }
        ++w;
      }
      sym.resize(w);
      pair.resize(w > 0 ? w - 1 : 0);
      for (size_t i = 0; i + 1 < w; ++i)
        if (fresh[i] || fresh[i + 1]) pair[i] = lookup(sym[i], sym[i + 1]);
    }
    out.insert(out.end(), sym.begin(), sym.end());
  }

  // The same merges in O(n log n): a min-heap of (rank, position) over the current pairs of a
  // linked list of symbols. All entries of the lowest rank are taken at once and applied in
  // position order, skipping those a previous merge of the batch consumed (GPT-2's left-to-right
  // rule for "a a a"); only then are the new pairs pushed, so a batch is one step of bpe().
  // Stale entries (the pair at that position has changed) are recognised and dropped: a
  // position's symbols only grow, so an old (left, right) never comes back.
  void bpe_long(std::string_view piece, std::vector<int32_t>& out) const {
    const auto n = static_cast<int32_t>(piece.size());
    const auto len = static_cast<size_t>(n);
    std::vector<int32_t> sym(len), next(len), prev(len);
    for (int32_t i = 0; i < n; ++i) {
      sym[size_t(i)] = byte_ids[static_cast<unsigned char>(piece[size_t(i)])];
      next[size_t(i)] = i + 1;
      prev[size_t(i)] = i - 1;
    }
    using Entry = std::pair<int32_t, int32_t>;  // rank, position; the smallest on top
    std::priority_queue<Entry, std::vector<Entry>, std::greater<>> heap;
    auto push = [&](int32_t pos) {
      const int32_t nx = next[size_t(pos)];
      if (nx >= n) return;
      auto it = merges.find(pair_key(sym[size_t(pos)], sym[size_t(nx)]));
      if (it != merges.end()) heap.emplace(it->second.rank, pos);
    };
    for (int32_t i = 0; i + 1 < n; ++i) push(i);
    std::vector<int32_t> batch, merged;
    while (!heap.empty()) {
      const int32_t rank = heap.top().first;
      batch.clear();
      while (!heap.empty() && heap.top().first == rank) {
        batch.push_back(heap.top().second);
        heap.pop();
      }
      const auto [a, b] = merge_list[size_t(rank)];
      const int32_t c = merge_result[size_t(rank)];
      merged.clear();
      for (int32_t pos : batch) {
        const int32_t nx = next[size_t(pos)];
        if (sym[size_t(pos)] != a || nx >= n || sym[size_t(nx)] != b) continue;
        sym[size_t(pos)] = c;
        sym[size_t(nx)] = -1;
        next[size_t(pos)] = next[size_t(nx)];
        if (next[size_t(nx)] < n) prev[size_t(next[size_t(nx)])] = pos;
        merged.push_back(pos);
      }
      for (int32_t pos : merged) {
        if (sym[size_t(pos)] != c) continue;  // merged again later in the batch? (cannot: c != a)
        if (prev[size_t(pos)] >= 0) push(prev[size_t(pos)]);
        push(pos);
      }
    }
    for (int32_t i = 0; i < n; i = next[size_t(i)]) out.push_back(sym[size_t(i)]);
  }

  void encode_piece(std::string_view piece, std::vector<int32_t>& out) {
    if (piece.size() > kCachedTokenBytes) return bpe(piece, out);
    {
      std::lock_guard lock(cache_mutex);
      auto it = cache.find(piece);
      if (it != cache.end()) {
        out.insert(out.end(), it->second.begin(), it->second.end());
        return;
      }
    }
    const size_t from = out.size();
    bpe(piece, out);
    std::lock_guard lock(cache_mutex);
    if (cache.size() >= kCacheEntries) cache.clear();
    cache.emplace(std::string(piece), std::vector<int32_t>(out.begin() + std::ptrdiff_t(from), out.end()));
  }
};

// ---- encode / decode ------------------------------------------------------------------------

std::vector<std::string_view> BpeTokenizer::pretokenize(std::string_view text) {
  std::vector<std::string_view> out;
  for (size_t pos = 0; pos < text.size();) {
    const size_t len = match_at(text, pos);
    out.push_back(text.substr(pos, len));
    pos += len;
  }
  return out;
}

std::vector<int32_t> BpeTokenizer::encode(std::string_view text) const {
  std::vector<int32_t> out;
  out.reserve(text.size() / 3 + 1);
  for (size_t pos = 0; pos < text.size();) {
    const size_t len = match_at(text, pos);
    impl_->encode_piece(text.substr(pos, len), out);
    pos += len;
  }
  return out;
}

std::vector<int32_t> BpeTokenizer::encode_with_special(std::string_view text) const {
  std::vector<int32_t> out;
  size_t pos = 0;
  while (pos < text.size()) {
    // The leftmost special token; the longest where several start there.
    size_t at = std::string_view::npos, len = 0;
    int32_t id = -1;
    for (int32_t s : impl_->specials) {
      const std::string& t = impl_->tokens[size_t(s)];
      if (t.empty()) continue;
      const size_t p = text.find(t, pos);
      if (p < at || (p == at && p != std::string_view::npos && t.size() > len)) {
        at = p;
        len = t.size();
        id = s;
      }
    }
    if (at == std::string_view::npos) at = text.size();
    const std::vector<int32_t> plain = encode(text.substr(pos, at - pos));
    out.insert(out.end(), plain.begin(), plain.end());
    if (id < 0 || at == text.size()) break;
    out.push_back(id);
    pos = at + len;
  }
  return out;
}

std::string BpeTokenizer::decode(std::span<const int32_t> ids) const {
  std::string out;
  const auto n = static_cast<int32_t>(impl_->tokens.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    EMBER_CHECK(ids[i] >= 0 && ids[i] < n, "BpeTokenizer::decode: id ", ids[i], " at position ", i,
                " is outside the vocabulary [0, ", n, ")");
    out += impl_->tokens[size_t(ids[i])];
  }
  return out;
}

int32_t BpeTokenizer::vocab_size() const { return static_cast<int32_t>(impl_->tokens.size()); }
size_t BpeTokenizer::merge_count() const { return impl_->merge_list.size(); }

const std::string& BpeTokenizer::token_bytes(int32_t id) const {
  EMBER_CHECK(id >= 0 && id < vocab_size(), "BpeTokenizer::token_bytes: id ", id, " is outside the vocabulary [0, ",
              vocab_size(), ")");
  return impl_->tokens[size_t(id)];
}

std::optional<int32_t> BpeTokenizer::token_id(std::string_view bytes) const {
  auto it = impl_->ids.find(bytes);
  if (it == impl_->ids.end()) return std::nullopt;
  return it->second;
}

std::vector<std::pair<std::string, std::string>> BpeTokenizer::merges() const {
  std::vector<std::pair<std::string, std::string>> out;
  out.reserve(impl_->merge_list.size());
  for (auto [a, b] : impl_->merge_list) out.emplace_back(impl_->tokens[size_t(a)], impl_->tokens[size_t(b)]);
  return out;
}

std::vector<std::pair<std::string, int32_t>> BpeTokenizer::special_tokens() const {
  std::vector<std::pair<std::string, int32_t>> out;
  for (int32_t id : impl_->specials) out.emplace_back(impl_->tokens[size_t(id)], id);
  return out;
}

// ---- GPT-2's files --------------------------------------------------------------------------

namespace {

// encoder.json through nlohmann's SAX interface: the top level must be one object whose values
// are integer ids; the first problem is kept with the key (or, for syntax, the line) it is at.
class EncoderJsonReader : public nlohmann::json_sax<nlohmann::json> {
 public:
  EncoderJsonReader(const std::string& path, std::string_view text) : path_(path), text_(text) {}

  StringMap<int64_t> entries;  // key (GPT-2 spelling) -> id
  std::string error;

  bool null() override { return wrong_value("null"); }
  bool boolean(bool) override { return wrong_value("a boolean"); }
  bool number_integer(number_integer_t v) override { return id(v); }
  bool number_unsigned(number_unsigned_t v) override {
    return id(v > uint64_t(INT64_MAX) ? INT64_MAX : static_cast<int64_t>(v));
  }
  bool number_float(number_float_t, const string_t&) override { return wrong_value("a non-integer number"); }
  bool string(string_t&) override { return wrong_value("a string"); }
  bool binary(binary_t&) override { return wrong_value("binary data"); }
  bool start_object(std::size_t) override {
    if (depth_++ == 0) return true;
    return wrong_value("an object");
  }
  bool end_object() override {
    --depth_;
    return true;
  }
  bool start_array(std::size_t) override {
    if (depth_ == 0) return fail("the top level is an array; expected an object mapping token strings to ids");
    return wrong_value("an array");
  }
  bool end_array() override { return true; }
  bool key(string_t& k) override {
    key_ = k;
    return true;
  }
  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& ex) override {
    std::string what = ex.what();
    if (auto p = what.find("syntax error"); p != std::string::npos) what = what.substr(p);
    return fail("line " + std::to_string(line_of(text_, position)) + ": not valid JSON: " + what);
  }

 private:
  bool fail(const std::string& msg) {
    if (error.empty()) error = "BpeTokenizer: " + path_ + ": " + msg;
    return false;
  }
  bool wrong_value(const char* what) {
    if (depth_ == 0)
      return fail(std::string("the top level is ") + what + "; expected an object mapping token strings to ids");
    return fail("key \"" + key_ + "\": expected an integer id, got " + what);
  }
  bool id(int64_t v) {
    if (depth_ == 0) return wrong_value("a number");
    if (v < 0 || v > INT32_MAX) return fail("key \"" + key_ + "\": id " + std::to_string(v) + " is outside [0, 2^31)");
    if (!entries.emplace(key_, v).second) return fail("key \"" + key_ + "\" appears twice");
    return true;
  }

  const std::string& path_;
  std::string_view text_;
  std::string key_;
  int depth_ = 0;
};

}  // namespace

BpeTokenizer BpeTokenizer::from_gpt2_files(const std::string& encoder_json_path, const std::string& vocab_bpe_path) {
  auto impl = std::make_shared<Impl>();
  const std::string json_text = detail::read_file(encoder_json_path, "BpeTokenizer");
  EncoderJsonReader reader(encoder_json_path, json_text);
  const bool ok = nlohmann::json::sax_parse(json_text, &reader);
  if (!reader.error.empty()) EMBER_FAIL(reader.error);
  EMBER_CHECK(ok, "BpeTokenizer: ", encoder_json_path, ": not a JSON object of token strings to ids");
  const std::string& jp = encoder_json_path;
  EMBER_CHECK(!reader.entries.empty(), "BpeTokenizer: ", jp, ": the object is empty; expected GPT-2's token -> id map");

  // Ids must be 0..N-1, each once: an embedding table has a row per id.
  const size_t n = reader.entries.size();
  std::vector<const std::string*> key_of(n, nullptr);
  for (const auto& [key, id] : reader.entries) {
    EMBER_CHECK(size_t(id) < n, "BpeTokenizer: ", jp, ": key \"", key, "\": id ", id,
                " is not below the number of entries (", n, "); ids must be 0..", n - 1);
    EMBER_CHECK(key_of[size_t(id)] == nullptr, "BpeTokenizer: ", jp, ": keys \"", *key_of[size_t(id)], "\" and \"", key,
                "\" both have id ", id);
    key_of[size_t(id)] = &key;
  }
  impl->tokens.resize(n);
  for (size_t id = 0; id < n; ++id) {
    auto bytes = gpt2_string_to_bytes(*key_of[id]);
    EMBER_CHECK(bytes.has_value(), "BpeTokenizer: ", jp, ": key \"", *key_of[id],
                "\" has a character outside GPT-2's byte alphabet (is this a byte-level BPE encoder.json?)");
    EMBER_CHECK(!bytes->empty(), "BpeTokenizer: ", jp, ": key \"\" (id ", id, ") is an empty token");
    impl->tokens[id] = std::move(*bytes);
    impl->ids.emplace(impl->tokens[id], int32_t(id));
  }
  for (int b = 0; b < 256; ++b) {
    auto it = impl->ids.find(std::string(1, static_cast<char>(b)));
    EMBER_CHECK(it != impl->ids.end(), "BpeTokenizer: ", jp, ": no token for byte 0x", "0123456789abcdef"[b >> 4],
                "0123456789abcdef"[b & 15], " (key \"", bytes_to_gpt2_string(std::string(1, char(b))),
                "\"); a byte-level vocabulary has all 256");
    impl->byte_ids[b] = it->second;
  }

  const std::string& vp = vocab_bpe_path;
  const std::string merges_text = detail::read_file(vp, "BpeTokenizer");
  std::unordered_map<uint64_t, size_t> line_of_merge;
  size_t line = 0;
  for (size_t pos = 0; pos < merges_text.size();) {
    size_t eol = merges_text.find('\n', pos);
    if (eol == std::string::npos) eol = merges_text.size();
    std::string_view l(merges_text.data() + pos, eol - pos);
    pos = eol + 1;
    ++line;
    if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
    if (line == 1) {
      EMBER_CHECK(l.starts_with("#version"), "BpeTokenizer: ", vp,
                  ": line 1: expected GPT-2's '#version: 0.2' header, got \"", l.substr(0, 60),
                  "\" (is this a vocab.bpe merges file?)");
      continue;
    }
    if (l.empty()) continue;
    const size_t space = l.find(' ');
    EMBER_CHECK(space != std::string_view::npos && space > 0 && space + 1 < l.size() &&
                    l.find(' ', space + 1) == std::string_view::npos,
                "BpeTokenizer: ", vp, ": line ", line, ": expected two tokens separated by one space, got \"",
                l.substr(0, 80), "\"");
    int32_t side[2];
    for (int k = 0; k < 2; ++k) {
      const std::string_view t = k == 0 ? l.substr(0, space) : l.substr(space + 1);
      auto bytes = gpt2_string_to_bytes(t);
      auto it = bytes ? impl->ids.find(*bytes) : impl->ids.end();
      EMBER_CHECK(it != impl->ids.end(), "BpeTokenizer: ", vp, ": line ", line, ": token \"", t, "\" is not in ", jp);
      side[k] = it->second;
    }
    const std::string joined = impl->tokens[size_t(side[0])] + impl->tokens[size_t(side[1])];
    EMBER_CHECK(impl->ids.contains(joined), "BpeTokenizer: ", vp, ": line ", line, ": the merge's result \"",
                bytes_to_gpt2_string(joined), "\" is not in ", jp);
    auto [it, fresh] = line_of_merge.emplace(pair_key(side[0], side[1]), line);
    EMBER_CHECK(fresh, "BpeTokenizer: ", vp, ": line ", line, ": merge \"", l, "\" repeats line ", it->second);
    impl->merge_list.emplace_back(side[0], side[1]);
  }
  EMBER_CHECK(line >= 1, "BpeTokenizer: ", vp,
              ": the file is empty; expected GPT-2's '#version: 0.2' header and merges");
  impl->index_merges_and_specials();
  return BpeTokenizer(std::move(impl));
}

BpeTokenizer BpeTokenizer::from_vocab_and_merges(const std::vector<std::pair<std::string, int32_t>>& vocab,
                                                 const std::vector<std::pair<std::string, std::string>>& merges,
                                                 const std::vector<std::pair<std::string, int32_t>>& special_tokens,
                                                 std::string_view source) {
  auto impl = std::make_shared<Impl>();
  const size_t n_max = vocab.size() + special_tokens.size();
  std::vector<std::optional<std::string>> bytes_of(n_max);
  size_t n = 0;  // one past the largest id
  auto place = [&](int32_t id, std::string bytes, std::string_view what, const std::string& name) {
    EMBER_CHECK(id >= 0 && size_t(id) < n_max, "BpeTokenizer: ", source, ": ", what, " \"", name, "\": id ", id,
                " is outside [0, ", n_max, ") (ids must be 0..N-1 over the vocabulary and the special tokens)");
    auto& slot = bytes_of[size_t(id)];
    EMBER_CHECK(!slot || *slot == bytes, "BpeTokenizer: ", source, ": ", what, " \"", name, "\": id ", id,
                " is taken by another token");
    slot = std::move(bytes);
    n = std::max(n, size_t(id) + 1);
  };
  for (const auto& [spelling, id] : vocab) {
    auto bytes = gpt2_string_to_bytes(spelling);
    EMBER_CHECK(bytes.has_value(), "BpeTokenizer: ", source, ": vocab token \"", spelling,
                "\" has a character outside GPT-2's byte alphabet (is this a byte-level BPE vocabulary?)");
    EMBER_CHECK(!bytes->empty(), "BpeTokenizer: ", source, ": vocab token \"\" (id ", id, ") is empty");
    place(id, std::move(*bytes), "vocab token", spelling);
  }
  for (const auto& [text, id] : special_tokens) {
    EMBER_CHECK(!text.empty(), "BpeTokenizer: ", source, ": special token with id ", id, " is empty");
    place(id, text, "special token", text);
  }
  for (size_t id = 0; id < n; ++id)
    EMBER_CHECK(bytes_of[id].has_value(), "BpeTokenizer: ", source, ": no token has id ", id,
                " (ids must be 0..N-1 without gaps)");
  impl->tokens.resize(n);
  for (size_t id = 0; id < n; ++id) {
    impl->tokens[id] = std::move(*bytes_of[id]);
    auto [it, fresh] = impl->ids.emplace(impl->tokens[id], int32_t(id));
    EMBER_CHECK(fresh, "BpeTokenizer: ", source, ": ids ", it->second, " and ", id, " are the same token \"",
                bytes_to_gpt2_string(impl->tokens[id]), "\"");
  }
  for (int b = 0; b < 256; ++b) {
    auto it = impl->ids.find(std::string(1, static_cast<char>(b)));
    EMBER_CHECK(it != impl->ids.end(), "BpeTokenizer: ", source, ": no token for byte ", b, " (\"",
                bytes_to_gpt2_string(std::string(1, char(b))), "\"); a byte-level vocabulary has all 256");
    impl->byte_ids[b] = it->second;
  }
  std::unordered_map<uint64_t, size_t> index_of_merge;
  for (size_t m = 0; m < merges.size(); ++m) {
    int32_t side[2];
    for (int k = 0; k < 2; ++k) {
      const std::string& t = k == 0 ? merges[m].first : merges[m].second;
      auto bytes = gpt2_string_to_bytes(t);
      auto it = bytes ? impl->ids.find(*bytes) : impl->ids.end();
      EMBER_CHECK(it != impl->ids.end(), "BpeTokenizer: ", source, ": merge ", m, ": token \"", t,
                  "\" is not in the vocabulary");
      side[k] = it->second;
    }
    const std::string joined = impl->tokens[size_t(side[0])] + impl->tokens[size_t(side[1])];
    EMBER_CHECK(impl->ids.contains(joined), "BpeTokenizer: ", source, ": merge ", m, " (\"", merges[m].first, "\" \"",
                merges[m].second, "\"): the result \"", bytes_to_gpt2_string(joined), "\" is not in the vocabulary");
    auto [it, fresh] = index_of_merge.emplace(pair_key(side[0], side[1]), m);
    EMBER_CHECK(fresh, "BpeTokenizer: ", source, ": merge ", m, " repeats merge ", it->second);
    impl->merge_list.emplace_back(side[0], side[1]);
  }
  impl->index_merges_and_specials();
  return BpeTokenizer(std::move(impl));
}

BpeTokenizer BpeTokenizer::load(const std::string& dir) {
  return from_gpt2_files(dir + "/encoder.json", dir + "/vocab.bpe");
}

void BpeTokenizer::save(const std::string& dir) const {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  EMBER_CHECK(!ec, "BpeTokenizer::save: cannot create directory '", dir, "': ", ec.message());
  save(dir + "/encoder.json", dir + "/vocab.bpe");
}

void BpeTokenizer::save(const std::string& encoder_json_path, const std::string& vocab_bpe_path) const {
  // One line, in id order, as GPT-2's file (keys escaped by nlohmann; the characters of the byte
  // alphabet are all printable, so only '"' and '\\' need it).
  std::string encoder = "{";
  for (size_t id = 0; id < impl_->tokens.size(); ++id) {
    if (id > 0) encoder += ", ";
    encoder += nlohmann::json(bytes_to_gpt2_string(impl_->tokens[id])).dump();
    encoder += ": ";
    encoder += std::to_string(id);
  }
  encoder += "}";
  std::string merges = "#version: 0.2\n";
  for (auto [a, b] : impl_->merge_list) {
    merges += bytes_to_gpt2_string(impl_->tokens[size_t(a)]);
    merges += ' ';
    merges += bytes_to_gpt2_string(impl_->tokens[size_t(b)]);
    merges += '\n';
  }
  EMBER_CHECK(write_file_atomically(encoder_json_path, encoder), "BpeTokenizer::save: cannot write '",
              encoder_json_path, "'");
  EMBER_CHECK(write_file_atomically(vocab_bpe_path, merges), "BpeTokenizer::save: cannot write '", vocab_bpe_path, "'");
}

// ---- training -------------------------------------------------------------------------------

namespace {

struct Word {
  std::vector<int32_t> sym;
  int64_t freq;
};

class Trainer {
 public:
  Trainer(const StringMap<int64_t>& counts, const BpeTrainOptions& opt) : opt_(opt) {
    const auto& order = byte_tables().order;
    int32_t id_of_byte[256];
    for (int i = 0; i < 256; ++i) id_of_byte[order[i]] = add_token(std::string(1, static_cast<char>(order[i])));
    words_.reserve(counts.size());
    for (const auto& [piece, freq] : counts) {
      Word w{{}, freq};
      w.sym.reserve(piece.size());
      for (unsigned char b : piece) w.sym.push_back(id_of_byte[b]);
      words_.push_back(std::move(w));
    }
    for (size_t wi = 0; wi < words_.size(); ++wi) {
      const Word& w = words_[wi];
      for (size_t i = 0; i + 1 < w.sym.size(); ++i) {
        const uint64_t p = pair_key(w.sym[i], w.sym[i + 1]);
        count_[p] += w.freq;
        auto& list = where_[p];
        if (list.empty() || list.back() != wi) list.push_back(static_cast<uint32_t>(wi));
      }
    }
    for (const auto& [p, c] : count_) heap_.push({c, p});
  }

  void run(std::vector<std::string>& tokens, std::vector<std::pair<int32_t, int32_t>>& merges) {
    const size_t target = size_t(opt_.vocab_size) - opt_.special_tokens.size();  // checked by the caller
    while (tokens_.size() < target && !heap_.empty()) {
      const Entry top = heap_.top();
      heap_.pop();
      auto it = count_.find(top.pair);
      const int64_t now = it == count_.end() ? 0 : it->second;
      if (now != top.count) {  // stale: counts of old pairs only fall
        if (now > 0) heap_.push({now, top.pair});
        continue;
      }
      if (now < std::max<int64_t>(opt_.min_frequency, 1)) break;
      merge(top.pair);
    }
    tokens = std::move(tokens_);
    merges = std::move(merges_);
  }

 private:
  struct Entry {
    int64_t count;
    uint64_t pair;
  };
  // Highest count first; ties to the lexicographically smallest (left bytes, right bytes).
  struct Lower {
    const Trainer* t;
    bool operator()(const Entry& x, const Entry& y) const {
      if (x.count != y.count) return x.count < y.count;
      const std::string& xa = t->tokens_[x.pair >> 32];
      const std::string& ya = t->tokens_[y.pair >> 32];
      if (int c = xa.compare(ya); c != 0) return c > 0;
      return t->tokens_[x.pair & 0xFFFFFFFF].compare(t->tokens_[y.pair & 0xFFFFFFFF]) > 0;
    }
  };

  int32_t add_token(const std::string& bytes) {
    auto it = ids_.find(bytes);
    if (it != ids_.end()) return it->second;  // two merges may spell one token ("a"+"bc", "ab"+"c")
    tokens_.push_back(bytes);
    ids_.emplace(bytes, int32_t(tokens_.size() - 1));
    return int32_t(tokens_.size() - 1);
  }

  void merge(uint64_t p) {
    const auto a = static_cast<int32_t>(p >> 32), b = static_cast<int32_t>(p & 0xFFFFFFFF);
    const int32_t c = add_token(tokens_[size_t(a)] + tokens_[size_t(b)]);
    merges_.emplace_back(a, b);
    std::unordered_map<uint64_t, int64_t> delta;
    auto bump = [&](int32_t x, int32_t y, int64_t d, uint32_t wi) {
      const uint64_t q = pair_key(x, y);
      delta[q] += d;
      if (d > 0) {
        auto& list = where_[q];
        if (list.empty() || list.back() != wi) list.push_back(wi);
      }
    };
    const std::vector<uint32_t> list = std::move(where_[p]);
    where_.erase(p);
    for (uint32_t wi : list) {
      Word& w = words_[wi];
      std::vector<int32_t>& s = w.sym;
      size_t out = 0;
      for (size_t i = 0; i < s.size();) {
        if (i + 1 < s.size() && s[i] == a && s[i + 1] == b) {
          // The pairs around this occurrence, as the rewritten word has them so far.
          if (out > 0) {
            bump(s[out - 1], a, -w.freq, wi);
            bump(s[out - 1], c, w.freq, wi);
          }
          bump(a, b, -w.freq, wi);
          if (i + 2 < s.size()) {
            bump(b, s[i + 2], -w.freq, wi);
            bump(c, s[i + 2], w.freq, wi);
          }
          s[out++] = c;
          i += 2;
        } else {
          s[out++] = s[i++];
        }
      }
      s.resize(out);
    }
    for (const auto& [q, d] : delta) {
      if (d == 0) continue;
      int64_t& n = count_[q];
      n += d;
      if (d > 0) heap_.push({n, q});
      if (n == 0) count_.erase(q);
    }
  }

  const BpeTrainOptions& opt_;
  std::vector<std::string> tokens_;
  StringMap<int32_t> ids_;
  std::vector<std::pair<int32_t, int32_t>> merges_;
  std::vector<Word> words_;
  std::unordered_map<uint64_t, int64_t> count_;
  std::unordered_map<uint64_t, std::vector<uint32_t>> where_;
  std::priority_queue<Entry, std::vector<Entry>, Lower> heap_{Lower{this}};
};

void count_pretokens(std::string_view text, StringMap<int64_t>& counts) {
  for (size_t pos = 0; pos < text.size();) {
    const size_t len = match_at(text, pos);
    const std::string_view piece = text.substr(pos, len);
    auto it = counts.find(piece);
    if (it != counts.end())
      ++it->second;
    else
      counts.emplace(std::string(piece), 1);
    pos += len;
  }
}

std::shared_ptr<BpeTokenizer::Impl> finish_training(const StringMap<int64_t>& counts, const BpeTrainOptions& opt) {
  EMBER_CHECK(opt.vocab_size >= 256 + int64_t(opt.special_tokens.size()), "BpeTokenizer::train: vocab_size ",
              opt.vocab_size, " is below the 256 byte tokens plus ", opt.special_tokens.size(), " special tokens");
  auto impl = std::make_shared<BpeTokenizer::Impl>();
  Trainer(counts, opt).run(impl->tokens, impl->merge_list);
  for (size_t id = 0; id < impl->tokens.size(); ++id) impl->ids.emplace(impl->tokens[id], int32_t(id));
  for (const std::string& s : opt.special_tokens) {
    EMBER_CHECK(!s.empty(), "BpeTokenizer::train: a special token is empty");
    EMBER_CHECK(!impl->ids.contains(s), "BpeTokenizer::train: special token \"", s,
                "\" is already a token of the vocabulary (a byte, a merge or another special token)");
    impl->tokens.push_back(s);
    impl->ids.emplace(s, int32_t(impl->tokens.size() - 1));
  }
  for (int b = 0; b < 256; ++b) impl->byte_ids[b] = impl->ids.at(std::string(1, static_cast<char>(b)));
  impl->index_merges_and_specials();
  return impl;
}

}  // namespace

BpeTokenizer BpeTokenizer::train(const std::vector<std::string>& texts, const BpeTrainOptions& options) {
  StringMap<int64_t> counts;
  for (const std::string& t : texts) count_pretokens(t, counts);
  return BpeTokenizer(finish_training(counts, options));
}

BpeTokenizer BpeTokenizer::train(std::string_view text, const BpeTrainOptions& options) {
  StringMap<int64_t> counts;
  count_pretokens(text, counts);
  return BpeTokenizer(finish_training(counts, options));
}

BpeTokenizer BpeTokenizer::train_files(const std::vector<std::string>& paths, const BpeTrainOptions& options) {
  StringMap<int64_t> counts;
  for (const std::string& p : paths) count_pretokens(detail::read_file(p, "BpeTokenizer::train_files"), counts);
  return BpeTokenizer(finish_training(counts, options));
}

}  // namespace ember::data
