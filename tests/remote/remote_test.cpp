// The remote decorator against an in-process server on loopback (and, for the kill test, an
// ember-server process). Local CPU results are the reference: the server runs the same CPU
// backend, so values must match bit for bit.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/websocket.hpp>
#include <chrono>
#include <fstream>
#include <optional>
#include <random>
#include <nlohmann/json.hpp>
#include <gtest/gtest.h>
#include <thread>

#include "ember/backends/cpu.hpp"
#include "ember/decorators/remote.hpp"
#include "ember/ember.hpp"
#include "ember/nn.hpp"
#include "ember/optim/optimizer.hpp"
#include "fashion_mnist/model.hpp"
#include "wire.hpp"

namespace ember {
namespace {

namespace beast = boost::beast;
namespace websocket = beast::websocket;
namespace net = boost::asio;
using tcp = net::ip::tcp;
using remote::wire::Type;

struct Fixture : ::testing::Test {
  remote::ServerOptions opts() {
    remote::ServerOptions o;
    o.port = 0;
    o.device = Device(cpu::make_backend());  // its own random stream, apart from Device::cpu()'s
    o.token = "s3cret-token";
    o.log = [this](const std::string& l) {
      std::lock_guard<std::mutex> g(log_mu);
      log.push_back(l);
    };
    return o;
  }
  void SetUp() override {
    server = std::make_unique<remote::Server>(opts());
    server->start();
  }
  std::string url() const { return "ws://127.0.0.1:" + std::to_string(server->port()); }
  Device connect() { return Device::remote(url(), {.token = "s3cret-token"}); }
  // A session that still works: one op and a read.
  void expect_serving() {
    Device d = connect();
    auto x = DynTensor::from_vector<float>({1, 2, 3}, {3}, d);
    EXPECT_EQ((x * 2.0).to_vector<float>(), (std::vector<float>{2, 4, 6}));
  }
  std::mutex log_mu;
  std::vector<std::string> log;
  std::unique_ptr<remote::Server> server;  // last: it stops (and logs) before the log goes
};

TEST_F(Fixture, OpsMatchLocalBitForBit) {
  Device d = connect();
  for (Device dev : {d, Device::cpu()}) dev.seed(3);
  auto a = DynTensor::normal({64, 48}), b = DynTensor::normal({48, 32});
  auto f = [](const DynTensor& x, const DynTensor& y) {
    auto h = relu(matmul(x, y) + 0.5);
    return softmax(h * h, -1).sum({0});
  };
  const auto want = f(a, b).to_vector<float>();
  const auto got = f(a.to(d), b.to(d)).to_vector<float>();
  EXPECT_EQ(got, want);
  // random ops draw the server's stream, seeded from the client
  d.seed(7);
  auto r1 = DynTensor::normal({5}, 0, 1, DType::f32, d).to_vector<float>();
  d.seed(7);
  auto r2 = DynTensor::normal({5}, 0, 1, DType::f32, d).to_vector<float>();
  EXPECT_EQ(r1, r2);
  // a data-dependent op: the output shape comes back from the server
  auto m = DynTensor::from_vector<float>({0, 1, 0, 2, 3}, {5}, d);
  auto nz = nonzero(m);
  EXPECT_EQ(nz.shape(), (Shape{3, 1}));
  EXPECT_EQ(nz.to_vector<int64_t>(), (std::vector<int64_t>{1, 3, 4}));
  EXPECT_NE(d.name().find("remote(ws://127.0.0.1"), std::string::npos) << d.name();
}

TEST_F(Fixture, LargeUploadAndDownloadAreChunked) {
  Device d = connect();
  std::vector<float> v(3 * (1 << 20) + 7);  // 12 MB: chunk frames of 4 MiB each way, and a tail
  for (size_t i = 0; i < v.size(); ++i) v[i] = float(i % 1000) * 0.5f;
  auto x = DynTensor::from_vector<float>(v, {int64_t(v.size())}, d);
  EXPECT_EQ(x.to_vector<float>(), v);
}

// The client frames and masks ws:// chunk frames itself: each of RFC 6455's three length forms
// (a last chunk of 10 bytes: 7 bits; of 1001: 16 bits; else 64 bits), and values whose length is
// no multiple of 4 (the mask key's tail), must arrive intact.
TEST_F(Fixture, ChunkFramesOfEveryLengthFormArriveIntact) {
  Device d = connect();
  for (size_t tail : {size_t(10), size_t(1001), size_t(3), size_t(0)}) {
    const size_t n = (size_t(4) << 20) + tail + (tail == 0 ? (size_t(1) << 20) + 1 : 0);
    std::vector<uint8_t> v(n);
    uint32_t r = 12345;
    for (auto& b : v) b = uint8_t((r = r * 1103515245u + 12345u) >> 24);
    auto x = DynTensor::from_data(TensorData(Shape{int64_t(n)}, DType::u8,
                                             std::vector<std::byte>(reinterpret_cast<std::byte*>(v.data()),
                                                                    reinterpret_cast<std::byte*>(v.data()) + n)),
                                  d);
    const TensorData back = x.into_data();
    ASSERT_EQ(back.bytes().size(), n);
    EXPECT_EQ(std::memcmp(back.bytes().data(), v.data(), n), 0) << "tail " << tail;
  }
  expect_serving();
}

TEST_F(Fixture, AutodiffOnTopKeepsTheGraphOnTheClient) {
  Device d = connect().autodiff();
  Device l = Device::cpu().autodiff();
  auto w0 = DynTensor::normal({8, 4}), x0 = DynTensor::normal({16, 8});
  auto grad_on = [&](Device dev) {
    auto w = w0.to(dev).require_grad();
    auto loss = (tanh(matmul(x0.to(dev), w)) * 3.0).pow(2.0).mean();
    auto g = loss.backward();
    return w.grad(g)->to_vector<float>();
  };
  EXPECT_EQ(grad_on(d), grad_on(l));
}

// supports() answers what the served backend supports, per op and input dtypes: a server over
// a backend without erf for f64 makes the client report it unsupported (so that the router and
// the conformance suite go elsewhere), and running it there raises the server's error.
TEST(Remote, SupportsFollowsTheServedBackend) {
  struct NoF64Erf final : ForwardingBackend {
    using ForwardingBackend::ForwardingBackend;
    bool supports(const Op& op) const override {
      if (op.kind == OpKind::erf && op.inputs.size() == 1 && op.inputs[0] && op.in(0).dtype == DType::f64) return false;
      return ForwardingBackend::supports(op);
    }
    std::vector<PrimitivePtr> execute(Op op) override {
      EMBER_CHECK(supports(op), op.name(), ": not supported on this test backend");
      return ForwardingBackend::execute(std::move(op));
    }
  };
  remote::ServerOptions o;
  o.port = 0;
  o.device = Device(std::make_shared<NoF64Erf>(cpu::make_backend()));
  o.token = "t";
  o.log = [](const std::string&) {};
  remote::Server server(o);
  server.start();
  Device d = Device::remote("ws://127.0.0.1:" + std::to_string(server.port()), {.token = "t"});
  auto x64 = DynTensor::from_vector<double>({0.5, -1.0}, {2}, d), x32 = x64.cast(DType::f32);
  EXPECT_FALSE(d.backend().supports(make_op(OpKind::erf, {x64.primitive()})));
  EXPECT_TRUE(d.backend().supports(make_op(OpKind::erf, {x32.primitive()})));
  EXPECT_TRUE(d.backend().supports(make_op(OpKind::add, {x64.primitive(), x64.primitive()})));
  EXPECT_FALSE(d.backend().supports(make_op(OpKind::erf, {x64.primitive()})));  // (the cached answer)
  EXPECT_NEAR(erf(x32).to_vector<float>()[0], std::erf(0.5f), 1e-6);
  auto y = erf(x64);
  EXPECT_THROW((void)y.to_vector<double>(), Error);
  // a router over it and the CPU runs the f64 erf on the CPU
  Device r = Device::router({d, Device::cpu()});
  EXPECT_NEAR(erf(DynTensor::from_vector<double>({0.5}, {1}, r)).to_vector<double>()[0], std::erf(0.5), 1e-15);
}

TEST_F(Fixture, ServerErrorsArriveAtTheNextWait) {
  Device d = connect();
  // shape errors stay eager (make_op on the client)
  auto a = DynTensor::ones({2, 3}, DType::f32, d), b = DynTensor::ones({4}, DType::f32, d);
  EXPECT_THROW(a + b, Error);
  // the session goes on
  EXPECT_EQ((a * 3.0).sum().to_vector<float>(), std::vector<float>{18});
  EXPECT_EQ(server->sessions(), 1);
}

// ---- raw frames: the bad-input categories

struct Raw {
  net::io_context ioc;
  websocket::stream<tcp::socket> ws{ioc};
  explicit Raw(uint16_t port) {
    tcp::resolver res(ioc);
    net::connect(ws.next_layer(), res.resolve("127.0.0.1", std::to_string(port)));
    ws.handshake("127.0.0.1", "/");
    ws.binary(true);
  }
  void send(const std::vector<uint8_t>& f) { ws.write(net::buffer(f)); }
  // The next message into `f`, waiting at most 5 s (a server that breaks the protocol must fail
  // the test, not hang it); false when the session is closed or nothing came.
  bool read(std::vector<uint8_t>& f) {
    bool done = false;
    beast::error_code ec;
    auto buf = net::dynamic_buffer(f);
    ws.async_read(buf, [&](beast::error_code e, size_t) {
      ec = e;
      done = true;
    });
    ioc.restart();
    ioc.run_for(std::chrono::seconds(5));
    if (!done) {
      beast::error_code ignored;
      ws.next_layer().close(ignored);
      ioc.restart();
      ioc.run();
      return false;
    }
    return !ec;
  }
  // The next frame: its type and, for an error, the message (type 0: none came).
  std::pair<Type, std::string> next() {
    std::vector<uint8_t> f;
    if (!read(f)) return {Type(0), "no frame"};
    const auto h = remote::wire::decode_header(f);
    auto r = remote::wire::payload(f);
    return {h.type, h.type == Type::error ? r.str("message") : ""};
  }
  // The error that ends the session, then the close.
  std::string refusal() {
    auto [t, msg] = next();
    EXPECT_EQ(t, Type::error);
    std::vector<uint8_t> f;
    EXPECT_FALSE(read(f)) << "the session should be closed";
    return msg;
  }
  void hello(const std::string& token) {
    send(remote::wire::frame(Type::hello, [&](remote::wire::Writer& w) { w.str(token); }));
    EXPECT_EQ(next().first, Type::welcome);
  }
  // A batch of one command that `fill` writes.
  template <class F>
  void batch(F&& fill) {
    send(remote::wire::frame(Type::batch, [&](remote::wire::Writer& w) {
      w.u32(1);
      fill(w);
    }));
  }
  std::string sync_error() {
    send(remote::wire::frame(Type::sync, [](remote::wire::Writer&) {}));
    auto [t, msg] = next();
    EXPECT_EQ(t, Type::error);
    return msg;
  }
  void upload(uint64_t id, const TensorMeta& m, size_t bytes) {
    batch([&](remote::wire::Writer& w) {
      w.u8(uint8_t(remote::wire::Cmd::upload));
      w.u64(id);
      w.meta(m);
      w.u64(0);
      std::vector<std::byte> b(bytes);
      w.bytes(b);
    });
  }
  void exec(const std::string& op, std::vector<uint64_t> in, std::vector<uint64_t> out) {
    batch([&](remote::wire::Writer& w) {
      w.u8(uint8_t(remote::wire::Cmd::exec));
      w.str(op);
      w.u32(uint32_t(in.size()));
      for (auto i : in) w.u64(i);
      w.u32(uint32_t(out.size()));
      for (auto o : out) w.u64(o);
    });
  }
};

// Chunk frames (an upload begun in a batch, its values streamed into place) are checked like
// every other frame: a chunk of no upload, out of order, or past the tensor ends the session;
// the chunks of an upload whose start failed are read and dropped, and its error reported.
TEST_F(Fixture, ChunkFramesAreChecked) {
  const uint16_t port = server->port();
  auto begin = [](Raw& r, uint64_t id, int64_t n) {
    r.batch([&](remote::wire::Writer& w) {
      w.u8(uint8_t(remote::wire::Cmd::upload));
      w.u64(id);
      w.meta({Shape{n}, DType::f32});
      w.u64(0);
      w.bytes({});
    });
  };
  auto chunk = [](Raw& r, uint64_t id, uint64_t off, uint64_t total, const std::vector<float>& v) {
    const auto head = remote::wire::stream_head(Type::chunk, id, off, total, v.size() * 4);
    std::vector<uint8_t> f(head.begin(), head.end());
    const auto* b = reinterpret_cast<const uint8_t*>(v.data());
    f.insert(f.end(), b, b + v.size() * 4);
    r.send(f);
  };
  {  // in order: the tensor holds the chunks' values
    Raw r(port);
    r.hello("s3cret-token");
    begin(r, 1, 4);
    chunk(r, 1, 0, 16, {1, 2});
    chunk(r, 1, 8, 16, {3, 4});
    r.send(remote::wire::frame(Type::read, [](remote::wire::Writer& w) { w.u64(1); }));
    std::vector<uint8_t> f;
    ASSERT_TRUE(r.read(f));
    const auto h = remote::wire::decode_stream_head(f, Type::data);
    ASSERT_EQ(h.n, 16u);
    std::vector<float> got(4);
    std::memcpy(got.data(), f.data() + remote::wire::kStreamPrefix, 16);
    EXPECT_EQ(got, (std::vector<float>{1, 2, 3, 4}));
  }
  {  // a chunk of an upload that never began
    Raw r(port);
    r.hello("s3cret-token");
    chunk(r, 7, 0, 8, {1, 2});
    const std::string msg = r.refusal();
    EXPECT_NE(msg.find("whose upload never began"), std::string::npos) << msg;
  }
  {  // out of order
    Raw r(port);
    r.hello("s3cret-token");
    begin(r, 1, 4);
    chunk(r, 1, 8, 16, {3, 4});
    const std::string msg = r.refusal();
    EXPECT_NE(msg.find("out of order"), std::string::npos) << msg;
  }
  {  // past the tensor's end
    Raw r(port);
    r.hello("s3cret-token");
    begin(r, 1, 4);
    chunk(r, 1, 8, 16, {3, 4, 5});
    const std::string msg = r.refusal();
    EXPECT_NE(msg.find("outside the tensor"), std::string::npos) << msg;
  }
  {  // a frame shorter than its header says
    Raw r(port);
    r.hello("s3cret-token");
    begin(r, 1, 4);
    const auto head = remote::wire::stream_head(Type::chunk, 1, 0, 16, 16);
    std::vector<uint8_t> f(head.begin(), head.end());
    f.resize(f.size() + 8);  // 8 of the 16 bytes
    r.send(f);
    const std::string msg = r.refusal();
    EXPECT_NE(msg.find("truncated"), std::string::npos) << msg;
  }
  {  // an upload whose start failed (its id is in use): its chunks are dropped, its error reported
    Raw r(port);
    r.hello("s3cret-token");
    r.upload(1, {Shape{2}, DType::f32}, 8);
    begin(r, 1, 4);
    chunk(r, 1, 0, 16, {1, 2, 3, 4});
    const std::string msg = r.sync_error();
    EXPECT_NE(msg.find("already in use"), std::string::npos) << msg;
    r.send(remote::wire::frame(Type::sync, [](remote::wire::Writer&) {}));
    EXPECT_EQ(r.next().first, Type::done);
  }
  expect_serving();
}

TEST_F(Fixture, BadInputGetsClearErrorsAndTheServerKeepsServing) {
  const uint16_t port = server->port();
  int cases = 0;
  auto expect_has = [&](const std::string& msg, const std::string& part) {
    ++cases;
    EXPECT_NE(msg.find(part), std::string::npos) << "message: " << msg;
  };
  {  // wrong token
    Raw r(port);
    r.send(remote::wire::frame(Type::hello, [](remote::wire::Writer& w) { w.str("guess"); }));
    expect_has(r.refusal(), "authentication failed");
  }
  {  // no token: an op before the hello is never decoded
    Raw r(port);
    r.send(remote::wire::frame(Type::sync, [](remote::wire::Writer&) {}));
    expect_has(r.refusal(), "authentication required");
  }
  {  // truncated frame
    Raw r(port);
    r.hello("s3cret-token");
    auto f = remote::wire::frame(Type::read, [](remote::wire::Writer& w) { w.u64(1); });
    f.resize(f.size() - 3);
    r.send(f);
    expect_has(r.refusal(), "truncated");
  }
  {  // oversized frame: past the server's max_frame (64 MiB by default)
    Raw r(port);
    r.hello("s3cret-token");
    std::vector<uint8_t> big(size_t(65) << 20, 0);
    beast::error_code ec;
    r.ws.write(net::buffer(big), ec);
    std::vector<uint8_t> f;
    ++cases;
    EXPECT_FALSE(r.read(f)) << "an oversized frame must end the session";
  }
  {  // unknown op
    Raw r(port);
    r.hello("s3cret-token");
    r.exec("no_such_op", {}, {1});
    expect_has(r.refusal(), "unknown op \"no_such_op\"");
  }
  {  // wrong arity: add of one input (make_op's own message), then the session goes on
    Raw r(port);
    r.hello("s3cret-token");
    r.upload(1, {Shape{2}, DType::f32}, 8);
    r.exec("add", {1}, {2});
    expect_has(r.sync_error(), "add");
    r.send(remote::wire::frame(Type::sync, [](remote::wire::Writer&) {}));
    EXPECT_EQ(r.next().first, Type::done);
  }
  {  // bad dtype
    Raw r(port);
    r.hello("s3cret-token");
    r.batch([](remote::wire::Writer& w) {
      w.u8(uint8_t(remote::wire::Cmd::upload));
      w.u64(1);
      w.u8(77);  // dtype code
      w.u8(0);
    });
    expect_has(r.refusal(), "dtype code 77");
  }
  {  // shape overflow
    Raw r(port);
    r.hello("s3cret-token");
    r.batch([](remote::wire::Writer& w) {
      w.u8(uint8_t(remote::wire::Cmd::upload));
      w.u64(1);
      w.u8(uint8_t(DType::f32));
      w.u8(3);
      for (int i = 0; i < 3; ++i) w.i64(int64_t(1) << 30);
    });
    expect_has(r.refusal(), "overflows");
  }
  {  // another session's id, and use after free: the same "unknown tensor" error
    Raw a(port), b(port);
    a.hello("s3cret-token");
    b.hello("s3cret-token");
    a.upload(5, {Shape{2}, DType::f32}, 8);
    a.send(remote::wire::frame(Type::sync, [](remote::wire::Writer&) {}));
    EXPECT_EQ(a.next().first, Type::done);
    b.exec("neg", {5}, {6});
    expect_has(b.sync_error(), "unknown tensor id 5");
    a.batch([](remote::wire::Writer& w) {
      w.u8(uint8_t(remote::wire::Cmd::free));
      w.u64(5);
    });
    a.exec("neg", {5}, {6});
    expect_has(a.sync_error(), "unknown tensor id 5");
  }
  {  // exceeded memory quota (a server with a 1 MB quota)
    remote::ServerOptions o = opts();
    o.max_memory = 1 << 20;
    remote::Server small(o);
    small.start();
    Raw r(small.port());
    r.hello("s3cret-token");
    r.upload(1, {Shape{1 << 19}, DType::f32}, size_t(1) << 21);
    expect_has(r.refusal(), "memory quota exceeded");
  }
  {  // another protocol version: refused, naming both
    Raw r(port);
    auto f = remote::wire::frame(Type::hello, [](remote::wire::Writer& w) { w.str("s3cret-token"); });
    const uint16_t other = remote::wire::kVersion + 1;
    std::memcpy(f.data() + 4, &other, 2);  // the version field
    r.send(f);
    const std::string msg = r.refusal();
    EXPECT_NE(msg.find("protocol version " + std::to_string(other)), std::string::npos) << msg;
    EXPECT_NE(msg.find("version " + std::to_string(remote::wire::kVersion)), std::string::npos) << msg;
  }
  EXPECT_EQ(cases, 11);
  expect_serving();
  // the token never reaches the log
  std::lock_guard<std::mutex> g(log_mu);
  for (const auto& l : log) EXPECT_EQ(l.find("s3cret"), std::string::npos) << l;
}

TEST_F(Fixture, ConcurrentClientsAndMemoryReturnsToBaseline) {
  constexpr int kClients = 8, kOps = 20000;
  std::atomic<int> bad{0};
  std::vector<std::thread> ts;
  for (int c = 0; c < kClients; ++c)
    ts.emplace_back([&, c] {
      Device d = connect();
      auto x = DynTensor::full({4}, double(c), DType::f32, d);
      for (int i = 0; i < kOps; ++i) x = x + 1.0;
      if (x.to_vector<float>() != std::vector<float>(4, float(c + kOps))) ++bad;
    });
  for (auto& t : ts) t.join();
  EXPECT_EQ(bad.load(), 0);
  for (int i = 0; i < 200 && (server->sessions() > 0 || server->memory_held() > 0); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(server->sessions(), 0);
  EXPECT_EQ(server->memory_held(), 0);
}

// The demo's CNN trained a few SGD steps through autodiff over the remote device: the same
// losses as on the local CPU, bit for bit (the server runs the same CPU backend).
std::vector<double> train_losses(const Device& base, int steps, double* ms_per_step = nullptr) {
  const Device dev = base.autodiff();
  dev.seed(11);
  fashion::Cnn model = fashion::make_cnn(dev);
  auto opt = optim::SgdConfig{.momentum = 0.9}.init();
  Device::cpu().seed(12);
  const DynTensor x = DynTensor::uniform({32, 1, 28, 28}, 0, 1, DType::f32).to(dev);
  const DynTensor y = DynTensor::randint({32}, 0, 10).to(dev);
  dev.seed(13);  // dropout's masks: the same stream on either device
  std::vector<double> losses;
  auto t0 = std::chrono::steady_clock::now();
  for (int s = 0; s < steps; ++s) {
    DynTensor l = nn::cross_entropy(model.forward(x), y);
    losses.push_back(l.item<double>());
    model = opt.step(std::move(model), l.backward(), 0.05);
  }
  if (ms_per_step)
    *ms_per_step = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / steps;
  return losses;
}

TEST_F(Fixture, FashionCnnTrainsOverRemoteAsLocally) {
  const auto local = train_losses(Device::cpu(), 3), remote = train_losses(connect(), 3);
  EXPECT_EQ(remote, local);
  EXPECT_LT(local.back(), local.front());
}

// A client that stops in the middle of a frame holds only its own session: others go on.
TEST_F(Fixture, StalledClientDoesNotStallOthers) {
  Raw stuck(server->port());
  stuck.hello("s3cret-token");
  // half a WebSocket message: the masked header's first bytes, then nothing
  const uint8_t partial[] = {0x82, 0x80 | 20, 1, 2};
  net::write(stuck.ws.next_layer(), net::buffer(partial));
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 3; ++i) expect_serving();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  EXPECT_GE(server->sessions(), 1);  // the stuck one is still open
}

TEST_F(Fixture, DroppedTensorsReturnTheirMemory) {
  Device d = connect();
  const int64_t base = d.memory_stats().in_use;
  {
    auto x = DynTensor::ones({1 << 20}, DType::f32, d);
    auto y = x * 2.0;
    EXPECT_EQ(d.memory_stats().in_use, base + (int64_t(8) << 20));
  }  // both dropped: freed with the next batch
  EXPECT_EQ(d.memory_stats().in_use, base);
  EXPECT_EQ(server->memory_held(), base);
}

TEST_F(Fixture, ClientGoneMidUploadFreesItsMemory) {
  {
    Raw r(server->port());
    r.hello("s3cret-token");
    r.upload(1, {Shape{1 << 20}, DType::f32}, size_t(1) << 20);  // the first of 4 chunks
    r.send(remote::wire::frame(Type::stats, [](remote::wire::Writer&) {}));
    EXPECT_EQ(r.next().first, Type::stats_reply);
    EXPECT_EQ(server->memory_held(), int64_t(4) << 20);
  }  // the connection drops
  for (int i = 0; i < 200 && server->memory_held() > 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(server->memory_held(), 0);
  expect_serving();
}

// The soak: EMBER_REMOTE_SOAK_S seconds (test.sh: 60) of 4 clients that connect, upload,
// compute, read and check against the local CPU, drop tensors and disconnect, over and over.
// Nothing may fail, and the server must end holding no memory and no session.
TEST_F(Fixture, SoakLeavesNothingBehind) {
  const char* env = std::getenv("EMBER_REMOTE_SOAK_S");
  if (!env) GTEST_SKIP() << "EMBER_REMOTE_SOAK_S not set";
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(std::atoi(env));
  std::atomic<int64_t> checks{0}, bad{0};
  std::vector<std::thread> ts;
  for (int c = 0; c < 4; ++c)
    ts.emplace_back([&, c] {
      std::mt19937 rng{uint32_t(c)};
      while (std::chrono::steady_clock::now() < until) {
        Device d = connect();
        for (int round = 0; round < 50; ++round) {
          const int64_t n = 1 + int64_t(rng() % 5000);
          std::vector<float> v(static_cast<size_t>(n));
          for (auto& x : v) x = float(int(rng() % 200) - 100) * 0.25f;
          auto local = DynTensor::from_vector<float>(v, {n});
          auto f = [](const DynTensor& x) { return (relu(x) * 3.0 - x).sum(); };
          if (f(local.to(d)).item<double>() != f(local).item<double>()) ++bad;
          ++checks;
        }
      }
    });
  for (auto& t : ts) t.join();
  EXPECT_EQ(bad.load(), 0) << "of " << checks.load();
  EXPECT_GT(checks.load(), 0);
  for (int i = 0; i < 200 && (server->sessions() > 0 || server->memory_held() > 0); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(server->sessions(), 0);
  EXPECT_EQ(server->memory_held(), 0);
}

// Loopback figures for build/reports/remote.json (EMBER_REMOTE_REPORT names the file; test.sh
// adds the conformance counts). Recorded, never asserted: speed is for benchmarks.
TEST_F(Fixture, Measurements) {
  const char* out = std::getenv("EMBER_REMOTE_REPORT");
  if (!out) GTEST_SKIP() << "EMBER_REMOTE_REPORT not set";
  using Clock = std::chrono::steady_clock;
  auto secs = [](Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); };
  Device d = connect();
  // pipelined small ops: one chain, read once at the end
  auto x = DynTensor::zeros({4}, DType::f32, d);
  constexpr int kOps = 50000;
  auto t0 = Clock::now();
  for (int i = 0; i < kOps; ++i) x = x + 1.0;
  EXPECT_EQ(x.to_vector<float>(), std::vector<float>(4, float(kOps)));
  const double ops_per_s = kOps / secs(t0);
  // the read round trip of a 1-element tensor (median of 200)
  auto one = DynTensor::ones({1}, DType::f32, d);
  (void)one.item<double>();
  std::vector<double> rt;
  for (int i = 0; i < 200; ++i) {
    t0 = Clock::now();
    (void)one.item<double>();
    rt.push_back(secs(t0) * 1e6);
  }
  std::nth_element(rt.begin(), rt.begin() + 100, rt.end());
  // 256 MB up and down, against a bare TCP socket pair moving the same bytes on this machine;
  // each the best of 3, interleaved (this machine is shared)
  const size_t n = size_t(64) << 20;
  std::vector<float> v(n, 1.5f);
  const TensorData host = TensorData::from_vector(v, Shape{int64_t(n)});
  double up = 1e9, down = 1e9, tcp = 1e9, tcp_fresh = 1e9;
  for (int rep = 0; rep < 3; ++rep) {
    t0 = Clock::now();
    auto big = DynTensor::from_data(host, d);
    d.sync();
    up = std::min(up, secs(t0));
    t0 = Clock::now();
    const TensorData back = big.into_data();
    down = std::min(down, secs(t0));
    if (rep == 0) {
      EXPECT_EQ(back.to_vector<float>(), v);
    }
    // the bare socket: into a reused 4 MiB buffer (the baseline), and, for comparison with a
    // read, into a new TensorData (its zero fill timed with the transfer, as in a read)
    for (bool fresh : {false, true}) {
      net::io_context ioc;
      tcp::acceptor acc(ioc, tcp::endpoint(net::ip::make_address("127.0.0.1"), 0));
      std::vector<char> sink_buf(size_t(4) << 20, 1);
      std::thread sink([&] {
        tcp::socket s(ioc);
        acc.accept(s);
        size_t got = 0;
        beast::error_code ec;
        if (fresh) {
          TensorData dst(Shape{int64_t(n)}, DType::f32);
          while (got < n * 4 && !ec) got += s.read_some(net::buffer(dst.bytes().data() + got, n * 4 - got), ec);
        } else {
          while (got < n * 4 && !ec) got += s.read_some(net::buffer(sink_buf), ec);
        }
      });
      tcp::socket c(ioc);
      c.connect(acc.local_endpoint());
      t0 = Clock::now();
      net::write(c, net::buffer(v.data(), n * 4));
      sink.join();
      (fresh ? tcp_fresh : tcp) = std::min(fresh ? tcp_fresh : tcp, secs(t0));
    }
  }
  double local_ms = 0, remote_ms = 0;
  train_losses(Device::cpu(), 3, &local_ms);
  train_losses(d, 3, &remote_ms);
  const double gb = double(n * 4) / 1e9;
  nlohmann::json j = {{"bad_input_cases", 11},
                      {"ops_per_s", ops_per_s},
                      {"read_roundtrip_us", rt[100]},
                      {"upload_gb_s", gb / up},
                      {"download_gb_s", gb / down},
                      {"tcp_gb_s", gb / tcp},
                      {"tcp_fresh_gb_s", gb / tcp_fresh},
                      {"upload_vs_tcp", tcp / up},
                      {"download_vs_tcp", tcp / down},
                      {"train_step_ms_local", local_ms},
                      {"train_step_ms_remote", remote_ms},
                      {"train_speed_vs_local", local_ms / remote_ms}};
  std::ofstream(out) << j.dump(2) << "\n";
  std::cout << j.dump() << "\n";
}

// wss://: a server with a self-signed certificate made here by the openssl command. A client
// that trusts it (SSL_CERT_FILE) works as over ws://; one that doesn't is refused in the TLS
// handshake, before its token is sent.
TEST(Remote, TlsSessions) {
  const std::string dir = testing::TempDir() + "/ember_remote_tls";
  const std::string cert = dir + "/cert.pem", key = dir + "/key.pem";
  const std::string cmd = "mkdir -p " + dir + " && openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1 "
                          "-addext subjectAltName=IP:127.0.0.1 -keyout " + key + " -out " + cert + " >/dev/null 2>&1";
  if (std::system(cmd.c_str()) != 0) GTEST_SKIP() << "the openssl command is not available";
  remote::ServerOptions o;
  o.port = 0;
  o.device = Device(cpu::make_backend());
  o.token = "tls-token";
  o.tls_cert = cert;
  o.tls_key = key;
  o.log = [](const std::string&) {};
  remote::Server server(o);
  server.start();
  const std::string url = "wss://127.0.0.1:" + std::to_string(server.port());
  // not trusted yet: the certificate is nobody's CA
  unsetenv("SSL_CERT_FILE");
  try {
    remote::connect(url, {.token = "tls-token", .timeout = std::chrono::milliseconds(3000)});
    ADD_FAILURE() << "a self-signed certificate was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("TLS handshake"), std::string::npos) << e.what();
  }
  setenv("SSL_CERT_FILE", cert.c_str(), 1);
  Device d = remote::connect(url, {.token = "tls-token"});
  auto x = DynTensor::from_vector<float>({1, 2, 3}, {3}, d);
  EXPECT_EQ((x * 2.0).to_vector<float>(), (std::vector<float>{2, 4, 6}));
  std::vector<float> v(3 << 19, 0.5f);  // several chunks
  EXPECT_EQ(DynTensor::from_vector<float>(v, {int64_t(v.size())}, d).to_vector<float>(), v);
  EXPECT_THROW(remote::connect(url, {.token = "wrong"}), Error);
  // a plain client against the TLS server gets an error, not a hang
  EXPECT_THROW(remote::connect("ws://127.0.0.1:" + std::to_string(server.port()),
                               {.token = "tls-token", .timeout = std::chrono::milliseconds(2000)}),
               Error);
  unsetenv("SSL_CERT_FILE");
}

TEST(Remote, DeadServerRaisesWithinTheTimeout) {
  // a listener that accepts and never answers: connect gives up after the timeout
  net::io_context ioc;
  tcp::acceptor acc(ioc, tcp::endpoint(net::ip::make_address("127.0.0.1"), 0));
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_THROW(remote::connect("ws://127.0.0.1:" + std::to_string(acc.local_endpoint().port()),
                               {.token = "x", .timeout = std::chrono::milliseconds(300)}),
               Error);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  EXPECT_THROW(remote::connect("ws://127.0.0.1:1", {.token = "x", .timeout = std::chrono::milliseconds(300)}), Error);
  EXPECT_THROW(remote::connect("http://x", {}), Error);
}

TEST(Remote, KilledServerProcessRaisesAndReconnectWorks) {
  const std::string token_file = testing::TempDir() + "/ember_remote_token";
  {
    std::ofstream f(token_file);
    f << "tok\n";
  }
  chmod(token_file.c_str(), 0600);
  auto start = [&](int port) {
    pid_t pid = fork();
    if (pid == 0) {
      const std::string listen = "127.0.0.1:" + std::to_string(port);
      execl(EMBER_SERVER_BIN, "ember-server", "--listen", listen.c_str(), "--token-file", token_file.c_str(),
            (char*)nullptr);
      _exit(127);
    }
    return pid;
  };
  // A port below Linux's ephemeral range (32768 up), so that no client socket of this machine
  // holds it; another one when a server can't bind it (the child then exits).
  int port = 0;
  pid_t pid = -1;
  std::string url;
  auto connect_retry = [&] {
    for (int i = 0;; ++i) {
      try {
        return remote::connect(url, {.token = "tok", .timeout = std::chrono::milliseconds(2000)});
      } catch (const Error&) {
        if (i > 100 || waitpid(pid, nullptr, WNOHANG) == pid) throw;  // gave up, or the server exited
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
    }
  };
  std::optional<Device> first;
  for (int attempt = 0; attempt < 20 && !first; ++attempt) {
    port = 20000 + int((getpid() * 7 + attempt * 977) % 12000);
    url = "ws://127.0.0.1:" + std::to_string(port);
    pid = start(port);
    try {
      first = connect_retry();
    } catch (const Error&) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
  }
  ASSERT_TRUE(first) << "no port to start ember-server on";
  Device d = *first;
  auto x = DynTensor::ones({1000}, DType::f32, d);
  for (int i = 0; i < 100; ++i) x = x * 1.0001;  // queued, not yet sent
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_THROW(x.to_vector<float>(), Error);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  // a new server, a new session
  pid = start(port);
  Device d2 = connect_retry();
  EXPECT_EQ((DynTensor::ones({2}, DType::f32, d2) * 4.0).to_vector<float>(), (std::vector<float>{4, 4}));
  kill(pid, SIGTERM);  // a clean stop
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

}  // namespace
}  // namespace ember
