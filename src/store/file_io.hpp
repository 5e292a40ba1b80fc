// File helpers of the store layer (internal): read-only mappings, positioned reads, and the
// atomic writer (temporary file + fsync + rename) that every save goes through.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace ember::store::detail {

// An open file for reading; errors name the path.
class InputFile {
 public:
  explicit InputFile(const std::string& path);
  ~InputFile();
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;

  uint64_t size() const { return size_; }
  // Reads exactly out.size() bytes at `offset`; throws when the file is shorter.
  void read_at(uint64_t offset, std::span<std::byte> out) const;
  int fd() const { return fd_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

// The whole file mapped read-only (an empty file maps to an empty span).
class MappedFile {
 public:
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  std::span<const std::byte> bytes() const { return {static_cast<const std::byte*>(data_), size_}; }

 private:
  void* data_ = nullptr;
  size_t size_ = 0;
};

// Writes `path` atomically: bytes go to "<path>.tmp-XXXXXX" in the same directory; commit()
// flushes, fsyncs and renames it over `path`, then fsyncs the directory. A writer destroyed
// before commit() (an exception on the way) removes its temporary file, so `path` is either
// the old file or the complete new one.
class AtomicFileWriter {
 public:
  explicit AtomicFileWriter(std::string path);
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  void write(std::span<const std::byte> bytes);
  void commit();
  const std::string& temp_path() const { return temp_path_; }

 private:
  void flush_buffer();
  void write_all(const std::byte* data, size_t n);
  std::string path_;
  std::string temp_path_;
  int fd_ = -1;
  std::vector<std::byte> buffer_;
  bool committed_ = false;
};

}  // namespace ember::store::detail
