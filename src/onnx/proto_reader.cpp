#include "proto_reader.hpp"

#include "ember/core/bit.hpp"

#include <bit>
#include <cstring>
#include <limits>

namespace ember::onnx::detail {

static_assert(std::endian::native == std::endian::little, "the onnx reader assumes a little-endian host");

namespace {

constexpr uint32_t kMaxFieldNumber = (1u << 29) - 1;

// Decodes one varint from bytes[pos...]; false when it runs past the end or exceeds 10 bytes.
bool decode_varint(std::span<const std::byte> bytes, size_t& pos, uint64_t& value) {
  value = 0;
  for (int i = 0; i < 10; ++i) {
    if (pos >= bytes.size()) return false;
    const auto b = std::to_integer<uint8_t>(bytes[pos++]);
    if (i == 9 && b > 1) return false;  // more than 64 bits
    value |= uint64_t(b & 0x7f) << (7 * i);
    if ((b & 0x80) == 0) return true;
  }
  return false;
}

}  // namespace

std::string_view wire_type_name(WireType type) {
  switch (type) {
    case WireType::varint: return "varint";
    case WireType::fixed64: return "64-bit";
    case WireType::length: return "length-delimited";
    case WireType::start_group: return "start-group";
    case WireType::end_group: return "end-group";
    case WireType::fixed32: return "32-bit";
  }
  return "invalid";
}

ProtoReader::ProtoReader(std::span<const std::byte> bytes, uint64_t base, std::string where, int depth, int max_depth)
    : bytes_(bytes), base_(base), where_(std::move(where)), depth_(depth), max_depth_(max_depth) {}

bool ProtoReader::next() {
  if (pos_ >= bytes_.size()) return false;
  field_offset_ = offset();
  uint64_t tag = 0;
  if (!decode_varint(bytes_, pos_, tag))
    fail_at(field_offset_, "truncated or malformed field tag (", remaining(), " bytes left in the message)");
  const uint64_t number = tag >> 3;
  const auto type = static_cast<uint8_t>(tag & 7);
  if (number == 0 || number > kMaxFieldNumber)
    fail_at(field_offset_, "invalid field number ", number, " (corrupt data or not an ONNX file?)");
  if (type > 5) fail_at(field_offset_, "field ", number, " has invalid wire type ", int(type));
  field_ = static_cast<uint32_t>(number);
  wire_ = static_cast<WireType>(type);
  if (wire_ == WireType::end_group) fail_at(field_offset_, "field ", number, ": end-group without a start-group");
  return true;
}

void ProtoReader::expect(WireType type, std::string_view name) const {
  if (wire_ != type)
    fail(name, "wrong wire type: expected ", wire_type_name(type), ", got ", wire_type_name(wire_));
}

uint64_t ProtoReader::read_varint(std::string_view name) {
  const size_t start = pos_;
  uint64_t v = 0;
  if (!decode_varint(bytes_, pos_, v)) {
    pos_ = start;
    fail(name, "truncated or malformed varint (", remaining(), " bytes left in the message)");
  }
  return v;
}

uint64_t ProtoReader::read_fixed(size_t n, std::string_view name) {
  if (remaining() < n) fail(name, "needs ", n, " bytes but ", remaining(), " are left in the message");
  uint64_t v = 0;
  std::memcpy(&v, bytes_.data() + pos_, n);
  pos_ += n;
  return v;
}

std::span<const std::byte> ProtoReader::read_length_delimited(std::string_view name) {
  const uint64_t n = read_varint(name);
  if (n > remaining()) fail(name, "length ", n, " runs past the end of the message (", remaining(), " bytes left)");
  auto out = bytes_.subspan(pos_, static_cast<size_t>(n));
  pos_ += static_cast<size_t>(n);
  return out;
}

int64_t ProtoReader::int64(std::string_view name) {
  expect(WireType::varint, name);
  return static_cast<int64_t>(read_varint(name));
}

int32_t ProtoReader::int32(std::string_view name) {
  expect(WireType::varint, name);
  const auto v = static_cast<int64_t>(read_varint(name));
  if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max())
    fail(name, "value ", v, " does not fit in int32");
  return static_cast<int32_t>(v);
}

uint64_t ProtoReader::uint64(std::string_view name) {
  expect(WireType::varint, name);
  return read_varint(name);
}

float ProtoReader::float32(std::string_view name) {
  expect(WireType::fixed32, name);
  const auto bits = static_cast<uint32_t>(read_fixed(4, name));
  return ember::bit_cast<float>(bits);
}

double ProtoReader::float64(std::string_view name) {
  expect(WireType::fixed64, name);
  return ember::bit_cast<double>(read_fixed(8, name));
}

std::span<const std::byte> ProtoReader::bytes(std::string_view name) {
  expect(WireType::length, name);
  return read_length_delimited(name);
}

std::string ProtoReader::string(std::string_view name) {
  auto b = bytes(name);
  return std::string(reinterpret_cast<const char*>(b.data()), b.size());
}

