// The training text: a folder of documents (plain or gzip-compressed files), by default the Linux
// kernel's documentation as Debian's linux-doc-6.1 package ships it (about 5,600 files, 45 MB of
// English technical prose and reStructuredText), cut into a training and a held-out validation
// split by document.
#pragma once

#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <ember/ember.hpp>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace gpt2 {

inline const char* kLinuxDoc = "/usr/share/doc/linux-doc-6.1/Documentation";

struct Corpus {
  std::vector<std::string> train, valid;  // documents
  size_t bytes = 0;
};

// The contents of `path`, gunzipped when it starts with gzip's magic bytes.
inline std::string read_document(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  EMBER_CHECK(in, "gpt2: cannot read ", path.string());
  std::string raw{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  if (raw.size() < 2 || uint8_t(raw[0]) != 0x1f || uint8_t(raw[1]) != 0x8b) return raw;
  z_stream z{};
  EMBER_CHECK(inflateInit2(&z, 16 + MAX_WBITS) == Z_OK, "gpt2: zlib init failed for ", path.string());
  z.next_in = reinterpret_cast<Bytef*>(raw.data());
  z.avail_in = uInt(raw.size());
  std::string out;
  char buf[1 << 16];
  int rc = Z_OK;
  while (rc != Z_STREAM_END) {
    z.next_out = reinterpret_cast<Bytef*>(buf);
    z.avail_out = sizeof buf;
    rc = inflate(&z, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END) {
      inflateEnd(&z);
      EMBER_FAIL("gpt2: ", path.string(), " is not a valid gzip file (zlib error ", rc, ")");
    }
    out.append(buf, sizeof buf - z.avail_out);
    if (rc == Z_OK && z.avail_in == 0 && z.avail_out != 0) {
      inflateEnd(&z);
      EMBER_FAIL("gpt2: ", path.string(), " is truncated");
    }
  }
  inflateEnd(&z);
  return out;
}

// Whether a document is text: no NUL byte in its first 4 KiB (images and fonts are left out).
inline bool is_text(const std::string& doc) {
  return std::memchr(doc.data(), 0, std::min<size_t>(doc.size(), 4096)) == nullptr && !doc.empty();
}

// Every text document under `root` (a folder, recursively, in path order, or one file), at most
// `limit_bytes` of them (0: all). Every `valid_every`-th document goes to the validation split.
inline Corpus load_corpus(const std::string& root, size_t limit_bytes = 0, size_t valid_every = 50) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(root, ec)) {
    if (root == kLinuxDoc)
      EMBER_FAIL("gpt2: the corpus ", root,
                 " is missing: install the Debian package linux-doc-6.1 (apt-get install linux-doc-6.1), or pass "
                 "--corpus PATH (a text file or a folder of them)");
    EMBER_FAIL("gpt2: the corpus ", root, " does not exist (pass --corpus PATH: a text file or a folder of them)");
  }
  std::vector<fs::path> files;
  if (fs::is_directory(root)) {
    for (const auto& e : fs::recursive_directory_iterator(root, fs::directory_options::skip_permission_denied))
      if (e.is_regular_file()) files.push_back(e.path());
    std::sort(files.begin(), files.end());
  } else {
    files.push_back(root);
  }
  Corpus c;
  size_t n = 0;
  for (const auto& f : files) {
    std::string doc = read_document(f);
    if (!is_text(doc)) continue;
    c.bytes += doc.size();
    (++n % valid_every == 0 ? c.valid : c.train).push_back(std::move(doc));
    if (limit_bytes && c.bytes >= limit_bytes) break;
  }
  EMBER_CHECK(!c.train.empty(), "gpt2: no text documents under ", root);
  if (c.valid.empty()) {  // a one-file corpus: its last tenth is held out
    std::string& d = c.train.back();
    c.valid.push_back(d.substr(d.size() - d.size() / 10));
    d.resize(d.size() - d.size() / 10);
  }
  return c;
}

}  // namespace gpt2
