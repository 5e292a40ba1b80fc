// PNG (libpng's simplified API) and JPEG (libjpeg) decoding and encoding, layouts, batching.
#include "ember/data/image.hpp"

#include <csetjmp>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

// clang-format off
#include <jpeglib.h>
#include <jerror.h>
#include <png.h>
// clang-format on

#include "file_io.hpp"

namespace ember::data {
namespace {

// Pixels decoded into interleaved HWC u8.
struct Decoded {
  std::vector<uint8_t> pixels;
  int64_t height = 0, width = 0, channels = 0;
};

uint32_t be32(const uint8_t* p) {
  return (uint32_t(p[0]) << 24) | (uint32_t(p[1]) << 16) | (uint32_t(p[2]) << 8) | p[3];
}

bool is_png(std::span<const uint8_t> b) {
  static const uint8_t sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  return b.size() >= 8 && std::memcmp(b.data(), sig, 8) == 0;
}
bool is_jpeg(std::span<const uint8_t> b) { return b.size() >= 3 && b[0] == 0xff && b[1] == 0xd8 && b[2] == 0xff; }

// Walks the chunk list so that a truncated file is reported with the byte offset where it
// ends (libpng's own message does not say where).
void check_png_chunks(std::span<const uint8_t> b, const std::string& name) {
  size_t pos = 8;
  while (true) {
    EMBER_CHECK(pos + 8 <= b.size(), "'", name, "': truncated PNG: the file ends at byte offset ", b.size(),
                pos == b.size() ? " before the IEND chunk" : " inside a chunk header that starts at byte offset ",
                pos == b.size() ? std::string() : std::to_string(pos));
    const uint64_t len = be32(b.data() + pos);
    const std::string type(reinterpret_cast<const char*>(b.data() + pos + 4), 4);
    EMBER_CHECK(pos + 12 + len <= b.size(), "'", name, "': truncated PNG: chunk '", type, "' at byte offset ", pos,
                " declares ", len, " data bytes (it ends at byte offset ", pos + 12 + len,
                "), the file ends at byte offset ", b.size());
    if (type == "IEND") return;
    pos += 12 + len;
  }
}

Decoded decode_png(std::span<const uint8_t> b, const std::string& name, int channels) {
  check_png_chunks(b, name);
  png_image img;
  std::memset(&img, 0, sizeof img);
  img.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_memory(&img, b.data(), b.size()))
    EMBER_FAIL("'", name, "': corrupt PNG (", b.size(), " bytes): libpng: ", img.message);
  switch (channels) {
    case 0:
      img.format &= PNG_FORMAT_FLAG_COLOR | PNG_FORMAT_FLAG_ALPHA;
      break;
    case 1:
      img.format = PNG_FORMAT_GRAY;
      break;
    case 2:
      img.format = PNG_FORMAT_GA;
      break;
    case 3:
      img.format = PNG_FORMAT_RGB;
      break;
    case 4:
      img.format = PNG_FORMAT_RGBA;
      break;
    default:
      png_image_free(&img);
      EMBER_FAIL("decode_image: channels must be 0, 1, 2, 3 or 4, got ", channels);
  }
  if (uint64_t(img.width) * img.height > (uint64_t(1) << 30)) {
    png_image_free(&img);
    EMBER_FAIL("'", name, "': PNG image of ", img.width, "x", img.height, " pixels is too large");
  }
  Decoded out;
  out.height = img.height;
  out.width = img.width;
  out.channels = PNG_IMAGE_SAMPLE_CHANNELS(img.format);
  out.pixels.resize(PNG_IMAGE_SIZE(img));
  png_color black{0, 0, 0};
  if (!png_image_finish_read(&img, &black, out.pixels.data(), 0, nullptr))
    EMBER_FAIL("'", name, "': corrupt PNG (", b.size(), " bytes, ", out.width, "x", out.height,
               "): libpng: ", img.message);
  return out;
}

// ---- JPEG: libjpeg reports errors by calling error_exit, which must not return; the
// decoder longjmps back into a frame that holds no C++ objects. ----
struct JpegError {
  jpeg_error_mgr mgr;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
  int premature_eof;
};

void jpeg_on_error(j_common_ptr cinfo) {
  auto* err = reinterpret_cast<JpegError*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, err->message);
  std::longjmp(err->jump, 1);
}

void jpeg_on_message(j_common_ptr cinfo, int level) {
  auto* err = reinterpret_cast<JpegError*>(cinfo->err);
  if (level < 0 && cinfo->err->msg_code == JWRN_JPEG_EOF) err->premature_eof = 1;
}

