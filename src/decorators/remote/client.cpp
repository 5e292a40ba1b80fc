// The remote decorator's client: a Backend whose primitives are ids of tensors held by a
// server session. Ops, uploads and frees are appended to a batch frame that is sent when it
// grows past Options::batch_bytes or when a call has to wait (read, sync, memory_stats, a
// data-dependent op's output shapes). Every wait has the session's timeout.
#include <boost/asio/connect.hpp>
#include <boost/asio/write.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/ssl.hpp>
#include <boost/beast/websocket.hpp>
#include <boost/beast/websocket/ssl.hpp>
#include <sys/random.h>

#include <bit>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>
#include <unordered_map>

#include "ember/core/error.hpp"
#include "ember/decorators/remote.hpp"
#include "wire.hpp"

namespace ember::remote {
namespace {

namespace beast = boost::beast;
namespace websocket = beast::websocket;
namespace net = boost::asio;
using tcp = net::ip::tcp;
using wire::Type;

constexpr size_t kInline = size_t(1) << 20;   // larger uploads go as chunk frames, in place
constexpr size_t kChunk = size_t(4) << 20;    // their chunks
constexpr std::chrono::microseconds kSpin{60};  // a wait polls this long before it sleeps

struct Url {
  std::string host, port, path;
  bool tls = false;
};
Url parse_url(const std::string& url) {
  const std::string ws = "ws://", wss = "wss://";
  Url u;
  u.tls = url.rfind(wss, 0) == 0;
  EMBER_CHECK(u.tls || url.rfind(ws, 0) == 0, "remote::connect(\"", url, "\"): the URL must start with ws:// or wss://");
  std::string rest = url.substr(u.tls ? wss.size() : ws.size());
  const size_t slash = rest.find('/');
  u.path = slash == std::string::npos ? "/" : rest.substr(slash);
  rest = rest.substr(0, slash);
  const size_t colon = rest.rfind(':');
  EMBER_CHECK(colon != std::string::npos && colon + 1 < rest.size(), "remote::connect(\"", url,
              "\"): no port (ws://host:port)");
  u.host = rest.substr(0, colon);
  u.port = rest.substr(colon + 1);
  EMBER_CHECK(!u.host.empty(), "remote::connect(\"", url, "\"): no host");
  return u;
}

// One session's connection. Calls are serialised by mu; frees from primitives' destructors go
// through their own lock (a destructor may run while mu is held) and join the next batch.
class Connection {
 public:
  Connection(const std::string& url, const Options& o) : url_(url), opt_(o) {
    const Url u = parse_url(url);
    if (u.tls) {
      // the server's certificate must chain to a CA this machine trusts (OpenSSL's default
      // paths, or the file SSL_CERT_FILE names) and name the host
      tls_ctx_.set_default_verify_paths();
      tls_ctx_.set_verify_mode(net::ssl::verify_peer);
      tls_.emplace(ioc_, tls_ctx_);
      tls_->next_layer().set_verify_callback(net::ssl::host_name_verification(u.host));
      EMBER_CHECK(SSL_set_tlsext_host_name(tls_->next_layer().native_handle(), u.host.c_str()), "remote::connect(\"",
                  url, "\"): TLS: can't set the server name");
    } else {
      plain_.emplace(ioc_);
    }
    tcp::resolver resolver(ioc_);
    tcp::resolver::results_type hosts;
    wait([&](auto done) { resolver.async_resolve(u.host, u.port, [done, &hosts](beast::error_code e, tcp::resolver::results_type r) {
                            hosts = r;
                            done(e, 0);
                          }); },
         "resolving the host");
    wait([&](auto done) { net::async_connect(socket(), hosts, [done](beast::error_code e, const tcp::endpoint&) { done(e, 0); }); },
         "connecting");
    socket().set_option(tcp::no_delay(true));
    if (tls_)
      wait([&](auto done) { tls_->next_layer().async_handshake(net::ssl::stream_base::client, [done](beast::error_code e) { done(e, 0); }); },
           "the TLS handshake");
    with_ws([&](auto& ws) {
      wait([&](auto done) { ws.async_handshake(u.host + ":" + u.port, u.path, [done](beast::error_code e) { done(e, 0); }); },
           "the WebSocket handshake");
      ws.binary(true);
      ws.auto_fragment(false);  // a frame is one WebSocket message of one piece
      ws.write_buffer_bytes(size_t(256) << 10);  // the masking buffer: fewer, larger socket writes
      ws.read_message_max(size_t(256) << 20);
    });
    send(wire::frame(Type::hello, [&](wire::Writer& w) { w.str(opt_.token); }));
    const std::vector<uint8_t>& reply = receive();
    const wire::Header h = wire::decode_header(reply);
    wire::Reader r = wire::payload(reply);
    if (h.type == Type::error) EMBER_FAIL("remote::connect(\"", url_, "\"): refused by the server: ", r.str("message"));
    EMBER_CHECK(h.type == Type::welcome, "remote::connect(\"", url_, "\"): unexpected reply to hello");
    server_name_ = r.str("backend");
    max_frame_ = r.u64("max frame");
    start_batch();
  }
  ~Connection() {
    beast::error_code ec;
    socket().close(ec);
  }

