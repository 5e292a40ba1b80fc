// Tests of the data layer. Fixture files are written at test time into a temporary folder:
// IDX files with their big-endian layout written byte by byte (raw, and gzip through zlib),
// CSV text, PNGs both by hand from the PNG specification (zlib for IDAT and CRC) and through
// libpng (write_png), JPEGs through libjpeg (write_jpeg), SQLite databases through libsqlite3.
// Expected values come from the fixtures' construction or the transforms' formulas; the
// Fashion-MNIST facts (sizes, first labels, pixel sums) were read with Python's gzip module.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>
#include <zlib.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <set>
#include <thread>

#include "ember/data/csv.hpp"
#include "ember/data/dataloader.hpp"
#include "ember/data/dataset.hpp"
#include "ember/data/idx.hpp"
#include "ember/data/image.hpp"
#include "ember/data/image_folder.hpp"
#include "ember/data/image_transforms.hpp"
#include "ember/data/rng.hpp"
#include "ember/data/sqlite.hpp"
#include "ember/data/views.hpp"

namespace fs = std::filesystem;
using namespace ember;
using namespace ember::data;

namespace {

// Runs `f`, expects an ember::Error whose message contains every string of `parts`.
template <class F>
void expect_error(F&& f, std::initializer_list<std::string> parts) {
  try {
    f();
    ADD_FAILURE() << "expected an ember::Error";
  } catch (const ember::Error& e) {
    const std::string msg = e.what();
    for (const std::string& p : parts) EXPECT_NE(msg.find(p), std::string::npos) << "'" << p << "' not in: " << msg;
  }
}

class TempDir {
 public:
  TempDir() {
    static std::atomic<int> counter{0};
    path_ =
        fs::temp_directory_path() / ("ember_data_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

void write_text(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
}

std::string read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

void truncate_file(const std::string& path, size_t keep) { fs::resize_file(path, keep); }

void put_be32(std::string& s, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) s += static_cast<char>((v >> shift) & 0xff);
}

// IDX bytes: magic 0x0000TTNN, big-endian dims, then `data` (already big-endian).
std::string idx_bytes(uint8_t type, const std::vector<uint32_t>& dims, const std::string& data) {
  std::string s;
  put_be32(s, (uint32_t(type) << 8) | uint32_t(dims.size()));
  for (uint32_t d : dims) put_be32(s, d);
  return s + data;
}

void write_gz(const std::string& path, const std::string& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())), static_cast<int>(bytes.size()));
  gzclose(f);
}

// A PNG written by hand from the specification: IHDR, one IDAT of zlib-compressed rows with
// filter type 0, IEND; `color_type` 0 (gray) or 2 (RGB), 8 bits.
void write_png_by_hand(const std::string& path, uint32_t w, uint32_t h, uint8_t color_type,
                       const std::vector<uint8_t>& hwc) {
  auto chunk = [](std::string& out, const char* type, const std::string& data) {
    put_be32(out, static_cast<uint32_t>(data.size()));
    std::string body = std::string(type, 4) + data;
    out += body;
    put_be32(out, static_cast<uint32_t>(crc32(0, reinterpret_cast<const Bytef*>(body.data()), uInt(body.size()))));
  };
  const uint32_t channels = color_type == 2 ? 3 : 1;
  std::string ihdr;
  put_be32(ihdr, w);
  put_be32(ihdr, h);
  ihdr += std::string{char(8), char(color_type), 0, 0, 0};
  std::string raw;
  for (uint32_t y = 0; y < h; ++y) {
    raw += char(0);
    raw.append(reinterpret_cast<const char*>(hwc.data()) + size_t(y) * w * channels, size_t(w) * channels);
  }
  uLongf zlen = compressBound(uLong(raw.size()));
  std::string z(zlen, '\0');
  ASSERT_EQ(compress(reinterpret_cast<Bytef*>(z.data()), &zlen, reinterpret_cast<const Bytef*>(raw.data()),
                     uLong(raw.size())),
            Z_OK);
  z.resize(zlen);
  std::string png = "\x89PNG\r\n\x1a\n";
  chunk(png, "IHDR", ihdr);
  chunk(png, "IDAT", z);
  chunk(png, "IEND", "");
  write_text(path, png);
}

std::vector<uint8_t> gradient(int64_t h, int64_t w, int64_t c) {  // HWC, smooth (JPEG-friendly)
  std::vector<uint8_t> v(size_t(h * w * c));
  for (int64_t y = 0; y < h; ++y)
    for (int64_t x = 0; x < w; ++x)
      for (int64_t k = 0; k < c; ++k) v[size_t((y * w + x) * c + k)] = uint8_t(20 + 3 * y + 2 * x + 30 * k);
  return v;
}

TensorData hwc_u8(const std::vector<uint8_t>& v, int64_t h, int64_t w, int64_t c) {
  return TensorData::from_vector(v, Shape{h, w, c});
}

template <class T>
std::vector<T> collect(const Dataset<T>& ds) {
  std::vector<T> out;
  for (size_t i = 0; i < ds.size(); ++i) out.push_back(*ds.get(i));
  return out;
}

std::vector<int> range_vec(int n) {
  std::vector<int> v(size_t(n), 0);
  std::iota(v.begin(), v.end(), 0);
  return v;
}

}  // namespace

// ------------------------------------------------------------------------------------------
// Rng and in-memory datasets

TEST(Rng, PermutationIsSeededAndComplete) {
  std::vector<size_t> a = permutation(100, 5), b = permutation(100, 5), c = permutation(100, 6);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  std::vector<size_t> sorted = a;
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < 100; ++i) EXPECT_EQ(sorted[i], i);
  Rng r(1);
  for (int i = 0; i < 1000; ++i) {
    EXPECT_LT(r.below(7), 7u);
    double u = r.uniform();
    EXPECT_TRUE(u >= 0 && u < 1);
    int64_t x = r.range(-2, 2);
    EXPECT_TRUE(x >= -2 && x <= 2);
  }
}

TEST(Rng, EpochScopeNests) {
  EXPECT_EQ(current_epoch(), 0u);
  {
    EpochScope a(3);
    EXPECT_EQ(current_epoch(), 3u);
    {
      EpochScope b(5);
      EXPECT_EQ(current_epoch(), 5u);
    }
    EXPECT_EQ(current_epoch(), 3u);
  }
  EXPECT_EQ(current_epoch(), 0u);
}

TEST(InMemory, GetAndSize) {
  auto ds = in_memory(std::vector<std::string>{"a", "b"});
  EXPECT_EQ(ds->size(), 2u);
  EXPECT_EQ(*ds->get(1), "b");
  EXPECT_FALSE(ds->get(2).has_value());
  expect_error([&] { item_at(*ds, 5, "test"); }, {"test", "item 5", "size 2"});
  auto mat = materialize(map(ds, [](std::string s) { return s + "!"; }));
  EXPECT_EQ(collect(*mat), (std::vector<std::string>{"a!", "b!"}));
}