struct JpegResult {
  unsigned char* pixels;  // malloc'ed
  unsigned width, height;
  int channels;
  size_t stop_offset;  // where the decoder was reading when it failed
  char message[JMSG_LENGTH_MAX];
  int premature_eof;
};

// 1 on success. `gray` asks for one channel, else three.
int decode_jpeg_c(const unsigned char* data, size_t size, int gray, JpegResult* r) {
  jpeg_decompress_struct cinfo;
  JpegError err;
  std::memset(&cinfo, 0, sizeof cinfo);
  std::memset(r, 0, sizeof *r);
  err.premature_eof = 0;
  err.message[0] = 0;
  cinfo.err = jpeg_std_error(&err.mgr);
  err.mgr.error_exit = jpeg_on_error;
  err.mgr.emit_message = jpeg_on_message;
  unsigned char* volatile pixels = nullptr;
  if (setjmp(err.jump)) {
    r->stop_offset = cinfo.src ? size - cinfo.src->bytes_in_buffer : 0;
    std::memcpy(r->message, err.message, sizeof r->message);
    r->premature_eof = err.premature_eof;
    jpeg_destroy_decompress(&cinfo);
    std::free(pixels);
    return 0;
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, data, static_cast<unsigned long>(size));
  jpeg_read_header(&cinfo, TRUE);
  cinfo.out_color_space = gray ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_start_decompress(&cinfo);
  const size_t stride = size_t(cinfo.output_width) * size_t(cinfo.output_components);
  pixels = static_cast<unsigned char*>(std::malloc(stride * cinfo.output_height + 1));
  if (pixels == nullptr) {
    std::strcpy(err.message, "out of memory");
    std::longjmp(err.jump, 1);
  }
  while (cinfo.output_scanline < cinfo.output_height) {
    JSAMPROW row = pixels + size_t(cinfo.output_scanline) * stride;
    jpeg_read_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_decompress(&cinfo);
  r->pixels = pixels;
  r->width = cinfo.output_width;
  r->height = cinfo.output_height;
  r->channels = cinfo.output_components;
  r->premature_eof = err.premature_eof;
  r->stop_offset = size - cinfo.src->bytes_in_buffer;
  jpeg_destroy_decompress(&cinfo);
  return 1;
}

// Reads only the header, to learn whether the file is grayscale.
bool jpeg_is_gray(const unsigned char* data, size_t size) {
  jpeg_decompress_struct cinfo;
  JpegError err;
  std::memset(&cinfo, 0, sizeof cinfo);
  cinfo.err = jpeg_std_error(&err.mgr);
  err.mgr.error_exit = jpeg_on_error;
  err.mgr.emit_message = jpeg_on_message;
  err.premature_eof = 0;
  volatile bool gray = false;
  if (setjmp(err.jump)) {
    jpeg_destroy_decompress(&cinfo);
    return false;  // the full decode reports the error
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, data, static_cast<unsigned long>(size));
  jpeg_read_header(&cinfo, TRUE);
  gray = cinfo.jpeg_color_space == JCS_GRAYSCALE;
  jpeg_destroy_decompress(&cinfo);
  return gray;
}

Decoded decode_jpeg(std::span<const uint8_t> b, const std::string& name, int channels) {
  EMBER_CHECK(channels >= 0 && channels <= 4, "decode_image: channels must be 0, 1, 2, 3 or 4, got ", channels);
  const bool gray = channels == 1 || channels == 2 || (channels == 0 && jpeg_is_gray(b.data(), b.size()));
  JpegResult r;
  if (!decode_jpeg_c(b.data(), b.size(), gray ? 1 : 0, &r)) {
    if (r.premature_eof)
      EMBER_FAIL("'", name, "': truncated JPEG: the data ends at byte offset ", b.size(), " (libjpeg: ", r.message,
                 ")");
    EMBER_FAIL("'", name, "': cannot decode JPEG (", b.size(), " bytes; decoding stopped at byte offset ",
               r.stop_offset, "): libjpeg: ", r.message);
  }
  Decoded out;
  out.width = r.width;
  out.height = r.height;
  out.channels = r.channels;
  out.pixels.assign(r.pixels, r.pixels + size_t(r.width) * r.height * size_t(r.channels));
  std::free(r.pixels);
  EMBER_CHECK(!r.premature_eof, "'", name, "': truncated JPEG: the data ends at byte offset ", b.size(), " before the ",
              out.width, "x", out.height, " image is complete");
  if (channels == 2 || channels == 4) {  // add an opaque alpha channel
    const size_t n = size_t(out.width * out.height);
    std::vector<uint8_t> with_alpha(n * size_t(channels));
    const int c = static_cast<int>(out.channels);
    for (size_t i = 0; i < n; ++i) {
      for (int k = 0; k < c; ++k) with_alpha[i * channels + k] = out.pixels[i * c + k];
      with_alpha[i * channels + c] = 255;
    }
    out.pixels = std::move(with_alpha);
    out.channels = channels;
  }
  return out;
}

TensorData hwc_tensor(Decoded d) {
  std::vector<std::byte> bytes(d.pixels.size());
  std::memcpy(bytes.data(), d.pixels.data(), d.pixels.size());
  return TensorData(Shape{d.height, d.width, d.channels}, DType::u8, std::move(bytes));
}

// The image as interleaved u8 HWC bytes for the encoders.
std::vector<uint8_t> encoder_pixels(const TensorData& image, ImageLayout layout, const char* who, int64_t& h,
                                    int64_t& w, int64_t& c) {
  EMBER_CHECK(image.dtype() == DType::u8 && image.shape().rank() == 3, who, ": needs a u8 image of rank 3, got ",
              image.dtype(), " ", image.shape());
  TensorData hwc = to_layout(image, layout, ImageLayout::hwc);
  h = hwc.shape()[0];
  w = hwc.shape()[1];
  c = hwc.shape()[2];
  auto px = hwc.as<uint8_t>();
  return std::vector<uint8_t>(px.begin(), px.end());
}

struct JpegOut {
  unsigned char* buffer;
  unsigned long size;
  char message[JMSG_LENGTH_MAX];
};

int encode_jpeg_c(const unsigned char* pixels, unsigned width, unsigned height, int channels, int quality,
                  JpegOut* out) {
  jpeg_compress_struct cinfo;
  JpegError err;
  std::memset(&cinfo, 0, sizeof cinfo);
  cinfo.err = jpeg_std_error(&err.mgr);
  err.mgr.error_exit = jpeg_on_error;
  err.premature_eof = 0;
  out->buffer = nullptr;
  out->size = 0;
  if (setjmp(err.jump)) {
    std::memcpy(out->message, err.message, sizeof out->message);
    jpeg_destroy_compress(&cinfo);
    std::free(out->buffer);
    out->buffer = nullptr;
    return 0;
  }
  jpeg_create_compress(&cinfo);
  jpeg_mem_dest(&cinfo, &out->buffer, &out->size);
  cinfo.image_width = width;
  cinfo.image_height = height;
  cinfo.input_components = channels;
  cinfo.in_color_space = channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_set_defaults(&cinfo);
  jpeg_set_quality(&cinfo, quality, TRUE);
  jpeg_start_compress(&cinfo, TRUE);
  const size_t stride = size_t(width) * size_t(channels);
  while (cinfo.next_scanline < cinfo.image_height) {
    JSAMPROW row = const_cast<unsigned char*>(pixels) + size_t(cinfo.next_scanline) * stride;
    jpeg_write_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_compress(&cinfo);
  jpeg_destroy_compress(&cinfo);
  return 1;
}

void write_bytes(const std::string& path, const void* data, size_t size, const char* who) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) EMBER_FAIL(who, ": cannot create '", path, "': ", std::strerror(errno));
  const size_t written = std::fwrite(data, 1, size, f);
  const bool ok = written == size && std::fclose(f) == 0;
  EMBER_CHECK(ok, who, ": error writing '", path, "'");
}

}  // namespace

