// The ZIP reader (white-box: src/store/zip_reader.hpp).
#include "zip_reader.hpp"

#include "store_test_util.hpp"

using namespace ember;
using namespace store_test;
using ember::store::detail::ZipArchive;

TEST(ZipReader, Crc32CheckValue) {
  // The CRC-32/ISO-HDLC check value of "123456789" (from the CRC catalogue).
  EXPECT_EQ(ember::store::detail::crc32(as_bytes("123456789")), 0xCBF43926u);
  std::string long_text;
  for (int i = 0; i < 1000; ++i) long_text += char(i * 7);
  EXPECT_EQ(ember::store::detail::crc32(as_bytes(long_text)), reference_crc32(long_text));
}

TEST(ZipReader, ReadsEntries) {
  const std::string zip = zip_archive({{"a/x", "hello"}, {"a/empty", ""}, {"a/y", std::string(1000, 'z')}});
  ZipArchive archive(as_bytes(zip), "t.zip");
  ASSERT_EQ(archive.entries().size(), 3u);
  auto x = archive.read(*archive.find("a/x"));
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(x.data()), x.size()), "hello");
  EXPECT_EQ(archive.read(*archive.find("a/empty")).size(), 0u);
  EXPECT_EQ(archive.read(*archive.find("a/y")).size(), 1000u);
  EXPECT_EQ(archive.find("a/z"), nullptr);
}

TEST(ZipReader, ReadsTorchZip64Records) {
  // torch.save always writes ZIP64 end records and aligns entries with padding extra fields.
  const std::string pt = read_file(data_path("tensor.pt"));
  ZipArchive archive(as_bytes(pt), "tensor.pt");
  EXPECT_NE(archive.find("tensor/data.pkl"), nullptr);
  for (const auto& e : archive.entries()) {
    if (e.name.find("/data/") != std::string::npos) {
      EXPECT_EQ(e.data_offset % 64, 0u) << e.name;
    }
  }
}

TEST(ZipReader, FindsTheEndRecordBeforeAComment) {
  std::string zip = zip_archive({{"a/x", "hello"}});
  zip[zip.size() - 2] = 5;  // comment length
  zip += "PK\x05\x06";      // a comment that looks like a signature
  zip += "!";
  ZipArchive archive(as_bytes(zip), "c.zip");
  EXPECT_NE(archive.find("a/x"), nullptr);
}

TEST(ZipReader, RefusesMismatchedLocalName) {
  std::string zip = zip_archive({{"a/x", "hello"}});
  zip[30] = 'b';  // the local header's name
  expect_error([&] { ZipArchive(as_bytes(zip), "m.zip"); }, {"m.zip", "local header names 'b/x'"});
}
