// Atomic checkpoint folders: write into a temporary folder, fsync, rename.
#include "ember/train/checkpoint.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "ember/core/error.hpp"
#include "json_util.hpp"

namespace fs = std::filesystem;

namespace ember::train {
namespace {

constexpr const char* kPrefix = "checkpoint-";
constexpr const char* kMarker = "checkpoint.json";

void fsync_path(const std::string& path, bool directory) {
  int fd = ::open(path.c_str(), (directory ? O_RDONLY | O_DIRECTORY : O_RDONLY) | O_CLOEXEC);
  EMBER_CHECK(fd >= 0, "checkpoint: cannot open '", path, "' to sync it: ", std::strerror(errno));
  int rc = ::fsync(fd);
  int err = errno;
  ::close(fd);
  EMBER_CHECK(rc == 0, "checkpoint: fsync of '", path, "' failed: ", std::strerror(err));
}

void sync_tree(const fs::path& dir) {
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_regular_file()) fsync_path(e.path().string(), false);
  fsync_path(dir.string(), true);
}

std::string step_name(int64_t step) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%s%010lld", kPrefix, static_cast<long long>(step));
  return buf;
}

std::optional<CheckpointInfo> read_info(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_regular_file(dir / kMarker, ec)) return std::nullopt;
  try {
    auto j = detail::parse_json(read_file((dir / kMarker).string()), (dir / kMarker).string());
    CheckpointInfo info;
    info.path = dir.string();
    info.step = j.at("step").get<int64_t>();
    if (j.contains("score") && j["score"].is_number()) info.score = j["score"].get<double>();
    return info;
  } catch (const std::exception&) {
    return std::nullopt;  // not ours or damaged: never listed as complete
  }
}

bool better(double a, double b, bool higher) { return higher ? a > b : a < b; }

void remove_folder(const fs::path& dir, int64_t counter) {
  // Rename first, so a partly deleted folder never keeps a checkpoint name.
  fs::path trash = dir.parent_path() / (".trash-" + dir.filename().string() + "-" + std::to_string(::getpid()) + "-" +
                                        std::to_string(counter));
  std::error_code ec;
  fs::rename(dir, trash, ec);
  fs::remove_all(ec ? dir : trash, ec);
}

}  // namespace

void write_file_atomic(const std::string& path, const std::string& content) {
  fs::path p(path);
  std::string tmp_name = ".";  // built by appending: GCC 12 -O3 warns falsely on "." + string
  tmp_name += p.filename().string();
  tmp_name += ".tmp-";
  tmp_name += std::to_string(::getpid());
  fs::path tmp = p.parent_path() / tmp_name;
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  EMBER_CHECK(fd >= 0, "cannot create '", tmp.string(), "': ", std::strerror(errno));
  size_t done = 0;
  while (done < content.size()) {
    ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      EMBER_FAIL("cannot write '", tmp.string(), "': ", std::strerror(err));
    }
    done += size_t(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    EMBER_FAIL("cannot sync '", tmp.string(), "': ", std::strerror(err));
  }
  std::error_code ec;
  fs::rename(tmp, p, ec);
  if (ec) {
    ::unlink(tmp.c_str());
    EMBER_FAIL("cannot rename '", tmp.string(), "' to '", path, "': ", ec.message());
  }
  fsync_path(p.parent_path().empty() ? "." : p.parent_path().string(), true);
}

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  EMBER_CHECK(f, "cannot open '", path, "'");
  std::ostringstream os;
  os << f.rdbuf();
  return os.str();
}

std::vector<CheckpointInfo> list_checkpoints(const std::string& dir) {
  std::vector<CheckpointInfo> out;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return out;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    std::string name = e.path().filename().string();
    if (name.rfind(kPrefix, 0) != 0 || !e.is_directory()) continue;
    if (auto info = read_info(e.path())) out.push_back(*info);
  }
  std::sort(out.begin(), out.end(), [](const CheckpointInfo& a, const CheckpointInfo& b) {
    return a.step != b.step ? a.step < b.step : a.path < b.path;
  });
  return out;
}

std::optional<CheckpointInfo> latest_checkpoint(const std::string& dir) {
  auto all = list_checkpoints(dir);
  if (all.empty()) return std::nullopt;
  return all.back();
}

