#include "zip_reader.hpp"

#include <array>
#include <cstring>

#include "ember/core/error.hpp"

namespace ember::store::detail {
namespace {

constexpr uint32_t kLocalHeaderSig = 0x04034b50;
constexpr uint32_t kCentralHeaderSig = 0x02014b50;
constexpr uint32_t kEndOfCentralDirSig = 0x06054b50;
constexpr uint32_t kZip64EndOfCentralDirSig = 0x06064b50;
constexpr uint32_t kZip64LocatorSig = 0x07064b50;
constexpr size_t kEndOfCentralDirSize = 22;
constexpr size_t kCentralHeaderSize = 46;
constexpr size_t kLocalHeaderSize = 30;
constexpr size_t kZip64LocatorSize = 20;
constexpr size_t kZip64EndOfCentralDirSize = 56;

// Little-endian reads at checked positions of the archive.
class Reader {
 public:
  Reader(std::span<const std::byte> bytes, const std::string& source) : bytes_(bytes), source_(source) {}

  void need(uint64_t offset, uint64_t n, const char* what) const {
    EMBER_CHECK(offset <= bytes_.size() && n <= bytes_.size() - offset, source_, ": zip: ", what, " (", n,
                " bytes at offset ", offset, ") runs past the end of the file (", bytes_.size(), " bytes)");
  }
  template <class T>
  T get(uint64_t offset) const {
    T v;
    std::memcpy(&v, bytes_.data() + offset, sizeof(T));
    return v;
  }
  uint16_t u16(uint64_t o) const { return get<uint16_t>(o); }
  uint32_t u32(uint64_t o) const { return get<uint32_t>(o); }
  uint64_t u64(uint64_t o) const { return get<uint64_t>(o); }
  std::string_view text(uint64_t offset, uint64_t n) const {
    return {reinterpret_cast<const char*>(bytes_.data() + offset), static_cast<size_t>(n)};
  }
  uint64_t size() const { return bytes_.size(); }

 private:
  std::span<const std::byte> bytes_;
  const std::string& source_;
};

constexpr std::array<std::array<uint32_t, 256>, 8> make_crc_tables() {
  std::array<std::array<uint32_t, 256>, 8> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    t[0][i] = c;
  }
  for (int k = 1; k < 8; ++k)
    for (uint32_t i = 0; i < 256; ++i) t[k][i] = (t[k - 1][i] >> 8) ^ t[0][t[k - 1][i] & 0xff];
  return t;
}
constexpr auto kCrcTables = make_crc_tables();

}  // namespace

// Slicing-by-8 CRC-32 (the ZIP polynomial, reflected).
uint32_t crc32(std::span<const std::byte> bytes) {
  const auto& t = kCrcTables;
  uint32_t crc = 0xffffffffu;
  const std::byte* p = bytes.data();
  size_t n = bytes.size();
  while (n >= 8) {
    uint32_t lo, hi;
    std::memcpy(&lo, p, 4);
    std::memcpy(&hi, p + 4, 4);
    lo ^= crc;
    crc = t[7][lo & 0xff] ^ t[6][(lo >> 8) & 0xff] ^ t[5][(lo >> 16) & 0xff] ^ t[4][lo >> 24] ^ t[3][hi & 0xff] ^
          t[2][(hi >> 8) & 0xff] ^ t[1][(hi >> 16) & 0xff] ^ t[0][hi >> 24];
    p += 8;
    n -= 8;
  }
  while (n--) crc = t[0][(crc ^ std::to_integer<uint32_t>(*p++)) & 0xff] ^ (crc >> 8);
  return crc ^ 0xffffffffu;
}

bool looks_like_zip(std::span<const std::byte> bytes) {
  if (bytes.size() < 4) return false;
  uint32_t sig;
  std::memcpy(&sig, bytes.data(), 4);
  return sig == kLocalHeaderSig || sig == kEndOfCentralDirSig;
}