ProtoReader ProtoReader::message(std::string_view name, std::string child_where) {
  expect(WireType::length, name);
  if (depth_ + 1 > max_depth_) fail(name, "messages nest deeper than ", max_depth_, " levels");
  auto b = read_length_delimited(name);
  const uint64_t body = offset() - b.size();  // file offset of the message's first byte
  return ProtoReader(b, body, std::move(child_where), depth_ + 1, max_depth_);
}

void ProtoReader::append_int64(std::string_view name, std::vector<int64_t>& out) {
  if (wire_ == WireType::varint) {
    out.push_back(static_cast<int64_t>(read_varint(name)));
    return;
  }
  expect(WireType::length, name);
  auto run = read_length_delimited(name);
  out.reserve(out.size() + run.size() / 2);
  size_t p = 0;
  while (p < run.size()) {
    uint64_t v = 0;
    if (!decode_varint(run, p, v)) fail(name, "packed run: truncated or malformed varint at byte ", p);
    out.push_back(static_cast<int64_t>(v));
  }
}

void ProtoReader::append_int32(std::string_view name, std::vector<int32_t>& out) {
  std::vector<int64_t> wide;
  append_int64(name, wide);
  out.reserve(out.size() + wide.size());
  for (int64_t v : wide) {
    if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max())
      fail(name, "value ", v, " does not fit in int32");
    out.push_back(static_cast<int32_t>(v));
  }
}

void ProtoReader::append_uint64(std::string_view name, std::vector<uint64_t>& out) {
  std::vector<int64_t> wide;
  append_int64(name, wide);
  out.reserve(out.size() + wide.size());
  for (int64_t v : wide) out.push_back(static_cast<uint64_t>(v));
}

void ProtoReader::append_float32(std::string_view name, std::vector<float>& out) {
  if (wire_ == WireType::fixed32) {
    out.push_back(ember::bit_cast<float>(static_cast<uint32_t>(read_fixed(4, name))));
    return;
  }
  expect(WireType::length, name);
  auto run = read_length_delimited(name);
  if (run.size() % 4 != 0) fail(name, "packed run of ", run.size(), " bytes is not a multiple of 4");
  const size_t n = run.size() / 4;
  const size_t old = out.size();
  out.resize(old + n);
  if (n) std::memcpy(out.data() + old, run.data(), run.size());
}

void ProtoReader::append_float64(std::string_view name, std::vector<double>& out) {
  if (wire_ == WireType::fixed64) {
    out.push_back(ember::bit_cast<double>(read_fixed(8, name)));
    return;
  }
  expect(WireType::length, name);
  auto run = read_length_delimited(name);
  if (run.size() % 8 != 0) fail(name, "packed run of ", run.size(), " bytes is not a multiple of 8");
  const size_t n = run.size() / 8;
  const size_t old = out.size();
  out.resize(old + n);
  if (n) std::memcpy(out.data() + old, run.data(), run.size());
}

void ProtoReader::skip_value(WireType type, uint32_t field) {
  (void)field;
  switch (type) {
    case WireType::varint: (void)read_varint("unknown"); break;
    case WireType::fixed64: (void)read_fixed(8, "unknown"); break;
    case WireType::fixed32: (void)read_fixed(4, "unknown"); break;
    case WireType::length: (void)read_length_delimited("unknown"); break;
    case WireType::start_group:
    case WireType::end_group: break;  // handled by skip()
  }
}

void ProtoReader::skip() {
  if (wire_ != WireType::start_group) {
    skip_value(wire_, field_);
    return;
  }
  // A (deprecated) group: skip to its matching end-group, following nested groups without
  // recursion; the nesting is bounded like messages.
  std::vector<uint32_t> open{field_};
  const uint32_t outer_field = field_;
  const uint64_t outer_offset = field_offset_;
  while (!open.empty()) {
    const uint64_t at = offset();
    uint64_t tag = 0;
    if (!decode_varint(bytes_, pos_, tag)) {
      field_ = outer_field;
      field_offset_ = outer_offset;
      fail("unknown", "group not terminated (truncated data at byte ", at, ")");
    }
    const uint64_t number = tag >> 3;
    const auto type = static_cast<uint8_t>(tag & 7);
    if (number == 0 || number > kMaxFieldNumber || type > 5)
      fail_at(at, "invalid field tag inside a group (field ", number, ", wire type ", int(type), ")");
    const auto wt = static_cast<WireType>(type);
    if (wt == WireType::start_group) {
      if (depth_ + static_cast<int>(open.size()) >= max_depth_)
        fail_at(at, "groups nest deeper than ", max_depth_, " levels");
      open.push_back(static_cast<uint32_t>(number));
    } else if (wt == WireType::end_group) {
      if (open.back() != number)
        fail_at(at, "end-group of field ", number, " closes a group of field ", open.back());
      open.pop_back();
    } else {
      field_ = static_cast<uint32_t>(number);
      field_offset_ = at;
      skip_value(wt, field_);
    }
  }
  field_ = outer_field;
  field_offset_ = outer_offset;
}

}  // namespace ember::onnx::detail