  const std::string& server_name() const { return server_name_; }
  const std::string& url() const { return url_; }
  uint64_t new_id() { return next_id_++; }

  // Batch building (call with mu held)
  std::mutex mu;
  wire::Writer cmd(wire::Cmd c) {
    drain_frees();
    ++count_;
    wire::Writer w(batch_);
    w.u8(uint8_t(c));
    return w;
  }
  void maybe_flush() {
    if (batch_.size() >= opt_.batch_bytes || batch_.size() + (64 << 10) > max_frame_ || count_ >= 60000) flush();
  }
  void flush() {
    drain_frees();
    if (count_ == 0) return;
    std::memcpy(batch_.data() + wire::kHeaderBytes, &count_, 4);
    wire::finish_frame(batch_);
    send(batch_);
    start_batch();
  }
  // Sends `f` after the queued batch and returns the reply: data/metas/done/stats frames, or
  // an Error carrying the server's message.
  // The reply lives in a buffer of the connection, valid until the next receive.
  const std::vector<uint8_t>& ask(const std::vector<uint8_t>& f) {
    flush();
    send(f);
    return receive_reply();
  }
  const std::vector<uint8_t>& receive_reply() {
    const std::vector<uint8_t>& reply = receive();
    const wire::Header h = wire::decode_header(reply);
    if (h.type == Type::error) {
      wire::Reader r = wire::payload(reply);
      EMBER_FAIL("remote (", url_, "): ", r.str("message"));
    }
    return reply;
  }

  // Sends `f` after the queued batch, without waiting for a reply.
  void post(const std::vector<uint8_t>& f) {
    flush();
    send(f);
  }
  // Sends a chunk frame: its prefix, then `values` from the caller's memory (no copy but the
  // WebSocket's masking).
  void send_chunk(uint64_t id, uint64_t offset, uint64_t total, std::span<const std::byte> values) {
    const auto head = wire::stream_head(Type::chunk, id, offset, total, values.size());
    if (plain_) {
      send_masked(head, values);
      return;
    }
    const std::array<net::const_buffer, 2> parts{net::buffer(head), net::buffer(values.data(), values.size())};
    with_ws([&](auto& ws) {
      wait([&](auto done) { ws.async_write(parts, [done](beast::error_code e, size_t n) { done(e, n); }); }, "sending");
    });
  }
  size_t chunk_bytes() const { return std::min(kChunk, size_t(max_frame_) - 64); }
  // Reads the next reply's first bytes: a data frame's prefix (returned), or an error frame,
  // read whole and raised.
  wire::StreamHead receive_data_head() {
    std::array<uint8_t, wire::kStreamPrefix> first{};
    size_t got = 0;
    with_ws([&](auto& ws) {
      do {
        got += wait([&](auto done) {
          ws.async_read_some(net::buffer(first.data() + got, first.size() - got),
                             [done](beast::error_code e, size_t n) { done(e, n); });
        }, "waiting for a reply");
      } while (got < first.size() && !ws.is_message_done());
    });
    if (got >= wire::kHeaderBytes && first[6] == uint8_t(Type::error)) {
      in_.assign(first.begin(), first.begin() + got);
      with_ws([&](auto& ws) {
        if (ws.is_message_done()) return;
        auto buf = net::dynamic_buffer(in_);
        wait([&](auto done) { ws.async_read(buf, [done](beast::error_code e, size_t n) { done(e, n); }); },
             "waiting for a reply");
      });
      const wire::Header h = wire::decode_header(in_);
      EMBER_CHECK(h.type == Type::error, "remote: unexpected reply");
      wire::Reader r = wire::payload(in_);
      EMBER_FAIL("remote (", url_, "): ", r.str("message"));
    }
    EMBER_CHECK(got == first.size(), "remote: read: a reply shorter than a data frame");
    return wire::decode_stream_head(first, Type::data);
  }
  // The values of the data frame whose prefix was just read, into p (n bytes, the whole rest).
  void receive_values(std::byte* p, size_t n) {
    size_t got = 0;
    with_ws([&](auto& ws) {
      while (got < n) {
        EMBER_CHECK(!ws.is_message_done(), "remote: read: a data frame shorter than its header says");
        got += wait([&](auto done) {
          ws.async_read_some(net::buffer(p + got, n - got), [done](beast::error_code e, size_t k) { done(e, k); });
        }, "waiting for a reply");
      }
      EMBER_CHECK(ws.is_message_done(), "remote: read: a data frame longer than its header says");
    });
  }

