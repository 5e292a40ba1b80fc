// ember-server's core: a thread accepts connections, and each session runs on its own thread
// (a slow or stuck client holds only its own), with its own table of tensors. The first frame
// must be a hello with the token; nothing else is decoded before it. Then batches of commands
// run in order. An op that fails becomes the session's pending error, reported (and cleared) at
// the next frame that waits, and the rest of its batch is skipped. A malformed frame or an
// exceeded limit ends the session with an error frame. Ending a session drops its tensors.
#include <sys/mman.h>
#include <sys/socket.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <optional>
#include <type_traits>
#include <boost/asio/buffer.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/ssl.hpp>
#include <boost/beast/websocket.hpp>
#include <boost/beast/websocket/ssl.hpp>
#include <iostream>
#include <list>
#include <mutex>
#include <sstream>
#include <thread>
#include <unordered_map>

#include "ember/core/error.hpp"
#include "ember/decorators/remote.hpp"
#include "wire.hpp"

namespace ember::remote {

namespace beast = boost::beast;
namespace websocket = beast::websocket;
namespace net = boost::asio;
using tcp = net::ip::tcp;
using wire::Type;

namespace {

constexpr size_t kChunk = size_t(4) << 20;  // download chunk

// Equal strings, in a time that depends on their lengths only.
bool same_token(const std::string& a, const std::string& b) {
  volatile uint8_t diff = a.size() == b.size() ? 0 : 1;
  const size_t n = std::max(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    const uint8_t x = i < a.size() ? uint8_t(a[i]) : 0, y = i < b.size() ? uint8_t(b[i]) : 0;
    diff = diff | uint8_t(x ^ y);
  }
  return diff == 0;
}

// An error that ends the session (a limit, a malformed frame), as opposed to an op's failure.
struct SessionEnd : Error {
  using Error::Error;
};

// A tensor whose chunks are arriving, in a 64-byte aligned block (uninitialised until they
// have: staging()) that the backend then wraps in place where it can use host memory (the CPU).
struct Upload {
  TensorMeta meta;
  std::shared_ptr<std::byte> bytes;
  size_t size = 0, filled = 0;
};
// Staging blocks come from a small cache of freed ones (the CPU backend wraps a block as the
// tensor, so it returns here when the tensor is dropped): a client that uploads a batch per
// step reuses the same pages instead of faulting in new ones for every upload. Large blocks
// ask for transparent huge pages (fewer faults the first time).
class StagingCache {
 public:
  static StagingCache& global() {
    static StagingCache* c = new StagingCache();  // leaked: blocks may outlive static destruction
    return *c;
  }
  std::shared_ptr<std::byte> get(size_t n) {
    const size_t sz = round_up(std::max<size_t>(n, 1));
    void* p = nullptr;
    {
      std::lock_guard<std::mutex> g(mu_);
      auto it = free_.find(sz);
      if (it != free_.end() && !it->second.empty()) {
        p = it->second.back();
        it->second.pop_back();
        cached_ -= sz;
      }
    }
    if (!p) {
      p = std::aligned_alloc(sz >= kHuge ? kHuge : 64, sz);
      if (!p) throw std::bad_alloc();
      if (sz >= kHuge) (void)madvise(p, sz, MADV_HUGEPAGE);
    }
    return std::shared_ptr<std::byte>(static_cast<std::byte*>(p), [this, sz](std::byte* q) { put(q, sz); });
  }

 private:
  static constexpr size_t kHuge = size_t(2) << 20;
  static constexpr size_t kMaxCached = size_t(1) << 30;
  static size_t round_up(size_t n) {
    const size_t a = n >= kHuge ? kHuge : 64;
    return (n + a - 1) / a * a;
  }
  void put(std::byte* p, size_t sz) {
    {
      std::lock_guard<std::mutex> g(mu_);
      if (cached_ + sz <= kMaxCached) {
        free_[sz].push_back(p);
        cached_ += sz;
        return;
      }
    }
    std::free(p);
  }
  std::mutex mu_;
  std::unordered_map<size_t, std::vector<void*>> free_;
  size_t cached_ = 0;
};
std::shared_ptr<std::byte> staging(size_t n) { return StagingCache::global().get(n); }

}  // namespace

struct Server::Impl {
  ServerOptions opt;
  net::io_context ioc;
  tcp::acceptor acceptor{ioc};
  std::thread accept_thread;
  std::atomic<bool> stopping{false};
  std::atomic<int> open{0};
  std::atomic<int64_t> held{0};
  std::atomic<uint64_t> next_session{1};
  std::mutex mu;  // sessions
  struct Live {
    std::thread thread;
    int fd = -1;
    std::atomic<bool> finished{false};
  };
  std::list<Live> sessions;