TensorData decode_image(std::span<const uint8_t> bytes, const std::string& name, ImageLayout layout, int channels) {
  Decoded d;
  if (is_png(bytes)) {
    d = decode_png(bytes, name, channels);
  } else if (is_jpeg(bytes)) {
    d = decode_jpeg(bytes, name, channels);
  } else {
    EMBER_FAIL("'", name, "': not a PNG or JPEG image (", bytes.empty() ? "the file is empty" : "unknown signature",
               "; ", bytes.size(), " bytes)");
  }
  return to_layout(hwc_tensor(std::move(d)), ImageLayout::hwc, layout);
}

TensorData read_image(const std::string& path, ImageLayout layout, int channels) {
  const std::string bytes = detail::read_file(path, "read_image");
  return decode_image({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()}, path, layout, channels);
}

TensorData to_layout(const TensorData& image, ImageLayout from, ImageLayout to) {
  EMBER_CHECK(image.shape().rank() == 3, "to_layout: an image has rank 3, got shape ", image.shape());
  if (from == to) return image;
  const Shape& s = image.shape();
  // View the source as [A, B, C] and produce [C, A, B] (hwc -> chw) or [B, C, A] (chw -> hwc).
  const int64_t a = s[0], b = s[1], c = s[2];
  const size_t elem = dtype_size(image.dtype());
  Shape out_shape = from == ImageLayout::hwc ? Shape{c, a, b} : Shape{b, c, a};
  TensorData out(out_shape, image.dtype());
  const std::byte* src = image.bytes().data();
  std::byte* dst = out.bytes().data();
  for (int64_t i = 0; i < a; ++i)
    for (int64_t j = 0; j < b; ++j)
      for (int64_t k = 0; k < c; ++k) {
        const int64_t from_idx = (i * b + j) * c + k;
        const int64_t to_idx = from == ImageLayout::hwc ? (k * a + i) * b + j : (j * c + k) * a + i;
        std::memcpy(dst + to_idx * elem, src + from_idx * elem, elem);
      }
  return out;
}