  // Closes the session for good after a call that left it mid-reply; later calls raise `why`.
  void abandon(const std::string& why) {
    beast::error_code ignored;
    socket().close(ignored);
    broken_ = why + "; the session is closed, connect again";
  }

  void free_later(uint64_t id) {
    std::lock_guard<std::mutex> g(free_mu_);
    frees_.push_back(id);
  }

 private:
  void start_batch() {
    wire::begin_frame(batch_, Type::batch);
    wire::Writer(batch_).u32(0);  // the count, set by flush
    count_ = 0;
  }
  void drain_frees() {
    std::vector<uint64_t> ids;
    {
      std::lock_guard<std::mutex> g(free_mu_);
      ids.swap(frees_);
    }
    for (uint64_t id : ids) {
      wire::Writer w(batch_);
      w.u8(uint8_t(wire::Cmd::free));
      w.u64(id);
      ++count_;
    }
  }
  // Runs one asynchronous operation to completion within the timeout; a timeout or a failure
  // breaks the connection for good (every later call raises the same Error).
  template <class Start>
  size_t wait(Start&& start, const char* what) {
    EMBER_CHECK(broken_.empty(), "remote (", url_, "): ", broken_);
    beast::error_code ec;
    bool finished = false;
    size_t transferred = 0;
    start([&](beast::error_code e, size_t n) {
      ec = e;
      transferred = n;
      finished = true;
    });
    ioc_.restart();
    // Polls for a short while before sleeping: a reply on loopback or a LAN comes within tens of
    // microseconds, and waking a thread that slept costs about as much again on a virtual
    // machine (a 1-element read took 85 us sleeping, 9 us polling, on 2 vCPUs).
    const auto spin_until = std::chrono::steady_clock::now() + kSpin;
    // Each empty poll yields: when the server's thread shares this core (a loaded machine, or a
    // server in this process), a spin that kept the core made the reply wait for the spin's end
    // (a 1-element read took 135 us instead of 8 on 2 busy vCPUs).
    while (!finished && std::chrono::steady_clock::now() < spin_until) {
      if (ioc_.poll() == 0) std::this_thread::yield();
      if (ioc_.stopped()) ioc_.restart();
    }
    if (!finished) ioc_.run_for(opt_.timeout);
    if (!finished) {
      beast::error_code ignored;
      socket().close(ignored);
      ioc_.restart();
      ioc_.run();  // lets the cancelled operation finish
      std::ostringstream os;
      os << "no answer from the server within " << opt_.timeout.count() << " ms (" << what
         << "); the session is closed, connect again";
      broken_ = os.str();
      EMBER_FAIL("remote (", url_, "): ", broken_);
    }
    if (ec) {
      broken_ = std::string("connection lost (") + what + ": " + ec.message() + "); connect again";
      EMBER_FAIL("remote (", url_, "): ", broken_);
    }
    return transferred;
  }
  // One binary WebSocket message of `head` then `values`, framed and masked here and written
  // straight to the TCP socket (ws:// only, between Beast's own writes, none of which is then in
  // flight). RFC 6455 has a client mask every frame with a fresh unpredictable key (section
  // 5.3), so the values are still copied once, but in one pass: each piece is masked while it
  // is copied into a buffer that stays in the cache, where Beast copies and then masks in a
  // second pass.
  void send_masked(std::span<const uint8_t> head, std::span<const std::byte> values) {
    static_assert(std::endian::native == std::endian::little, "the masking below assumes a little-endian host");
    static_assert(wire::kStreamPrefix % 4 == 0, "values must start at the key's first byte");
    constexpr size_t kPiece = size_t(256) << 10;  // a multiple of 4: every piece starts at key byte 0
    const uint64_t len = head.size() + values.size();
    std::array<uint8_t, 4> key{};
    EMBER_CHECK(getrandom(key.data(), key.size(), 0) == ssize_t(key.size()), "remote: no random bytes for a mask key");
    if (piece_.size() < kPiece + 14) piece_.resize(kPiece + 14);
    uint8_t* out = piece_.data();
    size_t at = 0;
    out[at++] = 0x82;  // FIN, binary
    if (len <= 125) {  // the shortest length form (section 5.2)
      out[at++] = uint8_t(0x80 | len);
    } else if (len <= 0xffff) {
      out[at++] = 0x80 | 126;
      for (int i = 1; i >= 0; --i) out[at++] = uint8_t(len >> (8 * i));
    } else {
      out[at++] = 0x80 | 127;
      for (int i = 7; i >= 0; --i) out[at++] = uint8_t(len >> (8 * i));
    }
    std::memcpy(out + at, key.data(), 4);
    at += 4;
    uint32_t k32;
    std::memcpy(&k32, key.data(), 4);
    mask_copy(out + at, head.data(), head.size(), k32);
    at += head.size();
    const auto* src = reinterpret_cast<const uint8_t*>(values.data());
    size_t done = 0;
    do {
      const size_t n = std::min(values.size() - done, kPiece - at / 4 * 4);
      mask_copy(out + at, src + done, n, k32);
      done += n;
      const size_t bytes = at + n;
      wait([&](auto fin) {
        net::async_write(socket(), net::buffer(out, bytes), [fin](beast::error_code e, size_t m) { fin(e, m); });
      }, "sending");
      at = 0;
    } while (done < values.size());
  }
  // dst = src XOR the key repeated, for a run that starts at key byte 0.
  static void mask_copy(uint8_t* dst, const uint8_t* src, size_t n, uint32_t key) {
    const uint64_t k = uint64_t(key) | uint64_t(key) << 32;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
      uint64_t w;
      std::memcpy(&w, src + i, 8);
      w ^= k;
      std::memcpy(dst + i, &w, 8);
    }
    for (; i < n; ++i) dst[i] = src[i] ^ uint8_t(key >> (8 * (i % 4)));
  }