  void log(const std::string& line) {
    if (opt.log) opt.log(line);
    else std::cerr << "ember-server: " << line << std::endl;
  }

  void accept_loop() {
    for (;;) {
      beast::error_code ec;
      tcp::socket s(ioc);
      acceptor.accept(s, ec);
      if (stopping) return;
      if (ec) continue;
      std::lock_guard<std::mutex> g(mu);
      for (auto it = sessions.begin(); it != sessions.end();) {  // reap finished sessions
        if (it->finished) {
          it->thread.join();
          it = sessions.erase(it);
        } else {
          ++it;
        }
      }
      Live& l = sessions.emplace_back();
      l.fd = s.native_handle();
      l.thread = std::thread([this, &l, sock = std::move(s)]() mutable {
        serve(std::move(sock));
        l.finished = true;
      });
    }
  }

  std::optional<net::ssl::context> tls;  // set when the server speaks wss://

  // One session, start to end.
  void serve(tcp::socket sock) {
    const uint64_t sid = next_session++;
    std::string peer = "?";
    {
      beast::error_code ec;
      auto ep = sock.remote_endpoint(ec);
      if (!ec) peer = ep.address().to_string() + ":" + std::to_string(ep.port());
      sock.set_option(tcp::no_delay(true), ec);  // replies are small and waited for
    }
    if (tls) {
      websocket::stream<beast::ssl_stream<tcp::socket>> ws(std::move(sock), *tls);
      serve_on(ws, sid, peer);
    } else {
      websocket::stream<tcp::socket> ws(std::move(sock));
      serve_on(ws, sid, peer);
    }
  }
  template <class WS>
  void serve_on(WS& ws, uint64_t sid, const std::string& peer) {
    Session<WS> s(*this, ws, sid);
    std::string end = "closed by the client";
    try {
      ws.read_message_max(opt.max_frame + wire::kHeaderBytes);
      if constexpr (!std::is_same_v<WS, websocket::stream<tcp::socket>>) {
        beast::error_code ec;
        ws.next_layer().handshake(net::ssl::stream_base::server, ec);
        if (ec) {
          end = "TLS handshake failed: " + ec.message();
          throw SessionEnd(end);
        }
      }
      ws.accept();
      ws.binary(true);
      ws.auto_fragment(false);  // a frame is one WebSocket message of one piece
      if (open.fetch_add(1) >= opt.max_sessions) {
        s.counted = true;
        throw SessionEnd("remote: the server is full (" + std::to_string(opt.max_sessions) + " sessions); try later");
      }
      s.counted = true;
      s.run();
    } catch (const SessionEnd& e) {
      end = e.what();
      s.send_error(e.what());
    } catch (const beast::system_error& e) {
      if (e.code() != websocket::error::closed && e.code() != net::error::eof) end = "connection: " + e.code().message();
    } catch (const std::exception& e) {
      end = e.what();
      s.send_error(e.what());
    }
    s.release();
    if (s.counted) --open;
    std::ostringstream os;
    os << "session " << sid << " from " << peer << (s.authenticated ? "" : " (not authenticated)") << ": " << s.ops
       << " ops, " << s.bytes_in << " bytes in, " << s.bytes_out << " bytes out; ended: " << end;
    log(os.str());
  }

  template <class WS>
  struct Session {
    Session(Impl& server, WS& stream, uint64_t id) : srv(server), ws(stream), sid(id) {}
    Impl& srv;
    WS& ws;
    uint64_t sid;
    bool counted = false, authenticated = false;
    std::unordered_map<uint64_t, PrimitivePtr> tensors;
    std::unordered_map<uint64_t, Upload> uploads;
    int64_t held = 0, peak = 0;
    uint64_t ops = 0, bytes_in = 0, bytes_out = 0;
    std::string pending;  // the first op error since the last wait

