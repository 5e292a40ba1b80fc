// The remote decorator's wire form (docs/remote.md): frames, and the encoding of tensors'
// metadata, ops and their attributes. An op travels as its name in ops.def plus the fields of
// the attribute struct ops.def gives it, so the wire form follows the op table: an op added to
// the table is sent by name with no change here, and only a new attribute struct needs one.
//
// A frame is one WebSocket binary message:
//   u32 magic "EMBR" | u16 version | u8 type | u8 reserved (0) | u32 payload length | payload
// All integers little-endian. The decoder checks every field before it is used: lengths
// against what is left of the frame, counts against fixed bounds, dtypes and enums against
// their ranges, dims against overflow of the element count and of the byte size.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "ember/core/op.hpp"

namespace ember::remote::wire {

inline constexpr uint32_t kMagic = 0x524d4245;  // "EBMR" read as bytes: 'E' 'B' 'M' 'R'
inline constexpr uint16_t kVersion = 3;  // 2: chunk frames, data frames streamed into place; 3: PoolAttrs::indices
inline constexpr size_t kHeaderBytes = 12;
inline constexpr int kMaxRank = 16;
inline constexpr uint32_t kMaxList = 4096;     // entries of any list inside a frame (dims, ids, ...)
inline constexpr uint32_t kMaxString = 4096;   // bytes of a string (a token, an op name, a message)
inline constexpr int64_t kMaxTensorBytes = int64_t(1) << 40;  // one tensor: 1 TiB

enum class Type : uint8_t {
  // client -> server
  hello = 1,   // str token; the first frame of a session, nothing else is decoded before it
  batch = 2,   // u32 count, then commands (Cmd); no reply unless one fails (reported on the next wait)
  read = 3,    // u64 id: the tensor's values, as data frames
  sync = 4,    // waits for the work sent so far: done, or the session's pending error
  query = 5,   // u32 n, u64 ids: the metas of tensors (a data-dependent op's outputs)
  stats = 6,   // the server backend's memory statistics for this session
  chunk = 7,   // a stream frame (below): a chunk of a tensor whose upload a batch's upload command began
  supports = 8,  // str op name, u32 n, per input u8 present (0/1) and u8 dtype: answered by supported
  // server -> client
  welcome = 64,  // str backend name, u64 max frame bytes
  error = 65,    // str message; the session's first error since the last wait, or why it ends
  data = 66,     // a stream frame (below): a chunk of a tensor being read
  done = 67,     // the answer to sync
  metas = 68,    // u32 n, metas
  stats_reply = 69,  // i64 in_use, reserved, peak (this session's bytes), i64 server in_use
  supported = 70,    // u8: whether the served backend supports the op for those input dtypes
};

enum class Cmd : uint8_t {
  upload = 1,  // u64 id, meta, u64 offset, u64 n, n bytes: a chunk of a new tensor's values
  exec = 2,    // str op name, attrs, u32 n_in, u64 ids (0: an absent optional input), u32 n_out, u64 ids
  free = 3,    // u64 id
  seed = 4,    // u64 seed
};

// Stream frames (chunk, data) carry bulk values with a fixed prefix:
//   header | u64 id | u64 offset | u64 total bytes | values (the rest of the frame)
// so that the receiver reads the prefix, checks it, and reads the values straight into place
// (the server's staging block, the client's TensorData) with no copy through a frame buffer.
inline constexpr size_t kStreamPrefix = kHeaderBytes + 24;
struct StreamHead {
  uint64_t id = 0, offset = 0, total = 0;
  uint64_t n = 0;  // the values' bytes: the frame's length past the prefix
};

// A frame's header, decoded.
struct Header {
  uint16_t version = 0;
  Type type{};
  uint32_t length = 0;
};
// Decodes and checks the 12 header bytes: an Error for a wrong magic, another version
// (naming both) or a length that disagrees with the message's size.
Header decode_header(std::span<const uint8_t> frame);
// The same checks on the first bytes of a frame still being read (at least the header); the
// length is what the header claims.
Header decode_header_prefix(std::span<const uint8_t> first);

// A stream frame's prefix, for `type` (chunk or data), n values bytes to follow.
std::array<uint8_t, kStreamPrefix> stream_head(Type type, uint64_t id, uint64_t offset, uint64_t total, uint64_t n);
// Decodes and checks the first kStreamPrefix bytes of a stream frame of `type`: the header,
// and offset + n within total <= kMaxTensorBytes. An Error names what is wrong.
StreamHead decode_stream_head(std::span<const uint8_t> prefix, Type type);

// Appends little-endian values to a byte buffer.
class Writer {
 public:
  explicit Writer(std::vector<uint8_t>& out) : out_(out) {}
  void u8(uint8_t v) { out_.push_back(v); }
  void u16(uint16_t v) { raw(&v, 2); }
  void u32(uint32_t v) { raw(&v, 4); }
  void u64(uint64_t v) { raw(&v, 8); }
  void i64(int64_t v) { raw(&v, 8); }
  void f64(double v) { raw(&v, 8); }
  void str(std::string_view s);
  void bytes(std::span<const std::byte> b);  // u64 length + bytes
  void meta(const TensorMeta& m);
  void attrs(OpKind kind, const OpAttrs& a);  // the fields of the alternative ops.def names for kind
  void raw(const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    out_.insert(out_.end(), b, b + n);
  }