  // The WebSocket, plain (ws://) or over TLS (wss://), to `f`.
  template <class F>
  void with_ws(F&& f) {
    if (tls_) f(*tls_);
    else f(*plain_);
  }
  tcp::socket& socket() { return tls_ ? beast::get_lowest_layer(*tls_) : beast::get_lowest_layer(*plain_); }
  void send(const std::vector<uint8_t>& f) {
    with_ws([&](auto& ws) {
      wait([&](auto done) { ws.async_write(net::buffer(f), [done](beast::error_code e, size_t n) { done(e, n); }); },
           "sending");
    });
  }
  const std::vector<uint8_t>& receive() {
    in_.clear();  // keeps its capacity: no new pages per message
    auto buf = net::dynamic_buffer(in_);
    with_ws([&](auto& ws) {
      wait([&](auto done) { ws.async_read(buf, [done](beast::error_code e, size_t n) { done(e, n); }); },
           "waiting for a reply");
    });
    return in_;
  }

  std::string url_;
  Options opt_;
  net::io_context ioc_;
  net::ssl::context tls_ctx_{net::ssl::context::tls_client};
  std::optional<websocket::stream<tcp::socket>> plain_;
  std::optional<websocket::stream<beast::ssl_stream<tcp::socket>>> tls_;
  std::string server_name_, broken_;
  uint64_t max_frame_ = 0;
  std::vector<uint8_t> batch_, in_, piece_;  // piece_: send_masked's buffer
  uint32_t count_ = 0;
  uint64_t next_id_ = 1;
  std::mutex free_mu_;
  std::vector<uint64_t> frees_;
};

// A tensor of a session: its id there. Freed on the server (in the next batch) when dropped.
class RemotePrimitive final : public Primitive {
 public:
  RemotePrimitive(TensorMeta meta, uint64_t id, std::shared_ptr<Connection> c)
      : Primitive(std::move(meta)), id_(id), conn_(std::move(c)) {}
  ~RemotePrimitive() override { conn_->free_later(id_); }
  uint64_t id() const { return id_; }
  const Connection* connection() const { return conn_.get(); }

