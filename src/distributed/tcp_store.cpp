#include "tcp_store.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <sstream>

#include "ember/core/error.hpp"

namespace ember::distributed::detail {
namespace {

enum : uint32_t { kSet = 1, kGet = 2, kHello = 3 };
enum : uint32_t { kOk = 0, kMissing = 1, kRefused = 2 };
constexpr const char* kRefusedKey = "ember/refused";
using Clock = std::chrono::steady_clock;

// Full writes and reads; false when the peer closed or the socket failed (or timed out).
bool send_all(int fd, const void* p, size_t n) {
  auto* c = static_cast<const char*>(p);
  while (n > 0) {
    ssize_t k = ::send(fd, c, n, MSG_NOSIGNAL);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    c += k;
    n -= static_cast<size_t>(k);
  }
  return true;
}
bool recv_all(int fd, void* p, size_t n) {
  auto* c = static_cast<char*>(p);
  while (n > 0) {
    ssize_t k = ::recv(fd, c, n, 0);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    c += k;
    n -= static_cast<size_t>(k);
  }
  return true;
}
bool send_u32(int fd, uint32_t v) { return send_all(fd, &v, 4); }
bool recv_u32(int fd, uint32_t& v) { return recv_all(fd, &v, 4); }
bool send_blob(int fd, const void* p, size_t n) { return send_u32(fd, static_cast<uint32_t>(n)) && send_all(fd, p, n); }
bool recv_blob(int fd, std::vector<char>& out) {
  uint32_t n = 0;
  if (!recv_u32(fd, n) || n > (64u << 20)) return false;  // store values are addresses: small
  out.resize(n);
  return recv_all(fd, out.data(), n);
}

struct AddrInfo {
  addrinfo* list = nullptr;
  ~AddrInfo() {
    if (list) freeaddrinfo(list);
  }
};
void resolve(const std::string& host, int port, AddrInfo& ai, const char* who) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  int rc = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &ai.list);
  EMBER_CHECK(rc == 0 && ai.list, who, ": cannot resolve the master address '", host, "': ", gai_strerror(rc));
}

void set_io_timeout(int fd, std::chrono::milliseconds t) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(t.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((t.count() % 1000) * 1000);
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

// A non-blocking connect bounded by `t`; returns the socket or -1 with errno set.
int connect_within(const addrinfo* a, std::chrono::milliseconds t) {
  int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
  if (fd < 0) return -1;
  int flags = fcntl(fd, F_GETFL, 0);
  fcntl(fd, F_SETFL, flags | O_NONBLOCK);
  int rc = ::connect(fd, a->ai_addr, a->ai_addrlen);
  if (rc != 0 && errno == EINPROGRESS) {
    pollfd p{fd, POLLOUT, 0};
    int ready = ::poll(&p, 1, static_cast<int>(std::max<int64_t>(1, t.count())));
    if (ready == 1) {
      int err = 0;
      socklen_t len = sizeof err;
      getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
      rc = err == 0 ? 0 : -1;
      errno = err;
    } else {
      rc = -1;
      if (ready == 0) errno = ETIMEDOUT;
    }
  }
  if (rc != 0) {
    int e = errno;
    ::close(fd);
    errno = e;
    return -1;
  }
  fcntl(fd, F_SETFL, flags);
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

}  // namespace

// ---------------------------------------------------------------- server

TcpStoreServer::TcpStoreServer(const std::string& host, int port, int world_size)
    : world_size_(world_size), joined_(static_cast<size_t>(world_size), false) {
  AddrInfo ai;
  resolve(host, port, ai, "init_process_group (rank 0, the master)");
  int err = 0;
  for (addrinfo* a = ai.list; a; a = a->ai_next) {
    int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      err = errno;
      continue;
    }
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, 128) == 0) {
      listen_fd_ = fd;
      break;
    }
    err = errno;
    ::close(fd);
  }
  EMBER_CHECK(listen_fd_ >= 0, "init_process_group (rank 0, the master): cannot listen on ", host, ":", port, ": ",
              std::strerror(err), " (MASTER_ADDR must be an address of rank 0's machine and MASTER_PORT a free port)");
  acceptor_ = std::thread([this] { accept_loop(); });
}