 private:
  std::vector<uint8_t>& out_;
};

// Reads what Writer wrote; every read checks the bytes left and throws an Error naming the
// field ("remote frame: truncated at <field>") instead of reading past the end.
class Reader {
 public:
  explicit Reader(std::span<const uint8_t> in) : in_(in) {}
  uint8_t u8(const char* what);
  uint16_t u16(const char* what);
  uint32_t u32(const char* what);
  uint64_t u64(const char* what);
  int64_t i64(const char* what);
  double f64(const char* what);
  std::string str(const char* what);
  std::span<const std::byte> bytes(const char* what);
  uint32_t count(const char* what, uint32_t max = kMaxList);  // a list's length, at most max
  TensorMeta meta(const char* what);  // dtype and dims checked; numel * dtype size <= kMaxTensorBytes
  OpAttrs attrs(OpKind kind);
  size_t left() const { return in_.size() - at_; }
  bool done() const { return at_ == in_.size(); }

 private:
  void need(size_t n, const char* what);
  std::span<const uint8_t> in_;
  size_t at_ = 0;
};

// A reader over a whole frame's payload (the bytes after the header).
inline Reader payload(const std::vector<uint8_t>& frame) {
  return Reader(std::span<const uint8_t>(frame).subspan(kHeaderBytes));
}

// A whole frame: the header for `type`, then the payload `fill` writes.
template <class Fill>
std::vector<uint8_t> frame(Type type, Fill&& fill) {
  std::vector<uint8_t> out(kHeaderBytes, 0);
  Writer w(out);
  fill(w);
  const uint32_t magic = kMagic, len = uint32_t(out.size() - kHeaderBytes);
  const uint16_t version = kVersion;
  std::memcpy(out.data(), &magic, 4);
  std::memcpy(out.data() + 4, &version, 2);
  out[6] = uint8_t(type);
  out[7] = 0;
  std::memcpy(out.data() + 8, &len, 4);
  return out;
}
// Starts a frame in `out` (cleared) and returns the header's size; finish_frame sets its length.
void begin_frame(std::vector<uint8_t>& out, Type type);
void finish_frame(std::vector<uint8_t>& out);

// A client frame, decoded and checked (the server runs only what this returns). The spans of
// upload chunks point into the frame, which must outlive the result.
struct UploadCmd {
  uint64_t id = 0;
  TensorMeta meta;
  uint64_t offset = 0;
  std::span<const std::byte> bytes;
};
struct ExecCmd {
  OpKind kind{};
  OpAttrs attrs;
  std::vector<uint64_t> inputs, outputs;  // input id 0: an absent optional input
};
struct FreeCmd {
  uint64_t id = 0;
};
struct SeedCmd {
  uint64_t seed = 0;
};
using Command = std::variant<UploadCmd, ExecCmd, FreeCmd, SeedCmd>;
struct ClientFrame {
  Type type{};
  StreamHead chunk;               // chunk: its prefix, and its values (inside the frame)
  std::span<const std::byte> values;
  std::string token;              // hello
  std::vector<Command> commands;  // batch
  std::vector<uint64_t> ids;      // read (one), query
  OpKind op{};                    // supports: the op, and its inputs' dtypes (nullopt: absent)
  std::vector<std::optional<DType>> op_dtypes;
};
inline constexpr uint32_t kMaxCommands = 1u << 20;  // commands in one batch
inline constexpr uint32_t kMaxOpArgs = 256;        // inputs or outputs of one op
// Throws an Error naming what is wrong: the header (magic, version, length), a truncated or
// trailing field, an unknown frame type, command or op name, a count past its limit, a bad
// dtype, enum or flag, a shape whose size overflows. Nothing is executed or allocated by size.
ClientFrame decode_client_frame(std::span<const uint8_t> frame);

// The default attributes of `kind` (the alternative ops.def names for it).
OpAttrs default_attrs(OpKind kind);

// The bytes a tensor of `m` holds, or an Error when its element count or size overflows.
int64_t tensor_bytes(const TensorMeta& m, const char* what);

}  // namespace ember::remote::wire