 private:
  uint64_t id_;
  std::shared_ptr<Connection> conn_;
};

class RemoteBackend final : public Backend {
 public:
  RemoteBackend(std::shared_ptr<Connection> c) : c_(std::move(c)) {}

  std::string name() const override { return "remote(" + c_->url() + ", " + c_->server_name() + ")"; }

  std::vector<PrimitivePtr> execute(Op op) override {
    std::lock_guard<std::mutex> g(c_->mu);
    std::vector<uint64_t> in(op.inputs.size(), 0), out(op.outputs.size());
    for (size_t i = 0; i < op.inputs.size(); ++i)
      if (op.inputs[i]) in[i] = id_of(op.inputs[i], op.name());
    for (auto& id : out) id = c_->new_id();
    wire::Writer w = c_->cmd(wire::Cmd::exec);
    w.str(op.name());
    w.attrs(op.kind, op.attrs);
    w.u32(uint32_t(in.size()));
    for (uint64_t id : in) w.u64(id);
    w.u32(uint32_t(out.size()));
    for (uint64_t id : out) w.u64(id);
    bool unknown = false;  // a data-dependent op: the server tells the output shapes
    for (const auto& m : op.outputs)
      for (int64_t d : m.shape.dims()) unknown |= d < 0;
    if (unknown) {
      const std::vector<uint8_t>& reply = c_->ask(wire::frame(Type::query, [&](wire::Writer& q) {
        q.u32(uint32_t(out.size()));
        for (uint64_t id : out) q.u64(id);
      }));
      wire::Reader r = wire::payload(reply);
      const uint32_t n = r.count("metas");
      EMBER_CHECK(n == out.size(), "remote: ", op.name(), ": the server sent ", n, " output shapes for ", out.size());
      for (auto& m : op.outputs) m = r.meta("output");
    } else {
      c_->maybe_flush();
    }
    std::vector<PrimitivePtr> res;
    for (size_t i = 0; i < out.size(); ++i) res.push_back(std::make_shared<RemotePrimitive>(op.outputs[i], out[i], c_));
    return res;
  }

  TensorData read(const PrimitivePtr& p) override {
    std::lock_guard<std::mutex> g(c_->mu);
    const uint64_t id = id_of(p, "read");
    // The request goes first: the server starts sending while the values' memory is made here
    // (zero-filled and faulted in: about 0.4 ms a MiB, a third of a large read's time).
    c_->post(wire::frame(Type::read, [&](wire::Writer& w) { w.u64(id); }));
    TensorData data;
    try {
      data = TensorData(p->shape(), p->dtype());
    } catch (...) {
      c_->abandon("a read's memory could not be allocated");  // its reply would be left unread
      throw;
    }
    auto bytes = data.bytes();
    uint64_t off = 0;
    do {
      const wire::StreamHead h = c_->receive_data_head();
      EMBER_CHECK(h.id == id, "remote: read: the reply is for another tensor");
      EMBER_CHECK(h.total == bytes.size(), "remote: read: the server holds ", h.total, " bytes, the client expects ",
                  bytes.size(), " (", p->shape(), " ", p->dtype(), ")");
      EMBER_CHECK(h.offset == off, "remote: read: chunk at offset ", h.offset, ", expected ", off);
      c_->receive_values(bytes.data() + off, size_t(h.n));
      off += h.n;
      EMBER_CHECK(h.n > 0 || off == bytes.size(), "remote: read: an empty chunk");
    } while (off < bytes.size());
    return data;
  }