    void send(const std::vector<uint8_t>& f) {
      bytes_out += f.size();
      ws.write(net::buffer(f));
      replied = true;
    }
    void send_error(const std::string& msg) {
      try {
        send(wire::frame(Type::error, [&](wire::Writer& w) { w.str(msg.substr(0, wire::kMaxString)); }));
      } catch (...) {
      }
    }
    void add_held(int64_t b) {
      held += b;
      srv.held += b;
      peak = std::max(peak, held);
      if (b > 0 && srv.opt.max_memory > 0 && held > srv.opt.max_memory)
        throw SessionEnd("remote: session memory quota exceeded: " + std::to_string(held) + " bytes held, the limit is " +
                         std::to_string(srv.opt.max_memory) + "; the session is closed");
    }
    void release() {
      srv.held -= held;
      held = 0;
      tensors.clear();
      uploads.clear();
    }
    void store(uint64_t id, PrimitivePtr p) {
      EMBER_CHECK(id != 0 && !tensors.count(id) && !uploads.count(id), "remote: tensor id ", id, " is already in use");
      add_held(wire::tensor_bytes(p->meta(), "tensor"));
      tensors.emplace(id, std::move(p));
    }
    const PrimitivePtr& get(uint64_t id) const {
      auto it = tensors.find(id);
      EMBER_CHECK(it != tensors.end(), "remote: unknown tensor id ", id,
                  " (never created in this session, or already freed)");
      return it->second;
    }
    // The pending error, if any, as an error frame; true when one was sent.
    bool report_pending() {
      if (pending.empty()) return false;
      send_error(pending);
      pending.clear();
      return true;
    }

    std::vector<uint8_t> read_frame() {
      std::vector<uint8_t> f;
      auto buf = net::dynamic_buffer(f);  // the message lands in f: no copy
      ws.read(buf);
      bytes_in += f.size();
      return f;
    }

    // The next frame, decoded; a malformed one ends the session. Upload chunks point into
    // `current`, which holds the frame until the next one.
    std::vector<uint8_t> current;
    bool replied = false;  // the last frame was answered: the client's next one comes soon
    wire::ClientFrame next() {
      if (replied) {
        // A client that waited for a reply sends its next frame within microseconds: poll for
        // it briefly instead of sleeping in the read (a wake-up costs tens of microseconds on
        // a virtual machine). A frame Beast has already buffered just ends the poll's time.
        const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(60);
        beast::error_code ec;
        // (yielding, so that a client thread that shares this core gets to send it)
        while (beast::get_lowest_layer(ws).available(ec) == 0 && !ec && std::chrono::steady_clock::now() < until)
          std::this_thread::yield();
        replied = false;
      }
      // The first bytes: a chunk frame's values are then read straight into their upload's
      // staging block (chunk()); any other frame is read whole into `current` and decoded.
      std::array<uint8_t, wire::kStreamPrefix> first{};
      size_t got = 0;
      do {
        got += ws.read_some(net::buffer(first.data() + got, first.size() - got));
      } while (got < first.size() && !ws.is_message_done());
      bytes_in += got;
      if (got == first.size() && first[6] == uint8_t(Type::chunk)) {
        wire::StreamHead c;
        try {
          c = wire::decode_stream_head(first, Type::chunk);
        } catch (const Error& e) {
          throw SessionEnd(e.what());
        }
        if (c.n + (wire::kStreamPrefix - wire::kHeaderBytes) > srv.opt.max_frame)
          throw SessionEnd("remote frame: " + std::to_string(c.n + (wire::kStreamPrefix - wire::kHeaderBytes)) + " bytes, over the limit of " +
                           std::to_string(srv.opt.max_frame));
        wire::ClientFrame m;
        m.type = Type::chunk;
        m.chunk = c;
        return m;
      }
      current.assign(first.begin(), first.begin() + got);  // keeps its capacity: no new pages per frame
      if (!ws.is_message_done()) {
        auto buf = net::dynamic_buffer(current);
        ws.read(buf);  // the rest of this message
        bytes_in += current.size() - got;
      }
      try {
        return wire::decode_client_frame(current);
      } catch (const Error& e) {
        throw SessionEnd(e.what());
      }
    }
    // n bytes of the message being read, into p (null: read and dropped); then the message must
    // end there. Each read asks for at most kPiece bytes: Beast unmasks what a read returns in
    // place, and a piece of this size is still in the core's cache when it does (a 4 MiB read
    // left the unmasking to stream from memory: 13% of an upload's cycles).
    void read_values(std::byte* p, size_t n) {
      constexpr size_t kPiece = size_t(256) << 10;
      std::vector<std::byte> sink(p ? 0 : std::min<size_t>(n, 1 << 16));
      size_t got = 0;
      while (got < n) {
        if (ws.is_message_done()) throw SessionEnd("remote frame: truncated in a chunk's values");
        got += p ? ws.read_some(net::buffer(p + got, std::min(n - got, kPiece)))
                 : ws.read_some(net::buffer(sink.data(), std::min(n - got, sink.size())));
      }
      bytes_in += n;
      if (!ws.is_message_done()) throw SessionEnd("remote frame: longer than its header says");
    }
    // A chunk frame's values, read into the staging block of the upload they continue. The
    // chunks of an upload whose start failed (its error pending) are read and dropped.
    void chunk(const wire::StreamHead& c) {
      auto it = uploads.find(c.id);
      if (it == uploads.end()) {
        if (pending.empty())
          throw SessionEnd("remote frame: a chunk of tensor " + std::to_string(c.id) + ", whose upload never began");
        read_values(nullptr, size_t(c.n));
        return;
      }
      Upload& u = it->second;
      if (c.total != u.size || c.offset != u.filled)
        throw SessionEnd("remote frame: upload chunk of tensor " + std::to_string(c.id) + " out of order or out of bounds");
      read_values(u.bytes.get() + c.offset, size_t(c.n));
      u.filled += size_t(c.n);
      if (u.filled == u.size) finish_upload(it);
    }