// ------------------------------------------------------------------------------------------
// Views

TEST(Views, Map) {
  auto ds = in_memory(range_vec(5));
  auto sq = map(ds, [](int x) { return x * x; });
  EXPECT_EQ(collect(*sq), (std::vector<int>{0, 1, 4, 9, 16}));
  auto s = map(sq, [](int x) { return std::to_string(x); });
  EXPECT_EQ(*s->get(3), "9");
  EXPECT_FALSE(s->get(5).has_value());
}

TEST(Views, ShuffledIsASeededPermutation) {
  auto ds = in_memory(range_vec(50));
  auto a = collect(*shuffled(ds, 9)), b = collect(*shuffled(ds, 9)), c = collect(*shuffled(ds, 10));
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  std::vector<size_t> p = permutation(50, 9);
  for (size_t i = 0; i < 50; ++i) EXPECT_EQ(a[i], int(p[i]));
  EXPECT_EQ(shuffled(in_memory(std::vector<int>{}), 1)->size(), 0u);
}

TEST(Views, PartialAndSplit) {
  auto ds = in_memory(range_vec(10));
  EXPECT_EQ(collect(*partial(ds, 2, 5)), (std::vector<int>{2, 3, 4}));
  EXPECT_EQ(partial(ds, 4, 4)->size(), 0u);
  expect_error([&] { partial(ds, 3, 11); }, {"partial", "[3, 11)", "10 items"});
  auto parts = split(ds, {0.8, 0.2});
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(collect(*parts[0]), (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(collect(*parts[1]), (std::vector<int>{8, 9}));
  auto thirds = split(ds, {1.0 / 3, 1.0 / 3, 1.0 / 3});
  EXPECT_EQ(thirds[0]->size() + thirds[1]->size() + thirds[2]->size(), 10u);
  auto some = split(ds, {0.5});
  EXPECT_EQ(some[0]->size(), 5u);
  expect_error([&] { split(ds, {0.7, 0.5}); }, {"split", "more than 1"});
  expect_error([&] { split(ds, {-0.1}); }, {"split", "positive"});
}

TEST(Views, SampledWithAndWithoutReplacement) {
  auto ds = in_memory(range_vec(20));
  auto without = collect(*sampled(ds, 20, false, 3));
  EXPECT_EQ(std::set<int>(without.begin(), without.end()).size(), 20u);
  EXPECT_EQ(without, collect(*sampled(ds, 20, false, 3)));
  auto with = collect(*sampled(ds, 200, true, 3));
  EXPECT_EQ(with.size(), 200u);
  EXPECT_LT(std::set<int>(with.begin(), with.end()).size(), 200u);  // repeats are certain
  for (int x : with) EXPECT_TRUE(x >= 0 && x < 20);
  EXPECT_EQ(with, collect(*sampled(ds, 200, true, 3)));
  EXPECT_NE(with, collect(*sampled(ds, 200, true, 4)));
  expect_error([&] { sampled(ds, 21, false, 1); }, {"sampled", "21", "only 20"});
  expect_error([&] { sampled(in_memory(std::vector<int>{}), 1, true, 1); }, {"sampled", "empty"});
}

TEST(Views, ConcatenatedAndComposed) {
  auto a = in_memory(std::vector<int>{1, 2}), b = in_memory(std::vector<int>{}), c = in_memory(std::vector<int>{3});
  auto all = concatenated<int>({a, b, c, a});
  EXPECT_EQ(collect(*all), (std::vector<int>{1, 2, 3, 1, 2}));
  EXPECT_FALSE(all->get(5).has_value());
  EXPECT_EQ(composed<int>({c, c})->size(), 2u);
}

TEST(Views, Windows) {
  auto ds = in_memory(range_vec(5));
  auto w = windows(ds, 3);
  ASSERT_EQ(w->size(), 3u);
  EXPECT_EQ(*w->get(0), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(*w->get(2), (std::vector<int>{2, 3, 4}));
  EXPECT_FALSE(w->get(3).has_value());
  EXPECT_EQ(windows(ds, 5)->size(), 1u);
  expect_error([&] { windows(ds, 6); }, {"windows", "6", "has 5"});
  expect_error([&] { windows(in_memory(std::vector<int>{}), 2); }, {"windows", "empty"});
}

TEST(Views, AugmentedDependsOnSeedEpochAndIndexOnly) {
  auto ds = in_memory(std::vector<int>(8, 0));
  auto aug = augmented(ds, 11, [](int x, Rng& r) { return x + int(r.below(1000000)); });
  auto e0 = collect(*aug);
  EXPECT_EQ(e0, collect(*aug));
  std::set<int> distinct(e0.begin(), e0.end());
  EXPECT_GT(distinct.size(), 1u);  // items draw from different streams
  std::vector<int> e1;
  {
    EpochScope scope(1);
    e1 = collect(*aug);
  }
  EXPECT_NE(e0, e1);
  auto other_seed = augmented(ds, 12, [](int x, Rng& r) { return x + int(r.below(1000000)); });
  EXPECT_NE(e0, collect(*other_seed));
  // Reading items in another order gives each item the same value.
  EXPECT_EQ(*aug->get(5), e0[5]);
}

// ------------------------------------------------------------------------------------------
// CSV

TEST(Csv, TypedColumnsAndQuotes) {
  TempDir dir;
  const std::string path = dir.file("people.csv");
  write_text(path,
             "id,height,name,note\r\n"
             "1,1.75,\"Smith, Anna\",plain\r\n"
             "2,2,Bob,\"says \"\"hi\"\"\"\n"
             "\n"
             "3,,\"multi\nline\",\n");
  CsvDataset ds(path);
  ASSERT_EQ(ds.size(), 3u);
  EXPECT_EQ(ds.columns(), (std::vector<std::string>{"id", "height", "name", "note"}));
  EXPECT_EQ(ds.schema().types, (std::vector<CsvType>{CsvType::integer, CsvType::real, CsvType::text, CsvType::text}));
  CsvRow r0 = *ds.get(0), r1 = *ds.get(1), r2 = *ds.get(2);
  EXPECT_EQ(r0.integer("id"), 1);
  EXPECT_DOUBLE_EQ(r0.real("height"), 1.75);
  EXPECT_EQ(r0.text("name"), "Smith, Anna");
  EXPECT_DOUBLE_EQ(r1.real("height"), 2.0);
  EXPECT_DOUBLE_EQ(r1.real("id"), 2.0);  // integers read as reals
  EXPECT_EQ(r1.text("note"), "says \"hi\"");
  EXPECT_EQ(r2.text("name"), "multi\nline");
  EXPECT_TRUE(r2.is_null("height"));
  EXPECT_EQ(r2.text("note"), "");
  EXPECT_EQ(r0.line(), 2u);
  EXPECT_EQ(r2.line(), 5u);
  expect_error([&] { r2.real("height"); }, {path, ":5", "height", "empty"});
  expect_error([&] { r0.integer("name"); }, {path, ":2", "name", "not an integer"});
  expect_error([&] { r0["nope"]; }, {path, "no column 'nope'", "id, height, name, note"});
}

TEST(Csv, DeclaredTypesAndParseFunction) {
  TempDir dir;
  const std::string path = dir.file("xy.csv");
  write_text(path, "x;y;label\n0.5;1;cat\n-2;+3;dog\n");
  CsvOptions opt;
  opt.delimiter = ';';
  opt.types = {{"y", CsvType::real}, {"label", CsvType::text}};
  struct Point {
    double x, y;
    std::string label;
  };
  auto points = load_csv(
      path,
      [](const CsvRow& r) {
        return Point{r.real("x"), r.real("y"), r.text("label")};
      },
      opt);
  ASSERT_EQ(points->size(), 2u);
  Point p = *points->get(1);
  EXPECT_DOUBLE_EQ(p.x, -2);
  EXPECT_DOUBLE_EQ(p.y, 3);
  EXPECT_EQ(p.label, "dog");

  opt.types = {{"label", CsvType::integer}};
  expect_error([&] { CsvDataset bad(path, opt); }, {path, ":2", "label", "'cat' is not an integer"});
  opt.types = {{"nope", CsvType::integer}};
  expect_error([&] { CsvDataset bad(path, opt); }, {"nope", path});
  expect_error(
      [&] {
        load_csv(
            path,
            [](const CsvRow& r) {
              EMBER_CHECK(r.text("label") != "dog", "dogs are not allowed");
              return 0;
            },
            CsvOptions{';', {}, true});
      },
      {path, ":3", "dogs are not allowed"});
}

TEST(CsvBadInput, WrongColumnCountNamesFileAndLine) {
  TempDir dir;
  const std::string path = dir.file("bad.csv");
  write_text(path, "a,b,c\n1,2,3\n4,5\n6,7,8\n");
  expect_error([&] { CsvDataset ds(path); }, {path, ":3", "2 columns", "has 3"});
  write_text(path, "a,b,c\n1,2,3\n4,5,6,7\n");
  expect_error([&] { CsvDataset ds(path); }, {path, ":3", "4 columns"});
}

TEST(CsvBadInput, TruncatedFileNamesFileAndLine) {
  TempDir dir;
  const std::string path = dir.file("cut.csv");
  write_text(path, "a,b,c\n1,2,3\n4,\"five");  // ends inside a quoted field
  expect_error([&] { CsvDataset ds(path); }, {path, ":3", "not closed", "truncated"});
  write_text(path, "a,b,c\n1,2,3\n4,5");  // ends mid-record
  expect_error([&] { CsvDataset ds(path); }, {path, ":3", "2 columns", "truncated"});
}

TEST(CsvBadInput, MissingAndEmptyFiles) {
  TempDir dir;
  expect_error([&] { CsvDataset ds(dir.file("none.csv")); }, {dir.file("none.csv"), "cannot open", "No such file"});
  write_text(dir.file("empty.csv"), "");
  expect_error([&] { CsvDataset ds(dir.file("empty.csv")); }, {dir.file("empty.csv"), "empty", "header"});
}

// ------------------------------------------------------------------------------------------
// IDX

namespace {
// 3 images of 2x4 pixels (pixel = 10 * image + position) and labels 7, 0, 3.
std::string idx_images() {
  std::string data;
  for (int i = 0; i < 3; ++i)
    for (int p = 0; p < 8; ++p) data += char(10 * i + p);
  return idx_bytes(0x08, {3, 2, 4}, data);
}
std::string idx_labels() { return idx_bytes(0x08, {3}, std::string{7, 0, 3}); }

void expect_mnist_fixture(const IdxDataset& ds) {
  ASSERT_EQ(ds.size(), 3u);
  EXPECT_EQ(ds.rows(), 2);
  EXPECT_EQ(ds.cols(), 4);
  MnistItem it = *ds.get(2);
  EXPECT_EQ(it.label, 3);
  EXPECT_EQ(it.rows, 2);
  EXPECT_EQ(it.image, (std::vector<uint8_t>{20, 21, 22, 23, 24, 25, 26, 27}));
  EXPECT_EQ(ds.get(0)->label, 7);
  EXPECT_FALSE(ds.get(3).has_value());
}
}  // namespace

TEST(Idx, RawAndGzipFiles) {
  TempDir dir;
  write_text(dir.file("img"), idx_images());
  write_text(dir.file("lbl"), idx_labels());
  write_gz(dir.file("img.gz"), idx_images());
  write_gz(dir.file("lbl.gz"), idx_labels());
  expect_mnist_fixture(IdxDataset(dir.file("img"), dir.file("lbl")));
  expect_mnist_fixture(IdxDataset(dir.file("img.gz"), dir.file("lbl.gz")));
  expect_mnist_fixture(IdxDataset(dir.file("img.gz"), dir.file("lbl")));
}

TEST(Idx, MultiByteTypesAreBigEndian) {
  TempDir dir;
  // i32 [2]: 0x01020304, -2 ; f32 [1]: 1.5 = 0x3FC00000 ; i16 [1]: 0x0102
  write_text(dir.file("i32"), idx_bytes(0x0C, {2}, std::string("\x01\x02\x03\x04\xff\xff\xff\xfe", 8)));
  write_text(dir.file("f32"), idx_bytes(0x0D, {1}, std::string("\x3f\xc0\x00\x00", 4)));
  write_gz(dir.file("i16.gz"), idx_bytes(0x0B, {1, 1}, std::string("\x01\x02", 2)));
  TensorData a = read_idx(dir.file("i32"));
  EXPECT_EQ(a.dtype(), DType::i32);
  EXPECT_EQ(a.to_vector<int32_t>(), (std::vector<int32_t>{0x01020304, -2}));
  EXPECT_EQ(read_idx(dir.file("f32")).to_vector<float>(), (std::vector<float>{1.5f}));
  TensorData c = read_idx(dir.file("i16.gz"));
  EXPECT_EQ(c.shape(), (Shape{1, 1}));
  EXPECT_EQ(c.to_vector<int16_t>(), (std::vector<int16_t>{0x0102}));
}

TEST(IdxBadInput, TruncatedRawFileNamesFileAndOffset) {
  TempDir dir;
  const std::string path = dir.file("img");
  write_text(path, idx_images());
  truncate_file(path, 30);  // header 16 bytes + 14 of 24 data bytes
  expect_error([&] { read_idx(path); }, {path, "truncated", "needs 40 bytes", "byte offset 30"});
  truncate_file(path, 6);
  expect_error([&] { read_idx(path); }, {path, "truncated", "header", "byte offset 6"});
}

TEST(IdxBadInput, TruncatedGzipFileNamesFileAndOffset) {
  TempDir dir;
  const std::string path = dir.file("img.gz");
  // Large enough that cutting the compressed file leaves part of the data.
  std::string data;
  for (int i = 0; i < 100 * 28 * 28; ++i) data += char((i * 7919) % 251);
  write_gz(path, idx_bytes(0x08, {100, 28, 28}, data));
  const size_t full = fs::file_size(path);
  truncate_file(path, full / 2);
  expect_error([&] { read_idx(path); }, {path, "truncated", "needs 78416 bytes", "byte offset", "decompressed"});
}

TEST(IdxBadInput, BadMagicCountMismatchAndMissingFiles) {
  TempDir dir;
  write_text(dir.file("text"), "hello world, not idx");
  expect_error([&] { read_idx(dir.file("text")); }, {dir.file("text"), "not an IDX file", "0x68656c6c", "offset 0"});
  write_text(dir.file("img"), idx_images());
  write_text(dir.file("lbl2"), idx_bytes(0x08, {2}, std::string{1, 2}));
  expect_error([&] { IdxDataset ds(dir.file("img"), dir.file("lbl2")); },
               {dir.file("img"), "3 images", dir.file("lbl2"), "2 labels"});
  expect_error([&] { IdxDataset ds(dir.file("img"), dir.file("img")); }, {dir.file("img"), "0x00000801"});
  expect_error([&] { read_idx(dir.file("missing.gz")); }, {dir.file("missing.gz"), "cannot open", "No such file"});
  expect_error([&] { FashionMnist::train(dir.file("nowhere")); },
               {"Fashion-MNIST not found", "nowhere/train-images-idx3-ubyte.gz", "dataset-fashion-mnist"});
  expect_error([&] { Mnist::test(dir.file("nowhere")); }, {"MNIST not found", "t10k-images-idx3-ubyte"});
}

TEST(Idx, MnistDirectoryMixesGzipAndRaw) {
  TempDir dir;
  write_gz(dir.file("train-images-idx3-ubyte.gz"), idx_images());
  write_text(dir.file("train-labels-idx1-ubyte"), idx_labels());
  expect_mnist_fixture(*Mnist::train(dir.path().string()));
  ImageItem img = to_image_item(*Mnist::train(dir.path().string())->get(1));
  EXPECT_EQ(img.image.shape(), (Shape{1, 2, 4}));
  EXPECT_EQ(img.label, 0);
  EXPECT_EQ(img.image.to_vector<int>()[7], 17);
}

TEST(Idx, RealFashionMnist) {
  const std::string dir = kFashionMnistDir;
  if (!fs::exists(dir + "/train-labels-idx1-ubyte.gz")) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  auto train = FashionMnist::train(), test = FashionMnist::test();
  ASSERT_EQ(train->size(), 60000u);
  ASSERT_EQ(test->size(), 10000u);
  EXPECT_EQ(train->get(0)->label, 9);
  EXPECT_EQ(train->get(1)->label, 0);
  EXPECT_EQ(test->get(0)->label, 9);
  EXPECT_EQ(test->get(1)->label, 2);
  auto sum = [](const MnistItem& it) { return std::accumulate(it.image.begin(), it.image.end(), 0); };
  EXPECT_EQ(sum(*train->get(0)), 76247);  // values from /usr/bin/python3 + gzip
  EXPECT_EQ(sum(*test->get(0)), 33456);
  EXPECT_EQ(std::string(FashionMnist::kClassNames[9]), "Ankle boot");
}

// ------------------------------------------------------------------------------------------
// Images and image folders

TEST(Image, PngByHandAndRoundTrips) {
  TempDir dir;
  const auto rgb = gradient(3, 5, 3);
  write_png_by_hand(dir.file("hand.png"), 5, 3, 2, rgb);
  TensorData hwc = read_image(dir.file("hand.png"), ImageLayout::hwc);
  EXPECT_EQ(hwc.shape(), (Shape{3, 5, 3}));
  EXPECT_EQ(hwc.to_vector<int>(), std::vector<int>(rgb.begin(), rgb.end()));
  TensorData chw = read_image(dir.file("hand.png"));
  EXPECT_EQ(chw.shape(), (Shape{3, 3, 5}));
  EXPECT_EQ(chw.to_vector<int>()[1 * 15 + 2 * 5 + 4], rgb[(2 * 5 + 4) * 3 + 1]);  // c=1, y=2, x=4
  EXPECT_EQ(to_layout(chw, ImageLayout::chw, ImageLayout::hwc).to_vector<int>(), hwc.to_vector<int>());

  write_png(dir.file("lib.png"), chw);
  EXPECT_EQ(read_image(dir.file("lib.png")).to_vector<int>(), chw.to_vector<int>());

  const auto gray = gradient(4, 2, 1);
  write_png_by_hand(dir.file("gray.png"), 2, 4, 0, gray);
  TensorData g = read_image(dir.file("gray.png"));
  EXPECT_EQ(g.shape(), (Shape{1, 4, 2}));
  TensorData g3 = read_image(dir.file("gray.png"), ImageLayout::chw, 3);  // gray -> RGB
  EXPECT_EQ(g3.shape(), (Shape{3, 4, 2}));
  EXPECT_EQ(g3.to_vector<int>()[2 * 8 + 5], gray[5]);
}

TEST(Image, JpegRoundTripIsClose) {
  TempDir dir;
  const auto rgb = gradient(16, 16, 3);
  write_jpeg(dir.file("a.jpg"), hwc_u8(rgb, 16, 16, 3), ImageLayout::hwc, 95);
  TensorData back = read_image(dir.file("a.jpg"), ImageLayout::hwc);
  ASSERT_EQ(back.shape(), (Shape{16, 16, 3}));
  std::vector<int> v = back.to_vector<int>();
  int worst = 0;
  for (size_t i = 0; i < v.size(); ++i) worst = std::max(worst, std::abs(v[i] - int(rgb[i])));
  EXPECT_LE(worst, 10);
  const auto gray = gradient(8, 8, 1);
  write_jpeg(dir.file("g.jpg"), hwc_u8(gray, 8, 8, 1), ImageLayout::hwc);
  EXPECT_EQ(read_image(dir.file("g.jpg")).shape(), (Shape{1, 8, 8}));
  EXPECT_EQ(read_image(dir.file("g.jpg"), ImageLayout::chw, 4).shape(), (Shape{4, 8, 8}));
}

namespace {
// root/bird/{0.png,1.jpg}, root/ant/{a.png}, root/cat/ (empty), root/zebra/readme.txt
void make_folder(const TempDir& dir) {
  for (const char* c : {"bird", "ant", "cat", "zebra"}) fs::create_directories(dir.path() / "root" / c);
  write_png_by_hand(dir.file("root/bird/0.png"), 4, 3, 2, gradient(3, 4, 3));
  write_jpeg(dir.file("root/bird/1.JPG"), hwc_u8(gradient(3, 4, 3), 3, 4, 3), ImageLayout::hwc);
  write_png(dir.file("root/ant/a.png"), hwc_u8(gradient(3, 4, 3), 3, 4, 3), ImageLayout::hwc);
  write_text(dir.file("root/zebra/readme.txt"), "not an image");
}
}  // namespace

TEST(ImageFolder, ClassesLabelsAndLayouts) {
  TempDir dir;
  make_folder(dir);
  ImageFolderDataset ds(dir.file("root"));
  EXPECT_EQ(ds.class_names(), (std::vector<std::string>{"ant", "bird", "cat", "zebra"}));
  ASSERT_EQ(ds.size(), 3u);
  EXPECT_EQ(ds.label(0), 0);
  EXPECT_EQ(ds.label(1), 1);
  EXPECT_EQ(ds.label(2), 1);
  EXPECT_EQ(fs::path(ds.path(2)).filename(), "1.JPG");
  ImageItem a = *ds.get(0);
  EXPECT_EQ(a.image.shape(), (Shape{3, 3, 4}));
  EXPECT_EQ(a.layout, ImageLayout::chw);
  EXPECT_EQ(a.image.dtype(), DType::u8);
  EXPECT_EQ(to_layout(a.image, ImageLayout::chw, ImageLayout::hwc).to_vector<int>(),
            hwc_u8(gradient(3, 4, 3), 3, 4, 3).to_vector<int>());
  ImageFolderOptions opt;
  opt.layout = ImageLayout::hwc;
  opt.channels = 1;
  opt.expected_size = {{3, 4}};
  ImageFolderDataset gray(dir.file("root"), opt);
  ImageItem j = *gray.get(2);
  EXPECT_EQ(j.image.shape(), (Shape{3, 4, 1}));
  EXPECT_EQ(j.height(), 3);
  EXPECT_EQ(j.width(), 4);
  EXPECT_EQ(j.channels(), 1);
  EXPECT_FALSE(gray.get(3).has_value());
}

TEST(ImageFolderBadInput, UnexpectedSizeNamesFile) {
  TempDir dir;
  make_folder(dir);
  ImageFolderOptions opt;
  opt.expected_size = {{28, 28}};
  ImageFolderDataset ds(dir.file("root"), opt);
  expect_error([&] { ds.get(1); }, {dir.file("root/bird/0.png"), "3x4", "expected 28x28"});
}

TEST(ImageFolderBadInput, TruncatedAndCorruptImagesNameFileAndOffset) {
  TempDir dir;
  make_folder(dir);
  const std::string png = dir.file("root/bird/0.png"), jpg = dir.file("root/bird/1.JPG");
  const size_t png_size = fs::file_size(png), jpg_size = fs::file_size(jpg);
  truncate_file(png, png_size - 20);  // cuts into the IDAT chunk
  truncate_file(jpg, jpg_size / 2);
  ImageFolderDataset ds(dir.file("root"));
  expect_error([&] { ds.get(1); }, {png, "truncated PNG", "IDAT", "byte offset 33",
                                    "ends at byte offset " + std::to_string(png_size - 20)});
  expect_error([&] { ds.get(2); }, {jpg, "truncated JPEG", "byte offset " + std::to_string(jpg_size / 2)});
  // A PNG whose chunks are intact but whose pixel data is garbage.
  std::string bytes = read_bytes(dir.file("root/ant/a.png"));
  write_text(png, bytes);
  truncate_file(png, 8);
  expect_error([&] { ds.get(1); }, {png, "truncated PNG", "byte offset 8", "before the IEND chunk"});
  write_text(jpg, "\xff\xd8\xff garbage garbage");
  expect_error([&] { ds.get(2); }, {jpg, "JPEG", "byte offset"});
  write_text(jpg, "GIF89a");
  expect_error([&] { ds.get(2); }, {jpg, "not a PNG or JPEG"});
  std::string corrupt = read_bytes(dir.file("root/ant/a.png"));
  corrupt[40] = char(corrupt[40] ^ 0x55);  // damages IDAT data: the CRC no longer matches
  write_text(png, corrupt);
  expect_error([&] { ds.get(1); }, {png, "corrupt PNG", "libpng"});
}

TEST(ImageFolderBadInput, MissingRootAndEmptyDataset) {
  TempDir dir;
  expect_error([&] { ImageFolderDataset ds(dir.file("nope")); }, {dir.file("nope"), "does not exist"});
  fs::create_directories(dir.path() / "root" / "a");
  expect_error([&] { ImageFolderDataset ds(dir.file("root")); }, {dir.file("root"), "empty", "no images"});
  fs::remove_all(dir.path() / "root" / "a");
  expect_error([&] { ImageFolderDataset ds(dir.file("root")); }, {dir.file("root"), "no class sub-folders"});
  expect_error([&] { read_image(dir.file("missing.png")); }, {dir.file("missing.png"), "cannot open"});
}

// ------------------------------------------------------------------------------------------
// Image transforms

namespace {
ImageItem small_item(ImageLayout layout) {  // 2 channels, 3x4, value = 100c + 10y + x
  std::vector<uint8_t> chw;
  for (int c = 0; c < 2; ++c)
    for (int y = 0; y < 3; ++y)
      for (int x = 0; x < 4; ++x) chw.push_back(uint8_t(100 * c + 10 * y + x));
  TensorData t = TensorData::from_vector(chw, Shape{2, 3, 4});
  return ImageItem{to_layout(t, ImageLayout::chw, layout), 5, layout};
}
int px(const ImageItem& it, int c, int y, int x) {
  TensorData chw = to_layout(it.image, it.layout, ImageLayout::chw);
  return chw.to_vector<int>()[size_t((c * it.height() + y) * it.width() + x)];
}
}  // namespace

TEST(Transforms, NormalizeFollowsTheFormula) {
  for (ImageLayout layout : {ImageLayout::chw, ImageLayout::hwc}) {
    ImageItem n = normalize(small_item(layout), {0.5f, 0.25f}, {0.5f, 2.0f});
    EXPECT_EQ(n.image.dtype(), DType::f32);
    EXPECT_EQ(n.layout, layout);
    TensorData chw = to_layout(n.image, layout, ImageLayout::chw);
    std::vector<float> v = chw.to_vector<float>();
    // c=1, y=2, x=3: pixel 123 -> (123/255 - 0.25) / 2
    EXPECT_FLOAT_EQ(v[size_t((1 * 3 + 2) * 4 + 3)], (123.0f / 255.0f - 0.25f) / 2.0f);
    EXPECT_FLOAT_EQ(v[0], (0.0f - 0.5f) / 0.5f);
  }
  ImageItem one = normalize(small_item(ImageLayout::chw), {0.1f}, {0.2f});
  EXPECT_FLOAT_EQ(one.image.to_vector<float>()[1], (1.0f / 255.0f - 0.1f) / 0.2f);
  expect_error([] { normalize(small_item(ImageLayout::chw), {0, 0, 0}, {1, 1, 1}); }, {"normalize", "2 channels"});
  EXPECT_FLOAT_EQ(to_float(small_item(ImageLayout::chw)).image.to_vector<float>()[11], 23.0f / 255.0f);
}

TEST(Transforms, RandomCropIsAWindowOfThePaddedImage) {
  for (ImageLayout layout : {ImageLayout::chw, ImageLayout::hwc}) {
    std::set<std::pair<int, int>> offsets;
    for (uint64_t seed = 0; seed < 200; ++seed) {
      Rng rng(seed);
      ImageItem c = random_crop(small_item(layout), 3, 4, 1, rng);
      ASSERT_EQ(c.height(), 3);
      ASSERT_EQ(c.width(), 4);
      EXPECT_EQ(c.label, 5);
      // Find the offset (dy, dx) in [-1, 1]^2 that explains the crop.
      int found = 0;
      for (int dy = -1; dy <= 1; ++dy)
        for (int dx = -1; dx <= 1; ++dx) {
          bool match = true;
          for (int ch = 0; ch < 2 && match; ++ch)
            for (int y = 0; y < 3 && match; ++y)
              for (int x = 0; x < 4 && match; ++x) {
                int sy = y + dy, sx = x + dx;
                int expect = (sy < 0 || sy >= 3 || sx < 0 || sx >= 4) ? 0 : 100 * ch + 10 * sy + sx;
                match = px(c, ch, y, x) == expect;
              }
          if (match) {
            ++found;
            offsets.insert({dy, dx});
          }
        }
      EXPECT_EQ(found, 1);
    }
    EXPECT_EQ(offsets.size(), 9u);  // every offset occurs
  }
  Rng rng(1);
  ImageItem same = random_crop(small_item(ImageLayout::chw), 3, 4, 0, rng);
  EXPECT_EQ(same.image.to_vector<int>(), small_item(ImageLayout::chw).image.to_vector<int>());
  expect_error([&] { random_crop(small_item(ImageLayout::chw), 6, 4, 1, rng); }, {"random_crop", "does not fit"});
}

TEST(Transforms, HorizontalFlip) {
  for (ImageLayout layout : {ImageLayout::chw, ImageLayout::hwc}) {
    ImageItem f = horizontal_flip(small_item(layout));
    EXPECT_EQ(px(f, 1, 2, 0), 123);
    EXPECT_EQ(px(f, 0, 1, 3), 10);
  }
  Rng rng(3);
  const auto orig = small_item(ImageLayout::chw).image.to_vector<int>();
  const auto flipped = horizontal_flip(small_item(ImageLayout::chw)).image.to_vector<int>();
  int flips = 0;
  for (int i = 0; i < 200; ++i) {
    EXPECT_EQ(random_horizontal_flip(small_item(ImageLayout::chw), 0.0, rng).image.to_vector<int>(), orig);
    EXPECT_EQ(random_horizontal_flip(small_item(ImageLayout::chw), 1.0, rng).image.to_vector<int>(), flipped);
    flips += random_horizontal_flip(small_item(ImageLayout::chw), 0.5, rng).image.to_vector<int>() == flipped;
  }
  EXPECT_GT(flips, 60);
  EXPECT_LT(flips, 140);
  // f32 images too.
  ImageItem f = horizontal_flip(to_float(small_item(ImageLayout::chw)));
  EXPECT_FLOAT_EQ(f.image.to_vector<float>()[0], 3.0f / 255.0f);
}

TEST(Transforms, BatchImagesAndMnist) {
  ImageBatch b = batch_images({small_item(ImageLayout::chw), small_item(ImageLayout::hwc)}, Device::cpu());
  EXPECT_EQ(b.images.shape(), (Shape{2, 2, 3, 4}));
  EXPECT_EQ(b.labels.shape(), (Shape{2}));
  EXPECT_EQ(b.labels.dtype(), DType::i64);
  std::vector<float> v = b.images.to_vector<float>();
  EXPECT_FLOAT_EQ(v[23], 123.0f / 255.0f);
  EXPECT_FLOAT_EQ(v[24 + 23], 123.0f / 255.0f);
  ImageItem other = small_item(ImageLayout::chw);
  other.image = TensorData(Shape{2, 3, 5}, DType::u8);
  expect_error(
      [&] {
        batch_images({small_item(ImageLayout::chw), other}, Device::cpu());
      },
      {"batch_images", "item 1", "2x3x5"});
  MnistItem m{std::vector<uint8_t>(6, 255), 4, 2, 3};
  ImageBatch mb = batch_mnist({m, m, m}, Device::cpu());
  EXPECT_EQ(mb.images.shape(), (Shape{3, 1, 2, 3}));
  EXPECT_EQ(mb.labels.to_vector<int64_t>(), (std::vector<int64_t>{4, 4, 4}));
  EXPECT_FLOAT_EQ(mb.images.to_vector<float>()[5], 1.0f);
}

// ------------------------------------------------------------------------------------------
// SQLite

namespace {
void make_db(const std::string& path) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  const char* sql =
      "CREATE TABLE samples (x REAL, label INTEGER, name TEXT, data BLOB, note TEXT);"
      "INSERT INTO samples VALUES (0.5, 1, 'one', x'0102', NULL);"
      "INSERT INTO samples VALUES (1.5, 2, 'two', x'', 'n');"
      "INSERT INTO samples VALUES (2.5, 3, 'three', NULL, NULL);"
      "DELETE FROM samples WHERE label = 2;"
      "INSERT INTO samples VALUES (3.5, 4, 'four', NULL, NULL);"
      "CREATE TABLE \"odd \"\"name\" (v INTEGER);"
      "INSERT INTO \"odd \"\"name\" VALUES (42);";
  char* err = nullptr;
  ASSERT_EQ(sqlite3_exec(db, sql, nullptr, nullptr, &err), SQLITE_OK) << (err ? err : "");
  sqlite3_close(db);
}
}  // namespace

TEST(Sqlite, RowsAsColumnMaps) {
  TempDir dir;
  const std::string path = dir.file("d.db");
  make_db(path);
  auto ds = std::make_shared<SqliteDataset>(path, "samples");
  ASSERT_EQ(ds->size(), 3u);
  EXPECT_EQ(ds->column_names(), (std::vector<std::string>{"x", "label", "name", "data", "note"}));
  SqliteRow r = *ds->get(0);
  EXPECT_DOUBLE_EQ(r.real("x"), 0.5);
  EXPECT_EQ(r.integer("label"), 1);
  EXPECT_EQ(r.text("name"), "one");
  EXPECT_EQ(r.blob("data"), (std::vector<uint8_t>{1, 2}));
  EXPECT_TRUE(r.is_null("note"));
  EXPECT_EQ(r.columns().size(), 5u);
  EXPECT_EQ(ds->get(1)->text("name"), "three");
  EXPECT_EQ(ds->get(2)->rowid(), 4);
  EXPECT_FALSE(ds->get(3).has_value());
  expect_error([&] { r.integer("name"); }, {path, "samples", "rowid 1", "name", "TEXT"});
  expect_error([&] { r["zzz"]; }, {path, "samples", "no column 'zzz'"});
  SqliteDataset odd(path, "odd \"name", SqliteOptions{{"v"}});
  EXPECT_EQ(odd.get(0)->integer("v"), 42);
}

TEST(Sqlite, ParserAndErrors) {
  TempDir dir;
  const std::string path = dir.file("d.db");
  make_db(path);
  struct Sample {
    double x;
    int64_t y;
  };
  auto ds = load_sqlite(path, "samples", [](const SqliteRow& r) { return Sample{r.real("x"), r.integer("label")}; });
  ASSERT_EQ(ds->size(), 3u);
  EXPECT_DOUBLE_EQ(ds->get(2)->x, 3.5);
  EXPECT_EQ(ds->get(2)->y, 4);
  auto bad = load_sqlite(path, "samples", [](const SqliteRow& r) { return r.blob("data").size(); });
  EXPECT_EQ(*bad->get(0), 2u);
  expect_error([&] { bad->get(1); }, {path, "table 'samples'", "rowid 3", "NULL"});
  expect_error([&] { SqliteDataset d(path, "nope"); }, {path, "no table 'nope'", "samples"});
  expect_error([&] { SqliteDataset d(dir.file("missing.db"), "samples"); },
               {dir.file("missing.db"), "samples", "cannot open"});
  write_text(dir.file("junk.db"), std::string(2048, 'j'));
  expect_error([&] { SqliteDataset d(dir.file("junk.db"), "t"); }, {dir.file("junk.db"), "'t'"});
  expect_error([&] { SqliteDataset d(path, "samples", SqliteOptions{{"missing_col"}}); },
               {path, "samples", "missing_col"});
}

// ------------------------------------------------------------------------------------------
// DataLoader

namespace {
using Batch = std::vector<int>;
Batch identity_batch(std::vector<int> items, const Device&) { return items; }

std::vector<Batch> run_epoch(DataLoader<Batch>& loader) {
  std::vector<Batch> out;
  for (const Batch& b : loader) out.push_back(b);
  return out;
}

std::shared_ptr<DataLoader<Batch>> int_loader(int n, size_t batch, std::optional<uint64_t> seed, size_t workers,
                                              bool drop_last = false) {
  DataLoaderBuilder<int, Batch> b(identity_batch);
  b.batch_size(batch).num_workers(workers).drop_last(drop_last);
  if (seed) b.shuffle(*seed);
  return b.build(in_memory(range_vec(n)));
}
}  // namespace

TEST(DataLoader, BatchesInOrderAndDropLast) {
  auto loader = int_loader(10, 4, std::nullopt, 0);
  EXPECT_EQ(loader->num_batches(), 3u);
  EXPECT_EQ(loader->num_items(), 10u);
  EXPECT_EQ(run_epoch(*loader), (std::vector<Batch>{{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9}}));
  auto dropping = int_loader(10, 4, std::nullopt, 2, true);
  EXPECT_EQ(dropping->num_batches(), 2u);
  EXPECT_EQ(dropping->num_items(), 8u);
  EXPECT_EQ(run_epoch(*dropping), (std::vector<Batch>{{0, 1, 2, 3}, {4, 5, 6, 7}}));
  EXPECT_EQ(run_epoch(*dropping).size(), 2u);  // a second epoch
}

TEST(DataLoader, ShuffleIsReproducibleAndIndependentOfWorkers) {
  std::vector<std::vector<Batch>> epochs[3];
  for (size_t workers : {0u, 1u, 2u}) {
    auto loader = int_loader(103, 8, 77, workers);
    for (int e = 0; e < 3; ++e) epochs[workers].push_back(run_epoch(*loader));
  }
  EXPECT_EQ(epochs[0], epochs[1]);
  EXPECT_EQ(epochs[0], epochs[2]);
  EXPECT_NE(epochs[0][0], epochs[0][1]);  // each epoch reshuffles
  // Epoch e visits permutation(n, seed + e).
  for (int e = 0; e < 3; ++e) {
    std::vector<int> flat;
    for (const Batch& b : epochs[0][e]) flat.insert(flat.end(), b.begin(), b.end());
    std::vector<size_t> p = permutation(103, 77 + e);
    ASSERT_EQ(flat.size(), p.size());
    for (size_t i = 0; i < p.size(); ++i) EXPECT_EQ(flat[i], int(p[i]));
  }
  // A fresh loader (a new run) repeats the sequence; set_epoch resumes it.
  auto again = int_loader(103, 8, 77, 2);
  EXPECT_EQ(run_epoch(*again), epochs[0][0]);
  again->set_epoch(2);
  EXPECT_EQ(run_epoch(*again), epochs[0][2]);
  EXPECT_EQ(again->epoch(), 3u);
}

TEST(DataLoader, AugmentationIsPerEpochAndIndependentOfWorkers) {
  auto ds = augmented(in_memory(std::vector<int>(40, 0)), 5, [](int, Rng& r) { return int(r.below(1000)); });
  std::vector<std::vector<Batch>> runs;
  for (size_t workers : {0u, 2u}) {
    auto loader = DataLoaderBuilder<int, Batch>(identity_batch).batch_size(6).shuffle(1).num_workers(workers).build(ds);
    std::vector<Batch> two = run_epoch(*loader);
    for (const Batch& b : run_epoch(*loader)) two.push_back(b);
    runs.push_back(two);
  }
  EXPECT_EQ(runs[0], runs[1]);
  EXPECT_NE(std::vector<Batch>(runs[0].begin(), runs[0].begin() + 7),
            std::vector<Batch>(runs[0].begin() + 7, runs[0].end()));
}

TEST(DataLoader, WaitSecondsMeasuresConsumerBlocking) {
  auto slow = [](std::vector<int> items, const Device&) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    return items;
  };
  auto ds = in_memory(range_vec(8));
  auto sync = DataLoaderBuilder<int, Batch>(slow).batch_size(2).build(ds);
  EXPECT_EQ(sync->wait_seconds(), 0.0);
  run_epoch(*sync);
  EXPECT_GE(sync->wait_seconds(), 0.075);  // 4 batches built on the consumer's thread
  EXPECT_LT(sync->wait_seconds(), 5.0);
  // Two workers ahead of a slower consumer: little waiting after the first batch.
  auto ahead = DataLoaderBuilder<int, Batch>(slow).batch_size(2).num_workers(2).prefetch(4).build(ds);
  for (const Batch& b : *ahead) {
    (void)b;
    std::this_thread::sleep_for(std::chrono::milliseconds(60));
  }
  EXPECT_GT(ahead->wait_seconds(), 0.0);
  EXPECT_LT(ahead->wait_seconds(), sync->wait_seconds());
}

TEST(DataLoader, WorkerErrorsReachTheConsumerInOrder) {
  for (size_t workers : {0u, 1u, 2u}) {
    auto failing = [](std::vector<int> items, const Device&) {
      if (items[0] == 6) EMBER_FAIL("batcher: cannot build the batch of item ", items[0]);
      return items;
    };
    auto loader =
        DataLoaderBuilder<int, Batch>(failing).batch_size(2).num_workers(workers).build(in_memory(range_vec(12)));
    std::vector<Batch> got;
    try {
      for (const Batch& b : *loader) got.push_back(b);
      ADD_FAILURE() << "no error with " << workers << " workers";
    } catch (const ember::Error& e) {
      EXPECT_NE(std::string(e.what()).find("cannot build the batch of item 6"), std::string::npos);
    }
    EXPECT_EQ(got, (std::vector<Batch>{{0, 1}, {2, 3}, {4, 5}}));
    expect_error([&] { run_epoch(*loader); }, {"item 6"});  // the next epoch fails at the same batch
  }
}

TEST(DataLoader, DatasetErrorsPropagate) {
  auto ds = map(in_memory(range_vec(6)), [](int x) {
    EMBER_CHECK(x != 4, "item ", x, " is corrupt");
    return x;
  });
  auto loader = DataLoaderBuilder<int, Batch>(identity_batch).batch_size(3).num_workers(2).build(ds);
  expect_error([&] { run_epoch(*loader); }, {"item 4 is corrupt"});
}

TEST(DataLoader, StopsCleanlyMidEpoch) {
  std::atomic<int> built{0};
  auto counting = [&built](std::vector<int> items, const Device&) {
    ++built;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    return items;
  };
  {
    auto loader = DataLoaderBuilder<int, Batch>(counting).batch_size(1).num_workers(2).prefetch(3).build(
        in_memory(range_vec(1000)));
    auto it = loader->begin();
    EXPECT_EQ(*it, Batch{0});
    ++it;
    EXPECT_EQ(*it, Batch{1});
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    EXPECT_LE(built.load(), 2 + 3 + 2);  // bounded prefetch: taken + ahead + in flight
    // A new epoch while the old iterator lives ends the old epoch.
    auto it2 = loader->begin();
    EXPECT_EQ(*it2, Batch{0});
    EXPECT_TRUE(++it == loader->end());
  }  // loader and iterators destroyed mid-epoch: workers are joined
  EXPECT_LT(built.load(), 100);
}

TEST(DataLoader, SplitForDevices) {
  auto loader = int_loader(20, 2, 3, 1);  // 10 batches
  std::vector<Batch> full = run_epoch(*int_loader(20, 2, 3, 0));
  auto parts = loader->split(3);
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts[0].num_batches(), 4u);
  EXPECT_EQ(parts[2].num_batches(), 3u);
  EXPECT_EQ(parts[0].num_items(), 8u);
  for (size_t j = 0; j < 3; ++j) {
    std::vector<Batch> got = run_epoch(parts[j]);
    for (size_t k = 0; k < got.size(); ++k) EXPECT_EQ(got[k], full[j + 3 * k]);
  }
  auto runs = loader->split(3, SplitMode::contiguous);
  std::vector<Batch> joined;
  for (auto& p : runs)
    for (const Batch& b : p) joined.push_back(b);
  EXPECT_EQ(joined, full);
  EXPECT_EQ(runs[0].num_batches(), 4u);
  EXPECT_EQ(runs[1].num_batches(), 3u);
  auto uneven = int_loader(5, 2, std::nullopt, 0)->split(2);  // batches {0,1} {2,3} {4}
  EXPECT_EQ(uneven[0].num_items(), 3u);
  EXPECT_EQ(uneven[1].num_items(), 2u);
  expect_error([&] { loader->split(11); }, {"split", "11 parts", "10 batches"});
}

