#include "autotune.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <memory>
#include <sstream>

#include "ember/core/atomic_write.hpp"
#include "ember/core/hash.hpp"
#include "ember/version.hpp"
#include "jit.hpp"


namespace ember::cuda {

namespace {

// The first line of a file: this marker, a tab, the environment key. Bump the marker when the
// line format changes: older files then read as another environment's.
constexpr std::string_view kHeader = "ember-autotune-v1\t";
// A larger file is not ours (or not worth reading): it reads as empty and is replaced.
constexpr size_t kMaxFileBytes = size_t(64) << 20;

std::string line_checksum(std::string_view key, std::string_view value) {
  std::string s;
  s.reserve(key.size() + value.size() + 1);
  s.append(key).append(1, '\t').append(value);
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(fnv1a(s)));
  return hex;
}

// Tabs and line breaks would split a line: written as spaces.
std::string clean(std::string_view s) {
  std::string r(s);
  for (char& c : r)
    if (c == '\t' || c == '\n' || c == '\r') c = ' ';
  return r;
}

}  // namespace

std::string autotune_file_path(const std::string& dir, std::string_view kind) {
  return dir + "/autotune-" + std::string(kind) + ".txt";
}

std::map<std::string, std::string> parse_autotune_text(std::string_view text, const std::string& env) {
  std::map<std::string, std::string> out;
  const size_t eol = text.find('\n');
  if (eol == text.npos || text.substr(0, eol) != std::string(kHeader) + clean(env))
    return out;  // empty, truncated inside the header, or another environment's (stale) file
  for (size_t pos = eol + 1; pos < text.size();) {
    size_t end = text.find('\n', pos);
    if (end == text.npos) end = text.size();
    const std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    const size_t t1 = line.find('\t');
    const size_t t2 = t1 == line.npos ? line.npos : line.find('\t', t1 + 1);
    if (t2 == line.npos || line.find('\t', t2 + 1) != line.npos) continue;
    const std::string_view key = line.substr(0, t1), value = line.substr(t1 + 1, t2 - t1 - 1);
    if (key.empty() || line.substr(t2 + 1) != line_checksum(key, value)) continue;
    out[std::string(key)] = std::string(value);
  }
  return out;
}

std::map<std::string, std::string> read_autotune_file(const std::string& path, const std::string& env) {
  try {
    std::ifstream f(path, std::ios::binary);
    if (!f) return {};
    std::string all;
    char buf[1 << 16];
    while (f.read(buf, sizeof buf) || f.gcount() > 0) {
      all.append(buf, size_t(f.gcount()));
      if (all.size() > kMaxFileBytes) return {};
    }
    return parse_autotune_text(all, env);
  } catch (...) {  // (allocation failure: the cache is an optimisation)
    return {};
  }
}

bool write_autotune_file(const std::string& path, const std::string& env,
                         const std::map<std::string, std::string>& entries) {
  try {
    std::string text(kHeader);
    text += clean(env);
    text += '\n';
    for (const auto& [k, v] : entries) {
      const std::string key = clean(k), value = clean(v);
      if (key.empty()) continue;
      text.append(key).append(1, '\t').append(value).append(1, '\t').append(line_checksum(key, value)).append(1, '\n');
    }
    return write_file_atomically(path, text);
  } catch (...) {
    return false;
  }
}

AutotuneStore::AutotuneStore(std::string dir, std::string_view kind, std::string env)
    : path_(dir.empty() ? std::string() : autotune_file_path(dir, kind)), env_(std::move(env)) {}

void AutotuneStore::load_locked() {
  if (loaded_) return;
  loaded_ = true;
  if (path_.empty()) return;
  for (auto& [k, v] : read_autotune_file(path_, env_)) entries_.emplace(k, std::move(v));
}

std::optional<std::string> AutotuneStore::get(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  load_locked();
  auto it = entries_.find(clean(key));
  if (it == entries_.end()) return std::nullopt;
  return it->second;
}

void AutotuneStore::put(const std::string& key, const std::string& value) {
  std::lock_guard<std::mutex> lock(mu_);
  load_locked();
  const std::string k = clean(key), v = clean(value);
  if (k.empty()) return;
  entries_[k] = v;
  mine_[k] = v;
  if (path_.empty()) return;
  // (a file of another environment, or a damaged one, reads as empty or as its good lines:
  // this write replaces it)
  std::map<std::string, std::string> merged = read_autotune_file(path_, env_);
  for (const auto& [mk, mv] : mine_) merged[mk] = mv;
  for (const auto& [fk, fv] : merged) entries_.emplace(fk, fv);  // winners other processes found
  write_autotune_file(path_, env_, merged);
}

AutotuneStore& autotune_store(std::string_view kind, const std::string& env) {
  static std::mutex mu;
  static auto* stores = new std::map<std::string, std::unique_ptr<AutotuneStore>>();  // (never destroyed)
  std::string id = std::string(kind) + '\n' + env;
  std::lock_guard<std::mutex> lock(mu);
  auto& s = (*stores)[id];
  if (!s) s = std::make_unique<AutotuneStore>(cache_dir(), kind, env);
  return *s;
}

std::string autotune_environment(const cudaDeviceProp& props, std::string_view library) {
  int driver = 0, runtime = 0;
  (void)cudaDriverGetVersion(&driver);
  (void)cudaRuntimeGetVersion(&runtime);
  std::ostringstream os;
  os << props.name << " sm_" << props.major << props.minor << " driver " << driver << " runtime " << runtime << ' '
     << library << " ember " << ember_version();
  return os.str();
}

bool autotune_setting(const char* ember_autotune, const char* ember_cuda_autotune) {
  if (ember_autotune && *ember_autotune) {
    std::string v(ember_autotune);
    for (char& c : v) c = char(std::tolower(static_cast<unsigned char>(c)));
    return !(v == "off" || v == "0" || v == "false" || v == "no");
  }
  return !(ember_cuda_autotune && std::string_view(ember_cuda_autotune) == "0");
}

void autotune_note(std::string_view kind, std::string_view what, const std::string& key) {
  static const bool verbose = [] {
    const char* e = std::getenv("EMBER_AUTOTUNE_VERBOSE");
    return e && *e == '1';
  }();
  if (verbose)
    std::fprintf(stderr, "[ember autotune] %.*s %.*s: %s\n", int(kind.size()), kind.data(), int(what.size()),
                 what.data(), key.c_str());
}

const char* ember_version() { return ember::version(); }

}  // namespace ember::cuda