    void run() {
      // authentication first: nothing but the hello is decoded before it succeeds
      {
        const std::vector<uint8_t> f = read_frame();
        wire::Header h;
        try {
          h = wire::decode_header(f);
        } catch (const Error& e) {
          throw SessionEnd(e.what());
        }
        if (h.type != Type::hello)
          throw SessionEnd("remote: authentication required: the first frame must be a hello with the token");
        std::string token;
        try {
          token = wire::decode_client_frame(f).token;
        } catch (const Error& e) {
          throw SessionEnd(e.what());
        }
        if (!same_token(token, srv.opt.token)) throw SessionEnd("remote: authentication failed (wrong or missing token)");
      }
      authenticated = true;
      send(wire::frame(Type::welcome, [&](wire::Writer& w) {
        w.str(srv.opt.device.name());
        w.u64(srv.opt.max_frame);
      }));
      for (;;) {
        wire::ClientFrame m = next();
        switch (m.type) {
          case Type::batch: batch(m.commands); break;
          case Type::chunk: chunk(m.chunk); break;
          case Type::supports: {  // not a wait: a pending error stays pending
            bool yes = false;
            try {
              // One-element inputs of the asked dtypes, written by the served device itself (a
              // decorator's supports() may look into its own primitives); no other check runs.
              Op op{m.op, {}, wire::default_attrs(m.op), {}};
              for (const auto& dt : m.op_dtypes)
                op.inputs.push_back(dt ? srv.opt.device.backend().write(TensorData(Shape{1}, *dt)) : nullptr);
              yes = srv.opt.device.backend().supports(op);
            } catch (const Error&) {
              yes = false;
            }
            send(wire::frame(Type::supported, [&](wire::Writer& w) { w.u8(yes ? 1 : 0); }));
            break;
          }
          case Type::read:
            if (!report_pending()) download(m.ids[0]);
            break;
          case Type::sync:
            if (report_pending()) break;
            try {
              srv.opt.device.sync();
            } catch (const Error& e) {
              send_error(std::string("remote: ") + e.what());
              break;
            }
            send(wire::frame(Type::done, [](wire::Writer&) {}));
            break;
          case Type::query: {
            if (report_pending()) break;
            std::vector<TensorMeta> metas;
            try {
              for (uint64_t id : m.ids) metas.push_back(get(id)->meta());
            } catch (const Error& e) {
              send_error(e.what());
              break;
            }
            send(wire::frame(Type::metas, [&](wire::Writer& w) {
              w.u32(uint32_t(metas.size()));
              for (const auto& meta : metas) w.meta(meta);
            }));
            break;
          }
          case Type::stats:
            if (report_pending()) break;
            send(wire::frame(Type::stats_reply, [&](wire::Writer& w) {
              w.i64(held);
              w.i64(held);
              w.i64(peak);
              w.i64(srv.held.load());
            }));
            break;
          default:
            throw SessionEnd("remote: a second hello in a session");
        }
      }
    }

