#include "wire.hpp"

#include <limits>
#include <type_traits>

#include "ember/core/error.hpp"

namespace ember::remote::wire {

Header decode_header_prefix(std::span<const uint8_t> frame) {
  EMBER_CHECK(frame.size() >= kHeaderBytes, "remote frame: ", frame.size(), " bytes, shorter than the ",
              kHeaderBytes, "-byte header");
  uint32_t magic = 0, length = 0;
  Header h;
  std::memcpy(&magic, frame.data(), 4);
  std::memcpy(&h.version, frame.data() + 4, 2);
  std::memcpy(&length, frame.data() + 8, 4);
  EMBER_CHECK(magic == kMagic, "remote frame: not an ember frame (bad magic)");
  EMBER_CHECK(h.version == kVersion, "remote: protocol version ", h.version, " is not this side's version ", kVersion,
              " (client and server must be the same ember release)");
  EMBER_CHECK(frame[7] == 0, "remote frame: reserved header byte is ", int(frame[7]), ", not 0");
  h.type = Type(frame[6]);
  h.length = length;
  return h;
}
Header decode_header(std::span<const uint8_t> frame) {
  const Header h = decode_header_prefix(frame);
  EMBER_CHECK(h.length == frame.size() - kHeaderBytes, "remote frame: header says ", h.length,
              " payload bytes, the frame has ", frame.size() - kHeaderBytes, " (truncated or padded)");
  return h;
}

std::array<uint8_t, kStreamPrefix> stream_head(Type type, uint64_t id, uint64_t offset, uint64_t total, uint64_t n) {
  std::vector<uint8_t> f;
  begin_frame(f, type);
  Writer w(f);
  w.u64(id);
  w.u64(offset);
  w.u64(total);
  const uint32_t len = uint32_t(f.size() - kHeaderBytes + n);
  std::memcpy(f.data() + 8, &len, 4);
  std::array<uint8_t, kStreamPrefix> out{};
  std::memcpy(out.data(), f.data(), kStreamPrefix);
  return out;
}
StreamHead decode_stream_head(std::span<const uint8_t> prefix, Type type) {
  const Header h = decode_header_prefix(prefix);
  EMBER_CHECK(h.type == type, "remote frame: expected a frame of type ", int(type), ", got ", int(h.type));
  EMBER_CHECK(prefix.size() >= kStreamPrefix && h.length >= kStreamPrefix - kHeaderBytes,
              "remote frame: truncated at the stream frame's id, offset and total");
  Reader r(prefix.subspan(kHeaderBytes, kStreamPrefix - kHeaderBytes));
  StreamHead s;
  s.id = r.u64("id");
  s.offset = r.u64("offset");
  s.total = r.u64("total");
  s.n = h.length - (kStreamPrefix - kHeaderBytes);
  EMBER_CHECK(s.total <= uint64_t(kMaxTensorBytes), "remote frame: a tensor of ", s.total, " bytes (limit ",
              kMaxTensorBytes, ")");
  EMBER_CHECK(s.offset <= s.total && s.n <= s.total - s.offset, "remote frame: chunk [", s.offset, ", ",
              s.offset + s.n, ") outside the tensor's ", s.total, " bytes");
  return s;
}

void begin_frame(std::vector<uint8_t>& out, Type type) {
  out.assign(kHeaderBytes, 0);
  const uint32_t magic = kMagic;
  const uint16_t version = kVersion;
  std::memcpy(out.data(), &magic, 4);
  std::memcpy(out.data() + 4, &version, 2);
  out[6] = uint8_t(type);
}
void finish_frame(std::vector<uint8_t>& out) {
  const uint32_t len = uint32_t(out.size() - kHeaderBytes);
  std::memcpy(out.data() + 8, &len, 4);
}

int64_t tensor_bytes(const TensorMeta& m, const char* what) {
  int64_t n = 1;
  for (int64_t d : m.shape.dims()) {
    EMBER_CHECK(d >= 0, "remote frame: ", what, ": negative dim ", d);
    if (d == 0) return 0;
    EMBER_CHECK(n <= kMaxTensorBytes / d, "remote frame: ", what, ": shape ", m.shape, " overflows the element count");
    n *= d;
  }
  const int64_t es = int64_t(dtype_size(m.dtype));
  EMBER_CHECK(n <= kMaxTensorBytes / es, "remote frame: ", what, ": shape ", m.shape, " of ", dtype_name(m.dtype),
              " exceeds ", kMaxTensorBytes, " bytes");
  return n * es;
}

// ------------------------------------------------------------------ writing
void Writer::str(std::string_view s) {
  u32(uint32_t(s.size()));
  raw(s.data(), s.size());
}
void Writer::bytes(std::span<const std::byte> b) {
  u64(b.size());
  raw(b.data(), b.size());
}
void Writer::meta(const TensorMeta& m) {
  u8(uint8_t(m.dtype));
  u8(uint8_t(m.shape.rank()));
  for (int64_t d : m.shape.dims()) i64(d);
}

namespace {
// One visitor writes and reads every attribute struct, field by field, so the two can't drift.
struct Fields {
  Writer* w = nullptr;
  Reader* r = nullptr;
  void f(double& v) { w ? w->f64(v) : void(v = r->f64("attribute")); }
  void f(bool& v) {
    if (w) return w->u8(v);
    const uint8_t b = r->u8("attribute");
    EMBER_CHECK(b <= 1, "remote frame: a flag is ", int(b), ", not 0 or 1");
    v = b;
  }
  void f(int64_t& v) { w ? w->i64(v) : void(v = r->i64("attribute")); }
  void f(int& v) {
    if (w) return w->i64(v);
    const int64_t x = r->i64("attribute");
    EMBER_CHECK(x >= std::numeric_limits<int>::min() && x <= std::numeric_limits<int>::max(),
                "remote frame: attribute ", x, " out of range");
    v = int(x);
  }
  void f(DType& v) {
    if (w) return w->u8(uint8_t(v));
    const uint8_t b = r->u8("dtype");
    EMBER_CHECK(b < kNumDTypes, "remote frame: dtype code ", int(b), " is not a dtype");
    v = DType(b);
  }
  template <class E>
    requires std::is_enum_v<E>
  void f(E& v, int n) {
    if (w) return w->u8(uint8_t(v));
    const uint8_t b = r->u8("enum");
    EMBER_CHECK(b < n, "remote frame: enum value ", int(b), " out of range");
    v = E(b);
  }
  void f(Shape& s) {
    if (w) {
      w->u32(uint32_t(s.rank()));
      for (int64_t d : s.dims()) w->i64(d);
      return;
    }
    const uint32_t n = r->count("shape", kMaxRank);
    std::vector<int64_t> dims(n);
    for (auto& d : dims) d = r->i64("dim");
    s = Shape(dims);
  }
  template <class T>
  void f(std::vector<T>& v) {
    if (w) {
      w->u32(uint32_t(v.size()));
      for (auto& x : v) f(x);
      return;
    }
    v.resize(r->count("list"));
    for (auto& x : v) f(x);
  }
  void f(SliceRange& s) { f(s.start), f(s.end), f(s.step); }

