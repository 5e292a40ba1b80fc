// Protocol Buffers wire-format decoding (internal): a cursor over one message's bytes.
//
//   ProtoReader r(bytes, 0, "model", 0);
//   while (r.next()) {
//     switch (r.field()) {
//       case 1: ir_version = r.int64("ir_version"); break;
//       case 7: parse_graph(r.message("graph", "model.graph")); break;
//       default: r.skip();
//     }
//   }
//
// Every read checks the wire type of the field and the bytes that remain, and every error is
// an ember::Error "onnx: <where>: field N (name) at byte B: ...", B counting from the start of
// the file. Repeated scalars are accepted packed and unpacked.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ember/core/error.hpp"

namespace ember::onnx::detail {

enum class WireType : uint8_t { varint = 0, fixed64 = 1, length = 2, start_group = 3, end_group = 4, fixed32 = 5 };
std::string_view wire_type_name(WireType type);

class ProtoReader {
 public:
  // `base` is the file offset of bytes[0]; `where` names the message in errors; `depth` is its
  // nesting level (the top-level message is 0).
  ProtoReader(std::span<const std::byte> bytes, uint64_t base, std::string where, int depth, int max_depth);

  // Reads the next field's tag; false at the end of the message.
  bool next();
  uint32_t field() const { return field_; }
  WireType wire_type() const { return wire_; }
  uint64_t field_offset() const { return field_offset_; }  // file offset of the current tag
  const std::string& where() const { return where_; }
  int depth() const { return depth_; }

  // Scalar fields; `name` is the field's name in onnx.proto, for errors.
  int64_t int64(std::string_view name);
  int32_t int32(std::string_view name);  // int32 and enum fields (sign-extended varints)
  uint64_t uint64(std::string_view name);
  float float32(std::string_view name);
  double float64(std::string_view name);
  std::string string(std::string_view name);
  std::span<const std::byte> bytes(std::string_view name);
  // A nested message; `child_where` names it in errors. Refused beyond the depth limit.
  ProtoReader message(std::string_view name, std::string child_where);

  // Repeated scalar fields, packed (one length-delimited run) or not (one value per field).
  void append_int64(std::string_view name, std::vector<int64_t>& out);
  void append_int32(std::string_view name, std::vector<int32_t>& out);
  void append_uint64(std::string_view name, std::vector<uint64_t>& out);
  void append_float32(std::string_view name, std::vector<float>& out);
  void append_float64(std::string_view name, std::vector<double>& out);

  // Skips the current field, whatever its wire type (groups included).
  void skip();

  // Throws an Error naming the message, the current field and its offset.
  template <class... Args>
  [[noreturn]] void fail(std::string_view name, const Args&... args) const {
    EMBER_FAIL("onnx: ", where_, ": field ", field_, " (", name, ") at byte ", field_offset_, ": ", args...);
  }
  // Throws ember::NotImplemented, worded as fail(): for valid content the reader does not read
  // (sparse tensors, maps), as opposed to a malformed file.
  template <class... Args>
  [[noreturn]] void not_implemented(std::string_view name, const Args&... args) const {
    EMBER_NOT_IMPLEMENTED("onnx: ", where_, ": field ", field_, " (", name, ") at byte ", field_offset_, ": ", args...);
  }
  // Throws an Error naming the message and a byte offset (not tied to a field).
  template <class... Args>
  [[noreturn]] void fail_at(uint64_t offset, const Args&... args) const {
    EMBER_FAIL("onnx: ", where_, ": at byte ", offset, ": ", args...);
  }

 private:
  void expect(WireType type, std::string_view name) const;
  uint64_t read_varint(std::string_view name);
  uint64_t read_fixed(size_t n, std::string_view name);
  std::span<const std::byte> read_length_delimited(std::string_view name);
  void skip_value(WireType type, uint32_t field);
  uint64_t offset() const { return base_ + pos_; }
  size_t remaining() const { return bytes_.size() - pos_; }

  std::span<const std::byte> bytes_;
  size_t pos_ = 0;
  uint64_t base_ = 0;
  std::string where_;
  int depth_ = 0;
  int max_depth_ = 0;
  uint32_t field_ = 0;
  WireType wire_ = WireType::varint;
  uint64_t field_offset_ = 0;
};

}  // namespace ember::onnx::detail