    // A batch's commands in order; an op's error becomes the pending error and skips the rest
    // of the batch (frees still run).
    void batch(std::vector<wire::Command>& cmds) {
      bool skipping = !pending.empty();
      for (auto& c : cmds) {
        if (auto* f = std::get_if<wire::FreeCmd>(&c)) {
          drop(f->id);
        } else if (skipping) {
          continue;
        } else if (auto* u = std::get_if<wire::UploadCmd>(&c)) {
          upload(*u, skipping);
        } else if (auto* e = std::get_if<wire::ExecCmd>(&c)) {
          exec(*e, skipping);
        } else if (auto* sd = std::get_if<wire::SeedCmd>(&c)) {
          srv.opt.device.seed(sd->seed);
        }
      }
    }

    void drop(uint64_t id) {
      auto it = tensors.find(id);
      if (it != tensors.end()) {
        add_held(-wire::tensor_bytes(it->second->meta(), "tensor"));
        tensors.erase(it);
      }
      auto u = uploads.find(id);
      if (u != uploads.end()) {
        add_held(-int64_t(u->second.size));
        uploads.erase(u);
      }
    }

    void upload(const wire::UploadCmd& c, bool& skipping) {
      const int64_t total = wire::tensor_bytes(c.meta, "upload");
      auto it = uploads.find(c.id);
      if (c.offset == 0 && it == uploads.end()) {
        if (c.id == 0 || tensors.count(c.id)) {
          pending = "remote: upload: tensor id " + std::to_string(c.id) + " is already in use";
          skipping = true;
          return;
        }
        if (c.bytes.size() == size_t(total)) {  // the whole tensor in one chunk: no staging
          try {
            store(c.id, srv.opt.device.backend().write_bytes(c.meta, c.bytes));
          } catch (const SessionEnd&) {
            throw;
          } catch (const Error& e) {
            pending = std::string("remote: upload: ") + e.what();
            skipping = true;
          }
          return;
        }
        add_held(total);  // the staging buffer counts against the quota before it is allocated
        it = uploads.emplace(c.id, Upload{c.meta, staging(size_t(total)), size_t(total), 0}).first;
      }
      if (it == uploads.end() || !(it->second.meta == c.meta) || it->second.filled != c.offset ||
          c.bytes.size() > size_t(total) - c.offset)
        throw SessionEnd("remote frame: upload chunk of tensor " + std::to_string(c.id) + " out of order or out of bounds");
      std::memcpy(it->second.bytes.get() + c.offset, c.bytes.data(), c.bytes.size());
      it->second.filled += c.bytes.size();
      if (it->second.filled == size_t(total) && !finish_upload(it)) skipping = true;
    }
    // An upload whose bytes have all arrived becomes a tensor of the session.
    // False when the backend refused it (the error is pending).
    bool finish_upload(std::unordered_map<uint64_t, Upload>::iterator it) {
      Upload u = std::move(it->second);
      const uint64_t id = it->first;
      uploads.erase(it);
      add_held(-int64_t(u.size));
      try {
        const std::span<const std::byte> values(u.bytes.get(), u.size);
        store(id, srv.opt.device.backend().wrap_bytes(u.meta, values, u.bytes));
      } catch (const SessionEnd&) {
        throw;
      } catch (const Error& e) {
        pending = std::string("remote: upload: ") + e.what();
        return false;
      }
      return true;
    }

    void exec(wire::ExecCmd& c, bool& skipping) {
      ++ops;
      const std::string_view name = op_name(c.kind);
      try {
        std::vector<PrimitivePtr> inputs;
        for (uint64_t id : c.inputs) inputs.push_back(id == 0 ? nullptr : get(id));
        Op op = make_op(c.kind, std::move(inputs), std::move(c.attrs));  // every check a local call makes
        for (uint64_t id : c.outputs)
          EMBER_CHECK(id != 0 && !tensors.count(id) && !uploads.count(id), "remote: ", name, ": output id ", id,
                      " is already in use");
        std::vector<PrimitivePtr> res = srv.opt.device.backend().execute(std::move(op));
        EMBER_CHECK(res.size() == c.outputs.size(), "remote: ", name, ": the client named ", c.outputs.size(),
                    " outputs, the op made ", res.size());
        for (size_t i = 0; i < res.size(); ++i) store(c.outputs[i], std::move(res[i]));
      } catch (const SessionEnd&) {
        throw;
      } catch (const Error& e) {
        pending = e.what();
        skipping = true;
      }
    }