TEST(DataLoaderBadInput, EmptyDatasetIsAClearError) {
  expect_error([] { int_loader(0, 4, std::nullopt, 0); }, {"DataLoader", "empty"});
  expect_error([] { int_loader(3, 4, std::nullopt, 0, true); }, {"DataLoader", "drop_last", "batch size 4", "3 items"});
  expect_error([] { int_loader(3, 0, std::nullopt, 0); }, {"DataLoader", "batch size"});
}

TEST(DataLoader, MnistBatchesOnADevice) {
  TempDir dir;
  write_gz(dir.file("train-images-idx3-ubyte.gz"), idx_images());
  write_gz(dir.file("train-labels-idx1-ubyte.gz"), idx_labels());
  auto loader = DataLoaderBuilder(batch_mnist)
                    .batch_size(2)
                    .num_workers(1)
                    .device(Device::cpu())
                    .build(Mnist::train(dir.path().string()));
  std::vector<ImageBatch> batches;
  for (const ImageBatch& b : *loader) batches.push_back(b);
  ASSERT_EQ(batches.size(), 2u);
  EXPECT_EQ(batches[0].images.shape(), (Shape{2, 1, 2, 4}));
  EXPECT_EQ(batches[1].labels.to_vector<int64_t>(), (std::vector<int64_t>{3}));
  EXPECT_FLOAT_EQ(batches[1].images.to_vector<float>()[7], 27.0f / 255.0f);
}