  void fields(NoAttrs&) {}
  void fields(ScalarAttrs& a) { f(a.a), f(a.b); }
  void fields(CreateAttrs& a) { f(a.shape), f(a.dtype), f(a.a), f(a.b), f(a.c), f(a.shared); }
  void fields(ReduceAttrs& a) { f(a.dims), f(a.keepdim), f(a.p), f(a.correction); }
  void fields(DimAttrs& a) { f(a.dim), f(a.flag), f(a.k); }
  void fields(DimsAttrs& a) { f(a.dims); }
  void fields(ShapeAttrs& a) { f(a.shape); }
  void fields(SliceAttrs& a) { f(a.ranges); }
  void fields(RollAttrs& a) { f(a.shifts), f(a.dims); }
  void fields(PadAttrs& a) { f(a.pads), f(a.mode, 3), f(a.value); }
  void fields(CastAttrs& a) { f(a.dtype); }
  void fields(ConvAttrs& a) {
    f(a.stride), f(a.padding), f(a.dilation), f(a.output_padding), f(a.groups), f(a.act_min), f(a.act_max);
  }
  void fields(PoolAttrs& a) {
    f(a.kernel), f(a.stride), f(a.padding), f(a.dilation), f(a.ceil_mode), f(a.count_include_pad), f(a.indices);
  }
  void fields(InterpolateAttrs& a) { f(a.size), f(a.mode, 3), f(a.align_corners); }
  void fields(NormAttrs& a) { f(a.axes), f(a.eps); }
  void fields(AttentionAttrs& a) { f(a.causal), f(a.scale); }
  void fields(AdamAttrs& a) {
    f(a.lr), f(a.beta1), f(a.beta2), f(a.eps), f(a.weight_decay), f(a.step), f(a.decoupled), f(a.maximize);
  }
  void fields(WeightQuantAttrs& a) { f(a.bits), f(a.block), f(a.quantize_x); }
  void fields(CustomAttrs&) { EMBER_NOT_IMPLEMENTED("custom ops: not supported on remote (their kernels live in the client)"); }
};

// A default-constructed value of alternative i of OpAttrs.
template <size_t I = 0>
OpAttrs attrs_alternative(size_t i) {
  if constexpr (I < std::variant_size_v<OpAttrs>) {
    if (i == I) return OpAttrs(std::in_place_index<I>);
    return attrs_alternative<I + 1>(i);
  } else {
    EMBER_FAIL("remote frame: attribute kind ", i, " unknown");
  }
}
}  // namespace

void Writer::attrs(OpKind kind, const OpAttrs& a) {
  EMBER_CHECK(a.index() == op_info(kind).attrs_index, "remote: ", op_name(kind), ": attributes of the wrong kind");
  OpAttrs copy = a;
  Fields fl{this, nullptr};
  std::visit([&](auto& x) { fl.fields(x); }, copy);
}

// ------------------------------------------------------------------ reading
void Reader::need(size_t n, const char* what) {
  EMBER_CHECK(n <= left(), "remote frame: truncated at ", what, " (", n, " bytes needed, ", left(), " left)");
}
#define EMBER_WIRE_READ(T, NAME)          \
  T Reader::NAME(const char* what) {      \
    need(sizeof(T), what);                \
    T v;                                  \
    std::memcpy(&v, in_.data() + at_, sizeof(T)); \
    at_ += sizeof(T);                     \
    return v;                             \
  }
EMBER_WIRE_READ(uint8_t, u8)
EMBER_WIRE_READ(uint16_t, u16)
EMBER_WIRE_READ(uint32_t, u32)
EMBER_WIRE_READ(uint64_t, u64)
EMBER_WIRE_READ(int64_t, i64)
EMBER_WIRE_READ(double, f64)
#undef EMBER_WIRE_READ

std::string Reader::str(const char* what) {
  const uint32_t n = count(what, kMaxString);
  need(n, what);
  std::string s(reinterpret_cast<const char*>(in_.data() + at_), n);
  at_ += n;
  return s;
}
std::span<const std::byte> Reader::bytes(const char* what) {
  const uint64_t n = u64(what);
  need(n, what);  // n <= left() also bounds it by the frame size
  std::span<const std::byte> b(reinterpret_cast<const std::byte*>(in_.data() + at_), size_t(n));
  at_ += size_t(n);
  return b;
}
uint32_t Reader::count(const char* what, uint32_t max) {
  const uint32_t n = u32(what);
  EMBER_CHECK(n <= max, "remote frame: ", what, ": ", n, " entries, more than the limit ", max);
  return n;
}
TensorMeta Reader::meta(const char* what) {
  const uint8_t dt = u8(what);
  EMBER_CHECK(dt < kNumDTypes, "remote frame: ", what, ": dtype code ", int(dt), " is not a dtype");
  const uint8_t rank = u8(what);
  EMBER_CHECK(rank <= kMaxRank, "remote frame: ", what, ": rank ", int(rank), " above ", kMaxRank);
  std::vector<int64_t> dims(rank);
  for (auto& d : dims) d = i64(what);
  TensorMeta m{Shape(dims), DType(dt)};
  tensor_bytes(m, what);  // checks the dims and the size
  return m;
}
OpAttrs default_attrs(OpKind kind) { return attrs_alternative(op_info(kind).attrs_index); }

OpAttrs Reader::attrs(OpKind kind) {
  OpAttrs a = attrs_alternative(op_info(kind).attrs_index);
  Fields fl{nullptr, this};
  std::visit([&](auto& x) { fl.fields(x); }, a);
  return a;
}

ClientFrame decode_client_frame(std::span<const uint8_t> frame) {
  const Header h = decode_header(frame);
  Reader r(frame.subspan(kHeaderBytes));
  ClientFrame m;
  m.type = h.type;
  switch (h.type) {
    case Type::hello:
      m.token = r.str("token");
      break;
    case Type::batch: {
      const uint32_t n = r.count("commands", kMaxCommands);
      for (uint32_t i = 0; i < n; ++i) {
        const uint8_t c = r.u8("command");
        switch (Cmd(c)) {
          case Cmd::upload: {
            UploadCmd u;
            u.id = r.u64("upload id");
            u.meta = r.meta("upload meta");
            u.offset = r.u64("upload offset");
            u.bytes = r.bytes("upload values");
            m.commands.push_back(u);
            break;
          }
          case Cmd::exec: {
            ExecCmd e;
            const std::string name = r.str("op name");
            try {
              e.kind = op_kind_from_name(name);
            } catch (const Error&) {
              EMBER_FAIL("remote frame: unknown op \"", name.substr(0, 64), "\" (not in this server's op table)");
            }
            e.attrs = r.attrs(e.kind);
            e.inputs.resize(r.count("op inputs", kMaxOpArgs));
            for (auto& id : e.inputs) id = r.u64("input id");
            e.outputs.resize(r.count("op outputs", kMaxOpArgs));
            for (auto& id : e.outputs) id = r.u64("output id");
            m.commands.push_back(std::move(e));
            break;
          }
          case Cmd::free:
            m.commands.push_back(FreeCmd{r.u64("free id")});
            break;
          case Cmd::seed:
            m.commands.push_back(SeedCmd{r.u64("seed")});
            break;
          default:
            EMBER_FAIL("remote frame: unknown command ", int(c));
        }
      }
      break;
    }
    case Type::read:
      m.ids.push_back(r.u64("read id"));
      break;
    case Type::query:
      m.ids.resize(r.count("query ids"));
      for (auto& id : m.ids) id = r.u64("query id");
      break;
    case Type::sync:
    case Type::stats:
      break;
    case Type::supports: {
      const std::string name = r.str("op name");
      try {
        m.op = op_kind_from_name(name);
      } catch (const Error&) {
        EMBER_FAIL("remote frame: unknown op \"", name.substr(0, 64), "\" (not in this server's op table)");
      }
      m.op_dtypes.resize(r.count("op inputs", kMaxOpArgs));
      for (auto& d : m.op_dtypes) {
        const uint8_t present = r.u8("input present");
        EMBER_CHECK(present <= 1, "remote frame: input present flag ", int(present), ", not 0 or 1");
        const uint8_t code = r.u8("input dtype");
        EMBER_CHECK(code < kNumDTypes, "remote frame: input dtype code ", int(code), " is not a dtype");
        if (present) d = DType(code);
      }
      break;
    }
    case Type::chunk: {
      m.chunk = decode_stream_head(frame, Type::chunk);
      const auto rest = frame.subspan(kStreamPrefix);
      m.values = std::as_bytes(rest);
      return m;
    }
    default:
      EMBER_FAIL("remote frame: frame type ", int(h.type), " is not a client frame");
  }
  EMBER_CHECK(r.done(), "remote frame: ", r.left(), " bytes after the last field");
  return m;
}

}  // namespace ember::remote::wire
