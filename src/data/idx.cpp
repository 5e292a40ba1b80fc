// IDX reading (gzip through zlib's gzread, which also reads raw files) and the MNIST datasets.
#include "ember/data/idx.hpp"

#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iomanip>
#include <sstream>

#include "ember/core/error.hpp"

namespace ember::data {
namespace {

struct RawFile {
  std::string bytes;  // decompressed content
  bool compressed = false;
  std::string gzip_error;  // set when the gzip stream is damaged or ends early
};

RawFile read_maybe_gzip(const std::string& path) {
  std::FILE* probe = std::fopen(path.c_str(), "rb");
  if (probe == nullptr) EMBER_FAIL("read_idx: cannot open '", path, "': ", std::strerror(errno));
  std::fclose(probe);
  gzFile f = gzopen(path.c_str(), "rb");
  EMBER_CHECK(f != nullptr, "read_idx: cannot open '", path, "': ", std::strerror(errno));
  gzbuffer(f, 1 << 17);
  RawFile out;
  char buf[1 << 16];
  int n;
  while ((n = gzread(f, buf, sizeof buf)) > 0) out.bytes.append(buf, static_cast<size_t>(n));
  // A stream that ends early reports "unexpected end of file" only on the read after the
  // last data, hence reading until gzread returns 0 or -1.
  int err = Z_OK;
  const char* msg = gzerror(f, &err);
  if (n < 0 || (err != Z_OK && err != Z_STREAM_END)) out.gzip_error = msg && *msg ? msg : "zlib error";
  out.compressed = gzdirect(f) == 0;
  gzclose(f);
  return out;
}

std::string hex32(uint32_t v) {
  std::ostringstream os;
  os << "0x" << std::hex << std::setw(8) << std::setfill('0') << v;
  return os.str();
}

uint32_t be32(const std::string& b, size_t at) {
  return (uint32_t(uint8_t(b[at])) << 24) | (uint32_t(uint8_t(b[at + 1])) << 16) | (uint32_t(uint8_t(b[at + 2])) << 8) |
         uint32_t(uint8_t(b[at + 3]));
}

// "byte offset N" with a note when the offsets count decompressed bytes.
std::string where(const RawFile& f, size_t offset) {
  std::ostringstream os;
  os << "byte offset " << offset << (f.compressed ? " of the decompressed data" : "");
  return os.str();
}

[[noreturn]] void truncated(const std::string& path, const RawFile& f, const std::string& what, size_t need) {
  std::ostringstream os;
  os << "read_idx: '" << path << "' is truncated: " << what << " needs " << need << " bytes, the data ends at "
     << where(f, f.bytes.size());
  if (!f.gzip_error.empty()) os << " (gzip: " << f.gzip_error << ")";
  throw Error(os.str());
}

std::string find_file(const std::string& dir, const std::string& name, const std::string& dataset_name,
                      const std::string& hint) {
  namespace fs = std::filesystem;
  for (const std::string& candidate : {dir + "/" + name + ".gz", dir + "/" + name})
    if (fs::exists(candidate)) return candidate;
  EMBER_FAIL(dataset_name, " not found: neither '", dir, "/", name, ".gz' nor '", dir, "/", name, "' exists", hint);
}

std::shared_ptr<const IdxDataset> load_pair(const std::string& dir, const std::string& prefix,
                                            const std::string& dataset_name, const std::string& hint) {
  std::string images = find_file(dir, prefix + "-images-idx3-ubyte", dataset_name, hint);
  std::string labels = find_file(dir, prefix + "-labels-idx1-ubyte", dataset_name, hint);
  return std::make_shared<const IdxDataset>(images, labels);
}

const char* kFashionHint =
    "; install the Debian package dataset-fashion-mnist (apt-get install dataset-fashion-mnist), or pass the "
    "directory that holds the files";

}  // namespace

TensorData read_idx(const std::string& path) {
  const RawFile f = read_maybe_gzip(path);
  const std::string& b = f.bytes;
  if (b.size() < 4) truncated(path, f, "the magic number", 4);
  const uint32_t magic = be32(b, 0);
  const unsigned type = (magic >> 8) & 0xff, ndim = magic & 0xff;
  DType dtype;
  switch (type) {
    case 0x08:
      dtype = DType::u8;
      break;
    case 0x09:
      dtype = DType::i8;
      break;
    case 0x0B:
      dtype = DType::i16;
      break;
    case 0x0C:
      dtype = DType::i32;
      break;
    case 0x0D:
      dtype = DType::f32;
      break;
    case 0x0E:
      dtype = DType::f64;
      break;
    default:
      dtype = DType::boolean;
  }
  EMBER_CHECK((magic >> 16) == 0 && dtype != DType::boolean, "read_idx: '", path, "' is not an IDX file: magic number ",
              hex32(magic), " at byte offset 0 (expected 0x0000TTNN with type TT in 08, 09, 0B, 0C, 0D, 0E, e.g. ",
              "0x00000801 for labels or 0x00000803 for images)", f.compressed ? "" : "; is it a damaged gzip file?");
  const size_t header = 4 + 4 * size_t(ndim);
  if (b.size() < header) truncated(path, f, "the header of " + std::to_string(ndim) + " dimensions", header);
  std::vector<int64_t> dims(ndim);
  uint64_t numel = 1;
  for (unsigned d = 0; d < ndim; ++d) {
    dims[d] = be32(b, 4 + 4 * d);
    numel *= uint64_t(dims[d]);
  }
  Shape shape(dims);
  const size_t elem = dtype_size(dtype), need = header + numel * elem;
  if (b.size() < need) {
    std::ostringstream what;
    what << "the data of shape " << shape << " (" << dtype << ")";
    truncated(path, f, what.str(), need);
  }
  EMBER_CHECK(f.gzip_error.empty(), "read_idx: '", path, "': truncated or damaged gzip stream (zlib: ", f.gzip_error,
              "); the decompressed data ends at byte offset ", b.size());
  EMBER_CHECK(b.size() == need, "read_idx: '", path, "' has ", b.size() - need,
              " unexpected bytes after the data of shape ", shape, ", from ", where(f, need));
  TensorData out(shape, dtype);
  std::byte* dst = out.bytes().data();
  const char* src = b.data() + header;
  if (elem == 1) {
    std::memcpy(dst, src, numel);
  } else {
    for (uint64_t i = 0; i < numel; ++i)
      for (size_t j = 0; j < elem; ++j) dst[i * elem + j] = std::byte(src[i * elem + (elem - 1 - j)]);
  }
  return out;
}

IdxDataset::IdxDataset(const std::string& images_path, const std::string& labels_path) {
  images_ = read_idx(images_path);
  labels_ = read_idx(labels_path);
  EMBER_CHECK(images_.dtype() == DType::u8 && images_.shape().rank() == 3, "IdxDataset: '", images_path, "' holds ",
              images_.dtype(), " ", images_.shape(),
              "; an images file has magic number 0x00000803 (u8, [count, rows, cols])");
  EMBER_CHECK(labels_.dtype() == DType::u8 && labels_.shape().rank() == 1, "IdxDataset: '", labels_path, "' holds ",
              labels_.dtype(), " ", labels_.shape(), "; a labels file has magic number 0x00000801 (u8, [count])");
  EMBER_CHECK(images_.shape()[0] == labels_.shape()[0], "IdxDataset: '", images_path, "' holds ", images_.shape()[0],
              " images but '", labels_path, "' holds ", labels_.shape()[0], " labels");
  count_ = static_cast<size_t>(images_.shape()[0]);
  rows_ = images_.shape()[1];
  cols_ = images_.shape()[2];
}

std::optional<MnistItem> IdxDataset::get(size_t index) const {
  if (index >= count_) return std::nullopt;
  const size_t pixels = static_cast<size_t>(rows_ * cols_);
  const uint8_t* img = images_.as<uint8_t>().data() + index * pixels;
  MnistItem item;
  item.image.assign(img, img + pixels);
  item.label = labels_.as<uint8_t>()[index];
  item.rows = rows_;
  item.cols = cols_;
  return item;
}

std::shared_ptr<const IdxDataset> Mnist::train(const std::string& dir) { return load_pair(dir, "train", "MNIST", ""); }
std::shared_ptr<const IdxDataset> Mnist::test(const std::string& dir) { return load_pair(dir, "t10k", "MNIST", ""); }

std::shared_ptr<const IdxDataset> FashionMnist::train(const std::string& dir) {
  return load_pair(dir, "train", "Fashion-MNIST", kFashionHint);
}
std::shared_ptr<const IdxDataset> FashionMnist::test(const std::string& dir) {
  return load_pair(dir, "t10k", "Fashion-MNIST", kFashionHint);
}

const std::array<const char*, 10> FashionMnist::kClassNames = {
    "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"};

ImageItem to_image_item(const MnistItem& item) {
  ImageItem out;
  out.image = TensorData::from_vector(item.image, Shape{1, item.rows, item.cols});
  out.label = item.label;
  return out;
}

ImageBatch batch_mnist(std::vector<MnistItem> items, const Device& device) {
  EMBER_CHECK(!items.empty(), "batch_mnist: no items");
  const int64_t n = static_cast<int64_t>(items.size()), rows = items[0].rows, cols = items[0].cols;
  const size_t pixels = static_cast<size_t>(rows * cols);
  std::vector<float> images(static_cast<size_t>(n) * pixels);
  std::vector<int64_t> labels(static_cast<size_t>(n));
  for (size_t i = 0; i < items.size(); ++i) {
    EMBER_CHECK(items[i].rows == rows && items[i].cols == cols && items[i].image.size() == pixels, "batch_mnist: item ",
                i, " is ", items[i].rows, "x", items[i].cols, ", item 0 is ", rows, "x", cols);
    float* dst = images.data() + i * pixels;
    for (size_t p = 0; p < pixels; ++p) dst[p] = float(items[i].image[p]) / 255.0f;
    labels[i] = items[i].label;
  }
  return {DynTensor::from_vector(images, Shape{n, 1, rows, cols}, device),
          DynTensor::from_vector(labels, Shape{n}, device)};
}

}  // namespace ember::data