TcpStoreServer::~TcpStoreServer() {
  stopping_ = true;
  acceptor_.join();
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (int fd : client_fds_) ::shutdown(fd, SHUT_RDWR);  // wakes the serving threads
  }
  for (auto& t : threads_) t.join();
  for (int fd : client_fds_) ::close(fd);
  ::close(listen_fd_);
}

void TcpStoreServer::accept_loop() {
  while (!stopping_) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (::poll(&p, 1, 50) != 1) continue;
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    std::lock_guard<std::mutex> lock(mu_);
    client_fds_.push_back(fd);
    threads_.emplace_back([this, fd] { serve(fd); });
  }
}

void TcpStoreServer::serve(int fd) {
  for (;;) {
    uint32_t op = 0;
    std::vector<char> key, value;
    if (!recv_u32(fd, op) || !recv_blob(fd, key) || !recv_blob(fd, value)) return;
    std::string k(key.begin(), key.end());
    uint32_t status = kOk;
    std::vector<char> reply;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (op == kSet) {
        data_[k] = std::move(value);
      } else if (op == kGet) {
        auto it = data_.find(k);
        if (it == data_.end())
          status = kMissing;
        else
          reply = it->second;
      } else if (op == kHello) {
        int rank = -1, world = -1;
        std::istringstream(std::string(value.begin(), value.end())) >> rank >> world;
        std::ostringstream why;
        if (world != world_size_)
          why << "rank " << rank << " has WORLD_SIZE=" << world
              << " but the master (rank 0) has WORLD_SIZE=" << world_size_;
        else if (rank < 0 || rank >= world_size_)
          why << "RANK=" << rank << " is out of range for WORLD_SIZE=" << world_size_;
        else if (joined_[static_cast<size_t>(rank)])
          why << "two processes joined as rank " << rank;
        else
          joined_[static_cast<size_t>(rank)] = true;
        if (!why.str().empty()) {
          status = kRefused;
          std::string s = why.str();
          reply.assign(s.begin(), s.end());
          data_.try_emplace(kRefusedKey, reply);
        }
      } else {
        return;  // not our protocol: drop the connection
      }
    }
    if (!send_u32(fd, status) || !send_blob(fd, reply.data(), reply.size())) return;
  }
}

// ---------------------------------------------------------------- client