    // A tensor's values as data frames of up to kChunk bytes, each sent as its prefix followed
    // by the values in place (host memory the backend exposes, else a read's copy).
    void download(uint64_t id) {
      PrimitivePtr p;
      TensorData d;
      std::optional<MemoryView> view;
      std::span<const std::byte> bytes;
      try {
        p = get(id);
        view = srv.opt.device.backend().memory_view(p);
        if (view && view->cuda_device < 0) {
          bytes = {static_cast<const std::byte*>(view->data), size_t(wire::tensor_bytes(p->meta(), "tensor"))};
        } else {
          d = srv.opt.device.backend().read(p);
          bytes = d.bytes();
        }
      } catch (const Error& e) {
        send_error(e.what());
        return;
      }
      size_t off = 0;
      do {
        const size_t n = std::min(kChunk, bytes.size() - off);
        const auto head = wire::stream_head(Type::data, id, off, bytes.size(), n);
        const std::array<net::const_buffer, 2> parts{net::buffer(head), net::buffer(bytes.data() + off, n)};
        bytes_out += head.size() + n;
        ws.write(parts);
        replied = true;
        off += n;
      } while (off < bytes.size());
    }
  };
};

Server::Server(ServerOptions options) : impl_(std::make_unique<Impl>()) { impl_->opt = std::move(options); }
Server::~Server() { stop(); }

void Server::start() {
  Impl& s = *impl_;
  beast::error_code ec;
  EMBER_CHECK(s.opt.tls_cert.empty() == s.opt.tls_key.empty(), "ember-server: --tls-cert and --tls-key go together");
  if (!s.opt.tls_cert.empty()) {
    s.tls.emplace(net::ssl::context::tls_server);
    s.tls->set_options(net::ssl::context::default_workarounds | net::ssl::context::no_sslv2 |
                       net::ssl::context::no_sslv3 | net::ssl::context::no_tlsv1 | net::ssl::context::no_tlsv1_1);
    s.tls->use_certificate_chain_file(s.opt.tls_cert, ec);
    EMBER_CHECK(!ec, "ember-server: --tls-cert ", s.opt.tls_cert, ": ", ec.message());
    s.tls->use_private_key_file(s.opt.tls_key, net::ssl::context::pem, ec);
    EMBER_CHECK(!ec, "ember-server: --tls-key ", s.opt.tls_key, ": ", ec.message());
  }
  const auto addr = net::ip::make_address(s.opt.host, ec);
  EMBER_CHECK(!ec, "ember-server: --listen: \"", s.opt.host, "\" is not an IP address");
  const tcp::endpoint ep(addr, s.opt.port);
  s.acceptor.open(ep.protocol(), ec);
  if (!ec) s.acceptor.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) s.acceptor.bind(ep, ec);
  if (!ec) s.acceptor.listen(net::socket_base::max_listen_connections, ec);
  EMBER_CHECK(!ec, "ember-server: can't listen on ", s.opt.host, ":", s.opt.port, ": ", ec.message());
  s.log(std::string("listening on ") + (s.tls ? "wss://" : "ws://") + s.opt.host + ":" + std::to_string(port()) +
        ", serving " + s.opt.device.name());
  s.accept_thread = std::thread([&s] { s.accept_loop(); });
}

uint16_t Server::port() const {
  beast::error_code ec;
  return impl_->acceptor.local_endpoint(ec).port();
}

void Server::stop() {
  Impl& s = *impl_;
  if (!s.accept_thread.joinable()) return;
  s.stopping = true;
  ::shutdown(s.acceptor.native_handle(), SHUT_RDWR);  // wakes the blocking accept
  s.accept_thread.join();
  std::list<Impl::Live> live;
  {
    std::lock_guard<std::mutex> g(s.mu);
    live.swap(s.sessions);
  }
  // each session finishes the frame it is running; its next read sees the end of the stream
  for (auto& l : live)
    if (!l.finished) ::shutdown(l.fd, SHUT_RD);
  for (auto& l : live) l.thread.join();
  beast::error_code ec;
  s.acceptor.close(ec);
  s.log("stopped");
}

int Server::sessions() const { return impl_->open.load(); }
int64_t Server::memory_held() const { return impl_->held.load(); }

}  // namespace ember::remote
