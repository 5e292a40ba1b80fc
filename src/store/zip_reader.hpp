// A minimal ZIP reader (internal) for torch.save archives: the end of central directory record
// (and its ZIP64 form), central directory entries and local headers, over bytes in memory.
// Entries must be stored (method 0), as torch.save writes them; compressed or encrypted
// entries are refused with an Error. Every offset and length is checked against the buffer.
//
//   ZipArchive zip(bytes, "model.pt");
//   if (const ZipEntry* e = zip.find("archive/data.pkl")) auto pkl = zip.read(*e);
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace ember::store::detail {

struct ZipEntry {
  std::string name;
  uint64_t data_offset = 0;  // of the entry's bytes in the archive
  uint64_t size = 0;
  uint32_t crc32 = 0;
};

class ZipArchive {
 public:
  ZipArchive(std::span<const std::byte> bytes, std::string source);

  const std::vector<ZipEntry>& entries() const { return entries_; }
  const ZipEntry* find(std::string_view name) const;
  // The entry's bytes; with `verify_crc`, checks them against the CRC-32 of the directory.
  std::span<const std::byte> read(const ZipEntry& entry, bool verify_crc = true) const;
  const std::string& source() const { return source_; }

 private:
  std::span<const std::byte> bytes_;
  std::string source_;
  std::vector<ZipEntry> entries_;
  std::unordered_map<std::string, size_t> index_;
};

// True when the bytes start like a ZIP archive (a local file header).
bool looks_like_zip(std::span<const std::byte> bytes);

uint32_t crc32(std::span<const std::byte> bytes);

}  // namespace ember::store::detail