CheckpointInfo resolve_checkpoint(const std::string& path) {
  if (auto info = read_info(path)) return *info;
  if (auto last = latest_checkpoint(path)) return *last;
  EMBER_FAIL("resume: '", path, "' is neither a checkpoint folder (with ", kMarker,
             ") nor a folder holding complete checkpoints");
}

Checkpointer::Checkpointer(std::string dir, int64_t keep_last, bool keep_best, bool higher_is_better)
    : dir_(std::move(dir)), keep_last_(keep_last), keep_best_(keep_best), higher_is_better_(higher_is_better) {
  EMBER_CHECK(!dir_.empty(), "Checkpointer: empty directory");
  EMBER_CHECK(keep_last_ >= 1, "Checkpointer: keep_last must be >= 1, got ", keep_last_);
  std::error_code ec;
  fs::create_directories(dir_, ec);
  EMBER_CHECK(fs::is_directory(dir_), "Checkpointer: cannot create '", dir_, "': ", ec.message());
  // Leftovers of interrupted writes: temporary folders are dropped; a checkpoint moved aside while
  // being replaced comes back if its replacement never arrived.
  for (const auto& e : fs::directory_iterator(dir_)) {
    std::string name = e.path().filename().string();
    if (name.rfind(".tmp-", 0) == 0 || name.rfind(".trash-", 0) == 0) {
      fs::remove_all(e.path(), ec);
    } else if (name.rfind(".old-", 0) == 0) {
      fs::path original = e.path().parent_path() / name.substr(5);
      if (fs::exists(original, ec))
        fs::remove_all(e.path(), ec);
      else
        fs::rename(e.path(), original, ec);
    }
  }
}

std::optional<CheckpointInfo> Checkpointer::best() const {
  std::optional<CheckpointInfo> best;
  for (const auto& c : list())
    if (c.score && !std::isnan(*c.score) && (!best || better(*c.score, *best->score, higher_is_better_))) best = c;
  return best;
}

std::string Checkpointer::save(int64_t step, std::optional<double> score,
                               const std::function<void(const std::string&)>& write) {
  fs::path final_dir = fs::path(dir_) / step_name(step);
  fs::path tmp = fs::path(dir_) / (".tmp-" + step_name(step) + "-" + std::to_string(::getpid()) + "-" +
                                   std::to_string(counter_++));
  std::error_code ec;
  fs::remove_all(tmp, ec);
  fs::create_directories(tmp, ec);
  EMBER_CHECK(!ec, "checkpoint: cannot create '", tmp.string(), "': ", ec.message());
  try {
    write(tmp.string());
    detail::Json marker = {{"format", "ember-checkpoint"}, {"version", 1}, {"step", step}};
    if (score && std::isfinite(*score)) marker["score"] = *score;
    std::ofstream(tmp / kMarker) << marker.dump(2) << '\n';
    sync_tree(tmp);
  } catch (...) {
    fs::remove_all(tmp, ec);
    throw;
  }
  if (fs::exists(final_dir, ec)) {
    // rename(2) cannot replace a non-empty folder: move the old one aside first (restored by the
    // next Checkpointer if we die before the new one is in place).
    fs::path old = fs::path(dir_) / (".old-" + step_name(step));
    fs::remove_all(old, ec);
    fs::rename(final_dir, old, ec);
    EMBER_CHECK(!ec, "checkpoint: cannot move '", final_dir.string(), "' aside: ", ec.message());
    fs::rename(tmp, final_dir, ec);
    EMBER_CHECK(!ec, "checkpoint: cannot rename '", tmp.string(), "': ", ec.message());
    fsync_path(dir_, true);
    fs::remove_all(old, ec);
  } else {
    fs::rename(tmp, final_dir, ec);
    EMBER_CHECK(!ec, "checkpoint: cannot rename '", tmp.string(), "' to '", final_dir.string(), "': ", ec.message());
  }
  fsync_path(dir_, true);
  prune();
  return final_dir.string();
}

void Checkpointer::prune() const {
  auto all = list();
  if (int64_t(all.size()) <= keep_last_) return;
  std::optional<CheckpointInfo> best = keep_best_ ? this->best() : std::nullopt;
  int64_t counter = 0;
  for (size_t i = 0; i + size_t(keep_last_) < all.size(); ++i) {
    if (best && all[i].path == best->path) continue;
    remove_folder(all[i].path, counter++);
  }
}

}  // namespace ember::train