void write_png(const std::string& path, const TensorData& image, ImageLayout layout) {
  int64_t h, w, c;
  std::vector<uint8_t> px = encoder_pixels(image, layout, "write_png", h, w, c);
  EMBER_CHECK(c >= 1 && c <= 4, "write_png: '", path, "': PNG images have 1 to 4 channels, got ", c);
  png_image img;
  std::memset(&img, 0, sizeof img);
  img.version = PNG_IMAGE_VERSION;
  img.width = static_cast<png_uint_32>(w);
  img.height = static_cast<png_uint_32>(h);
  img.format = c == 1 ? PNG_FORMAT_GRAY : c == 2 ? PNG_FORMAT_GA : c == 3 ? PNG_FORMAT_RGB : PNG_FORMAT_RGBA;
  if (!png_image_write_to_file(&img, path.c_str(), 0, px.data(), 0, nullptr))
    EMBER_FAIL("write_png: '", path, "': libpng: ", img.message);
}

void write_jpeg(const std::string& path, const TensorData& image, ImageLayout layout, int quality) {
  int64_t h, w, c;
  std::vector<uint8_t> px = encoder_pixels(image, layout, "write_jpeg", h, w, c);
  EMBER_CHECK(c == 1 || c == 3, "write_jpeg: '", path, "': JPEG images have 1 or 3 channels, got ", c);
  EMBER_CHECK(quality >= 1 && quality <= 100, "write_jpeg: quality must be in 1..100, got ", quality);
  JpegOut out;
  if (!encode_jpeg_c(px.data(), unsigned(w), unsigned(h), int(c), quality, &out))
    EMBER_FAIL("write_jpeg: '", path, "': libjpeg: ", out.message);
  try {
    write_bytes(path, out.buffer, out.size, "write_jpeg");
  } catch (...) {
    std::free(out.buffer);
    throw;
  }
  std::free(out.buffer);
}

ImageBatch batch_images(std::vector<ImageItem> items, const Device& device) {
  EMBER_CHECK(!items.empty(), "batch_images: no items");
  const int64_t n = static_cast<int64_t>(items.size());
  const int64_t c = items[0].channels(), h = items[0].height(), w = items[0].width();
  const size_t per = static_cast<size_t>(c * h * w);
  std::vector<float> images(static_cast<size_t>(n) * per);
  std::vector<int64_t> labels(static_cast<size_t>(n));
  for (size_t i = 0; i < items.size(); ++i) {
    ImageItem& it = items[i];
    EMBER_CHECK(it.image.shape().rank() == 3, "batch_images: item ", i, " has shape ", it.image.shape(),
                ", not an image of rank 3");
    EMBER_CHECK(it.channels() == c && it.height() == h && it.width() == w, "batch_images: item ", i, " is ",
                it.channels(), "x", it.height(), "x", it.width(), " (CxHxW), item 0 is ", c, "x", h, "x", w);
    TensorData transposed;
    const TensorData* chw = &it.image;
    if (it.layout != ImageLayout::chw) {
      transposed = to_layout(it.image, it.layout, ImageLayout::chw);
      chw = &transposed;
    }
    float* dst = images.data() + i * per;
    if (chw->dtype() == DType::u8) {
      auto px = chw->as<uint8_t>();
      for (size_t p = 0; p < per; ++p) dst[p] = float(px[p]) / 255.0f;
    } else if (chw->dtype() == DType::f32) {
      std::memcpy(dst, chw->as<float>().data(), per * sizeof(float));
    } else {
      std::vector<float> v = chw->to_vector<float>();
      std::memcpy(dst, v.data(), per * sizeof(float));
    }
    labels[i] = it.label;
  }
  return {DynTensor::from_vector(images, Shape{n, c, h, w}, device), DynTensor::from_vector(labels, Shape{n}, device)};
}

}  // namespace ember::data