  PrimitivePtr write(const TensorData& data) override {
    return write_bytes(TensorMeta{data.shape(), data.dtype()}, data.bytes());
  }
  PrimitivePtr write_bytes(const TensorMeta& meta, std::span<const std::byte> bytes) override {
    std::lock_guard<std::mutex> g(c_->mu);
    const uint64_t id = c_->new_id();
    wire::Writer w = c_->cmd(wire::Cmd::upload);
    w.u64(id);
    w.meta(meta);
    w.u64(0);
    if (bytes.size() <= kInline) {  // in the batch
      w.bytes(bytes);
      c_->maybe_flush();
    } else {  // begun in the batch, then chunk frames from the caller's memory
      w.bytes({});
      c_->flush();
      for (size_t off = 0, step = c_->chunk_bytes(); off < bytes.size(); off += step)
        c_->send_chunk(id, off, bytes.size(), bytes.subspan(off, std::min(step, bytes.size() - off)));
    }
    return std::make_shared<RemotePrimitive>(meta, id, c_);
  }

  // Asks the server once per op and input dtypes (custom ops never: their kernels live here).
  bool supports(const Op& op) const override {
    if (op.kind == OpKind::custom) return false;
    std::string key(op.name());
    for (const auto& p : op.inputs) key += p ? char('A' + int(p->dtype())) : '-';
    {
      std::lock_guard<std::mutex> g(supported_mu_);
      auto it = supported_.find(key);
      if (it != supported_.end()) return it->second;
    }
    bool yes;
    {
      std::lock_guard<std::mutex> g(c_->mu);
      const std::vector<uint8_t>& reply = c_->ask(wire::frame(Type::supports, [&](wire::Writer& w) {
        w.str(op.name());
        w.u32(uint32_t(op.inputs.size()));
        for (const auto& p : op.inputs) {
          w.u8(p ? 1 : 0);
          w.u8(p ? uint8_t(p->dtype()) : 0);
        }
      }));
      const wire::Header h = wire::decode_header(reply);
      EMBER_CHECK(h.type == Type::supported, "remote: unexpected reply to a supports query");
      yes = wire::payload(reply).u8("supported") != 0;
    }
    std::lock_guard<std::mutex> g(supported_mu_);
    supported_[key] = yes;
    return yes;
  }

  void sync() override {
    std::lock_guard<std::mutex> g(c_->mu);
    c_->ask(wire::frame(Type::sync, [](wire::Writer&) {}));
  }
  void seed(uint64_t s) override {
    std::lock_guard<std::mutex> g(c_->mu);
    c_->cmd(wire::Cmd::seed).u64(s);
  }
  MemoryStats memory_stats() const override {
    std::lock_guard<std::mutex> g(c_->mu);
    const std::vector<uint8_t>& reply = c_->ask(wire::frame(Type::stats, [](wire::Writer&) {}));
    wire::Reader r = wire::payload(reply);
    MemoryStats s;
    s.in_use = r.i64("in_use");
    s.reserved = r.i64("reserved");
    s.peak = r.i64("peak");
    return s;
  }

 private:
  uint64_t id_of(const PrimitivePtr& p, std::string_view what) const {
    const auto* rp = dynamic_cast<const RemotePrimitive*>(p.get());
    EMBER_CHECK(rp && rp->connection() == c_.get(), "remote: ", what,
                ": an input is not a tensor of this remote session (move it with .to(device) first)");
    return rp->id();
  }
  std::shared_ptr<Connection> c_;
  mutable std::mutex supported_mu_;
  mutable std::unordered_map<std::string, bool> supported_;  // supports(): the server's answers
};

}  // namespace

Device connect(const std::string& url, const Options& options) {
  return Device(std::make_shared<RemoteBackend>(std::make_shared<Connection>(url, options)));
}

}  // namespace ember::remote

namespace ember {
Device Device::remote(const std::string& url, const RemoteOptions& options) { return remote::connect(url, options); }
}  // namespace ember
