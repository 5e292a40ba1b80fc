// The remote decorator: a Device whose ops run on another process (ember-server), over a
// WebSocket. docs/remote.md has the protocol, the security model and deployment.
//
//   # remote::Server server({.port = 0, .token = "secret"});
//   # server.start();
//   # const std::string url = "ws://127.0.0.1:" + std::to_string(server.port());
//   Device gpu = Device::remote(url, {.token = "secret"});  // an ordinary Device
//   auto x = DynTensor::ones({2, 3}, DType::f32, gpu);
//   auto y = (x * 2.0).sum();  // streamed to the server in batches, no round trip per op
//   double v = y.item<double>();  // a read: the one call that waits
//
// Ops stream asynchronously; only a read, sync() or memory_stats() waits for the server. An
// error the server meets while running an op (one the client's own validation could not see)
// is raised by the next call that waits. Shape and dtype errors stay eager: make_op runs on
// the client before anything is sent.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "ember/core/device.hpp"

namespace ember::remote {

// How a client connects (the same struct as Device::remote's).
using Options = RemoteOptions;

// The same as Device::remote: a device whose ops run on the server at `url`
// ("ws://host:port"). Throws an Error when the server can't be reached within the timeout,
// refuses the token, or speaks another protocol version. Each call opens a new session; when a session's server is gone, the next waiting
// call raises an Error, and a new connect() makes a new session.
Device connect(const std::string& url, const Options& options = {});

// ember-server's core: serves one device to authenticated sessions (tools/ember-server is the
// command line around it). Sessions are isolated: each sees only the tensors it made.
struct ServerOptions {
  std::string host = "127.0.0.1";  // the address to listen on
  uint16_t port = 7878;            // 0: any free port (port() tells which)
  Device device = Device::cpu();   // what the sessions' ops run on (any backend or stack)
  std::string token;               // clients must send exactly this (compared in constant time)
  int max_sessions = 64;           // sessions at once; one more is refused with an error
  int64_t max_memory = 0;          // bytes of tensors one session may hold (0: no limit)
  size_t max_frame = size_t(64) << 20;  // the largest frame a client may send
  // TLS (wss://): the certificate chain and the private key, PEM files; both or neither
  std::string tls_cert{}, tls_key{};
  // one line per session (start and end) and per server event; the token never appears.
  // Default: standard error.
  std::function<void(const std::string&)> log{};
};

// A server of ServerOptions::device: start() listens, stop() (or the destructor) ends it.
class Server {
 public:
  explicit Server(ServerOptions options);  // configures; nothing listens before start()
  ~Server();  // stop()
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;
  // Listens and serves in background threads; throws an Error when the address can't be bound.
  void start();
  uint16_t port() const;  // the port it listens on (after start)
  // Stops accepting, lets each session finish the frame it is running, closes them and waits.
  void stop();
  int sessions() const;       // sessions now open
  int64_t memory_held() const;  // bytes the open sessions' tensors hold (0 when all are gone)

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ember::remote