ZipArchive::ZipArchive(std::span<const std::byte> bytes, std::string source)
    : bytes_(bytes), source_(std::move(source)) {
  Reader r(bytes_, source_);
  const std::string& src = source_;
  EMBER_CHECK(r.size() >= kEndOfCentralDirSize, src, ": zip: file too short (", r.size(), " bytes) for a zip archive");

  // The end of central directory record sits in the last 22 + 65535 (comment) bytes.
  uint64_t eocd = UINT64_MAX;
  const uint64_t lowest = r.size() > kEndOfCentralDirSize + 0xffff ? r.size() - kEndOfCentralDirSize - 0xffff : 0;
  for (uint64_t pos = r.size() - kEndOfCentralDirSize + 1; pos-- > lowest;) {
    if (r.u32(pos) == kEndOfCentralDirSig && pos + kEndOfCentralDirSize + r.u16(pos + 20) <= r.size()) {
      eocd = pos;
      break;
    }
  }
  EMBER_CHECK(eocd != UINT64_MAX, src, ": zip: no end of central directory record (truncated or not a zip file)");
  EMBER_CHECK(r.u16(eocd + 4) == 0 && r.u16(eocd + 6) == 0, src, ": zip: multi-disk archives are not supported");
  uint64_t count = r.u16(eocd + 10);
  uint64_t dir_size = r.u32(eocd + 12);
  uint64_t dir_offset = r.u32(eocd + 16);

  // ZIP64: a locator right before the record points to the 64-bit record.
  if (eocd >= kZip64LocatorSize && r.u32(eocd - kZip64LocatorSize) == kZip64LocatorSig) {
    const uint64_t loc = eocd - kZip64LocatorSize;
    const uint64_t rec = r.u64(loc + 8);
    r.need(rec, kZip64EndOfCentralDirSize, "ZIP64 end of central directory record");
    EMBER_CHECK(r.u32(rec) == kZip64EndOfCentralDirSig, src, ": zip: bad ZIP64 end of central directory signature at ",
                rec);
    EMBER_CHECK(r.u32(rec + 16) == 0 && r.u32(rec + 20) == 0, src, ": zip: multi-disk archives are not supported");
    count = r.u64(rec + 32);
    dir_size = r.u64(rec + 40);
    dir_offset = r.u64(rec + 48);
  } else {
    EMBER_CHECK(count != 0xffff && dir_size != 0xffffffff && dir_offset != 0xffffffff, src,
                ": zip: the archive needs ZIP64 records but has none");
  }
  r.need(dir_offset, dir_size, "central directory");
  EMBER_CHECK(count <= dir_size / kCentralHeaderSize, src, ": zip: ", count, " entries cannot fit in a ", dir_size,
              "-byte central directory");

  entries_.reserve(static_cast<size_t>(count));
  uint64_t pos = dir_offset;
  const uint64_t dir_end = dir_offset + dir_size;
  for (uint64_t i = 0; i < count; ++i) {
    EMBER_CHECK(pos <= dir_end && dir_end - pos >= kCentralHeaderSize, src, ": zip: central directory entry ", i,
                " runs past the directory");
    EMBER_CHECK(r.u32(pos) == kCentralHeaderSig, src, ": zip: bad central directory signature at offset ", pos);
    const uint16_t flags = r.u16(pos + 8);
    const uint16_t method = r.u16(pos + 10);
    const uint32_t crc = r.u32(pos + 16);
    uint64_t compressed = r.u32(pos + 20);
    uint64_t uncompressed = r.u32(pos + 24);
    const uint64_t name_len = r.u16(pos + 28), extra_len = r.u16(pos + 30), comment_len = r.u16(pos + 32);
    uint64_t local = r.u32(pos + 42);
    const uint64_t record = kCentralHeaderSize + name_len + extra_len + comment_len;
    EMBER_CHECK(dir_end - pos >= record, src, ": zip: central directory entry ", i, " runs past the directory");
    std::string name(r.text(pos + kCentralHeaderSize, name_len));

    // ZIP64 extra field: 64-bit values for the 32-bit fields that hold 0xffffffff, in order.
    uint64_t e = pos + kCentralHeaderSize + name_len;
    const uint64_t extra_end = e + extra_len;
    while (extra_end - e >= 4) {
      const uint16_t id = r.u16(e), len = r.u16(e + 2);
      EMBER_CHECK(extra_end - e - 4 >= len, src, ": zip: entry '", name, "': extra field runs past its record");
      if (id == 0x0001) {
        uint64_t f = e + 4;
        const uint64_t f_end = f + len;
        auto take = [&](uint64_t& field) {
          if (field != 0xffffffff) return;
          EMBER_CHECK(f_end - f >= 8, src, ": zip: entry '", name, "': ZIP64 extra field is too short");
          field = r.u64(f);
          f += 8;
        };
        take(uncompressed);
        take(compressed);
        take(local);
      }
      e += 4 + len;
    }

    EMBER_CHECK(!(flags & 1), src, ": zip: entry '", name, "' is encrypted");
    EMBER_CHECK(method == 0, src, ": zip: entry '", name, "' is compressed (method ", method,
                "); ember reads stored entries only, as torch.save writes them (re-save the file with torch.save)");
    EMBER_CHECK(compressed == uncompressed, src, ": zip: stored entry '", name, "' has compressed size ", compressed,
                " != size ", uncompressed);

    r.need(local, kLocalHeaderSize, "local file header");
    EMBER_CHECK(r.u32(local) == kLocalHeaderSig, src, ": zip: entry '", name, "': bad local header signature at ",
                local);
    const uint64_t local_name_len = r.u16(local + 26), local_extra_len = r.u16(local + 28);
    r.need(local + kLocalHeaderSize, local_name_len + local_extra_len, "local file header name");
    EMBER_CHECK(r.text(local + kLocalHeaderSize, local_name_len) == name, src, ": zip: entry '", name,
                "': local header names '", r.text(local + kLocalHeaderSize, local_name_len), "'");
    ZipEntry entry;
    entry.name = std::move(name);
    entry.data_offset = local + kLocalHeaderSize + local_name_len + local_extra_len;
    entry.size = uncompressed;
    entry.crc32 = crc;
    r.need(entry.data_offset, entry.size, ("data of entry '" + entry.name + "'").c_str());
    EMBER_CHECK(index_.emplace(entry.name, entries_.size()).second, src, ": zip: duplicate entry '", entry.name, "'");
    entries_.push_back(std::move(entry));
    pos += record;
  }
}

const ZipEntry* ZipArchive::find(std::string_view name) const {
  auto it = index_.find(std::string(name));
  return it == index_.end() ? nullptr : &entries_[it->second];
}

std::span<const std::byte> ZipArchive::read(const ZipEntry& entry, bool verify_crc) const {
  auto data = bytes_.subspan(static_cast<size_t>(entry.data_offset), static_cast<size_t>(entry.size));
  if (verify_crc) {
    const uint32_t actual = crc32(data);
    EMBER_CHECK(actual == entry.crc32, source_, ": zip: entry '", entry.name, "' is corrupt (CRC-32 ", actual,
                ", expected ", entry.crc32, ")");
  }
  return data;
}

}  // namespace ember::store::detail