TcpStoreClient::TcpStoreClient(const std::string& host, int port, int rank, int world_size,
                               std::chrono::milliseconds timeout)
    : host_(host), port_(port), rank_(rank), world_size_(world_size), timeout_(timeout) {
  AddrInfo ai;
  resolve(host, port, ai, "init_process_group");
  const auto deadline = Clock::now() + timeout;
  int err = 0;
  // The master may start after us: retry until the deadline, as torchrun's agents do.
  while (fd_ < 0) {
    for (addrinfo* a = ai.list; a && fd_ < 0; a = a->ai_next) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      fd_ = connect_within(a, std::max(left, std::chrono::milliseconds(1)));
      if (fd_ < 0) err = errno;
    }
    if (fd_ >= 0 || Clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EMBER_CHECK(fd_ >= 0, "init_process_group: cannot reach the master at ", where(), " within ", timeout.count(),
              " ms (rank ", rank, " of ", world_size, "): ", std::strerror(err),
              "; check MASTER_ADDR/MASTER_PORT and that rank 0 is running");
  set_io_timeout(fd_, timeout);
  std::string hello = std::to_string(rank) + " " + std::to_string(world_size);
  std::vector<char> reply;
  uint32_t status = call(kHello, "", std::vector<char>(hello.begin(), hello.end()), reply);
  EMBER_CHECK(status == kOk, "init_process_group: the master at ", where(), " refused rank ", rank, ": ",
              std::string(reply.begin(), reply.end()));
}

TcpStoreClient::~TcpStoreClient() {
  if (fd_ >= 0) ::close(fd_);
}

std::string TcpStoreClient::where() const { return host_ + ":" + std::to_string(port_); }

uint32_t TcpStoreClient::call(uint32_t op, const std::string& key, const std::vector<char>& value,
                              std::vector<char>& reply) {
  std::lock_guard<std::mutex> lock(mu_);
  uint32_t status = 0;
  bool ok = send_u32(fd_, op) && send_blob(fd_, key.data(), key.size()) && send_blob(fd_, value.data(), value.size()) &&
            recv_u32(fd_, status) && recv_blob(fd_, reply);
  EMBER_CHECK(ok, "rendezvous store (rank ", rank_, " of ", world_size_, "): the connection to the master at ", where(),
              " failed: ", errno ? std::strerror(errno) : "closed by the master", "; rank 0 has probably exited");
  return status;
}

void TcpStoreClient::set(const std::string& key, const std::vector<char>& data) {
  std::vector<char> reply;
  call(kSet, key, data, reply);
}

std::vector<char> TcpStoreClient::get(const std::string& key) {
  wait({key}, timeout_);
  std::vector<char> reply;
  call(kGet, key, {}, reply);
  return reply;
}

bool TcpStoreClient::check(const std::string& key) {
  std::vector<char> reply;
  return call(kGet, key, {}, reply) == kOk;
}

void TcpStoreClient::wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) {
  const auto deadline = Clock::now() + timeout;
  std::vector<char> reply;
  for (const std::string& key : keys) {
    for (;;) {
      if (call(kGet, key, {}, reply) == kOk) break;
      // A refused rank will never come: fail now rather than at the deadline.
      if (call(kGet, kRefusedKey, {}, reply) == kOk)
        EMBER_FAIL("init_process_group (rank ", rank_, " of ", world_size_,
                   "): the master refused a rank: ", std::string(reply.begin(), reply.end()));
      EMBER_CHECK(Clock::now() < deadline, "rendezvous (rank ", rank_, " of ", world_size_, ", master ", where(),
                  "): timed out after ", timeout.count(), " ms waiting for '", key, "'");
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
}

std::string TcpStoreClient::local_address() const {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  getsockname(fd_, reinterpret_cast<sockaddr*>(&ss), &len);
  char buf[INET6_ADDRSTRLEN] = {};
  if (ss.ss_family == AF_INET6)
    inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(&ss)->sin6_addr, buf, sizeof buf);
  else
    inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(&ss)->sin_addr, buf, sizeof buf);
  return buf;
}

}  // namespace ember::distributed::detail

namespace ember::distributed::detail {

std::string rank_of(const ProcessGroupConfig& c) {
  return "rank " + std::to_string(c.rank) + " of " + std::to_string(c.world_size);
}

Rendezvous join_rendezvous(const ProcessGroupConfig& c, const std::string& who) {
  Rendezvous r;
  if (c.rank == 0) r.server = std::make_unique<TcpStoreServer>(c.master_addr, c.master_port, c.world_size);
  r.client = std::make_unique<TcpStoreClient>(c.master_addr, c.master_port, c.rank, c.world_size, c.timeout);
  // Every rank says it joined, then waits for all: a rank that never comes is named here,
  // before the engine's own connection step, whose error would not say which rank is missing.
  TcpStoreClient& client = *r.client;
  client.set("ember/joined/" + std::to_string(c.rank), {'1'});
  const auto deadline = Clock::now() + c.timeout;
  for (;;) {
    std::vector<int> missing;
    for (int k = 0; k < c.world_size; ++k)
      if (!client.check("ember/joined/" + std::to_string(k))) missing.push_back(k);
    if (client.check(kRefusedKey)) client.wait({"never"}, std::chrono::milliseconds(0));  // raises the refusal
    if (missing.empty()) break;
    if (Clock::now() >= deadline) {
      std::ostringstream os;
      for (size_t i = 0; i < missing.size(); ++i) os << (i ? ", " : "") << missing[i];
      EMBER_FAIL(who, ": rank(s) ", os.str(), " did not join within ", c.timeout.count(), " ms (master ", c.master_addr,
                 ":", c.master_port, ")");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return r;
}

}  // namespace ember::distributed::detail
