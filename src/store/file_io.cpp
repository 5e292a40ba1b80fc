#include "file_io.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <random>

#include "ember/core/error.hpp"

namespace ember::store::detail {
namespace {

std::string errno_text(int err) { return std::strerror(err); }

int open_for_reading(const std::string& path, uint64_t& size) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  EMBER_CHECK(fd >= 0, path, ": cannot open for reading: ", errno_text(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    EMBER_FAIL(path, ": cannot stat: ", errno_text(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    EMBER_FAIL(path, ": not a regular file");
  }
  size = static_cast<uint64_t>(st.st_size);
  return fd;
}

std::string directory_of(const std::string& path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

}  // namespace

InputFile::InputFile(const std::string& path) : path_(path) { fd_ = open_for_reading(path, size_); }

InputFile::~InputFile() {
  if (fd_ >= 0) ::close(fd_);
}

void InputFile::read_at(uint64_t offset, std::span<std::byte> out) const {
  EMBER_CHECK(offset <= size_ && out.size() <= size_ - offset, path_, ": truncated: needs ", out.size(),
              " bytes at offset ", offset, " but the file has ", size_, " bytes");
  size_t done = 0;
  while (done < out.size()) {
    ssize_t n = ::pread(fd_, out.data() + done, out.size() - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    EMBER_CHECK(n > 0, path_, ": read failed at offset ", offset + done, ": ",
                n == 0 ? std::string("unexpected end of file") : errno_text(errno));
    done += static_cast<size_t>(n);
  }
}

MappedFile::MappedFile(const std::string& path) {
  uint64_t size = 0;
  int fd = open_for_reading(path, size);
  if (size > 0) {
    void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    int err = errno;
    ::close(fd);
    EMBER_CHECK(p != MAP_FAILED, path, ": cannot map ", size, " bytes: ", errno_text(err));
    // Advice values are not flags: one call each. Failures only cost speed.
    (void)::madvise(p, size, MADV_SEQUENTIAL);
    (void)::madvise(p, size, MADV_WILLNEED);
    data_ = p;
    size_ = size;
  } else {
    ::close(fd);
  }
}

MappedFile::~MappedFile() {
  if (data_) ::munmap(data_, size_);
}

AtomicFileWriter::AtomicFileWriter(std::string path) : path_(std::move(path)) {
  EMBER_CHECK(!path_.empty() && path_.back() != '/', "save: '", path_, "' is not a file path");
  static constexpr char kChars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  std::random_device rd;
  std::mt19937_64 rng((uint64_t(rd()) << 32) ^ rd() ^ uint64_t(::getpid()));
  for (int attempt = 0; attempt < 100; ++attempt) {
    std::string candidate = path_ + ".tmp-";
    for (int i = 0; i < 6; ++i) candidate += kChars[rng() % (sizeof(kChars) - 1)];
    // 0666 minus the umask, like any newly created file (mkstemp would give 0600).
    fd_ = ::open(candidate.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd_ >= 0) {
      temp_path_ = std::move(candidate);
      buffer_.reserve(1 << 20);
      return;
    }
    if (errno != EEXIST) break;
  }
  EMBER_FAIL(path_, ": cannot create a temporary file in ", directory_of(path_), ": ", errno_text(errno));
}

AtomicFileWriter::~AtomicFileWriter() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_ && !temp_path_.empty()) ::unlink(temp_path_.c_str());
}

void AtomicFileWriter::write_all(const std::byte* data, size_t n) {
  while (n > 0) {
    ssize_t w = ::write(fd_, data, n);
    if (w < 0 && errno == EINTR) continue;
    EMBER_CHECK(w > 0, path_, ": write failed: ", w == 0 ? std::string("no progress") : errno_text(errno),
                " (the previous file, if any, is unchanged)");
    data += w;
    n -= static_cast<size_t>(w);
  }
}

void AtomicFileWriter::flush_buffer() {
  if (buffer_.empty()) return;
  write_all(buffer_.data(), buffer_.size());
  buffer_.clear();
}

void AtomicFileWriter::write(std::span<const std::byte> bytes) {
  EMBER_CHECK(fd_ >= 0 && !committed_, path_, ": write after commit");
  if (buffer_.size() + bytes.size() <= buffer_.capacity()) {
    buffer_.insert(buffer_.end(), bytes.begin(), bytes.end());
    return;
  }
  flush_buffer();
  if (bytes.size() >= buffer_.capacity()) {
    write_all(bytes.data(), bytes.size());
  } else {
    buffer_.insert(buffer_.end(), bytes.begin(), bytes.end());
  }
}

void AtomicFileWriter::commit() {
  EMBER_CHECK(fd_ >= 0 && !committed_, path_, ": commit called twice");
  flush_buffer();
  EMBER_CHECK(::fsync(fd_) == 0, path_, ": fsync failed: ", errno_text(errno));
  int rc = ::close(fd_);
  fd_ = -1;
  EMBER_CHECK(rc == 0, path_, ": close failed: ", errno_text(errno));
  EMBER_CHECK(::rename(temp_path_.c_str(), path_.c_str()) == 0, path_, ": cannot rename ", temp_path_,
              " over it: ", errno_text(errno));
  committed_ = true;
  // Make the rename itself durable; some file systems refuse fsync on directories.
  int dir = ::open(directory_of(path_).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    (void)::fsync(dir);
    ::close(dir);
  }
}

}  // namespace ember::store::detail
