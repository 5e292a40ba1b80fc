// The rendezvous store: a small key-value server that rank 0 runs on MASTER_ADDR:MASTER_PORT
// (torchrun's TCPStore plays the same part), and a client that every rank, rank 0 included,
// uses to exchange what its engine needs (Gloo's transport addresses through an adapter to
// Gloo's `rendezvous::Store` interface in gloo_group.cpp, NCCL's unique id). It depends on no
// engine, so a build without Gloo still rendezvous.
//
// Wire format (all integers little-endian u32): a request is `op, key length, key, value
// length, value`; a reply is `status, value length, value`. Ops: set, get (status 1 = missing),
// hello (the value is "rank world_size"; the server refuses a world size other than its own,
// a rank out of range or one that joined twice, replying status 2 and the reason). The
// server keeps the first refusal under the key "ember/refused" so that rank 0 sees it and
// fails at once instead of waiting for a rank that will never come.
// Private to src/distributed.
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "ember/distributed/init.hpp"

namespace ember::distributed::detail {

class TcpStoreServer {
 public:
  // Listens on host:port; throws ember::Error when the address cannot be bound.
  TcpStoreServer(const std::string& host, int port, int world_size);
  ~TcpStoreServer();
  TcpStoreServer(const TcpStoreServer&) = delete;
  TcpStoreServer& operator=(const TcpStoreServer&) = delete;

 private:
  void accept_loop();
  void serve(int fd);

  int listen_fd_ = -1;
  int world_size_;
  std::atomic<bool> stopping_{false};
  std::mutex mu_;
  std::map<std::string, std::vector<char>> data_;
  std::vector<bool> joined_;
  std::vector<int> client_fds_;
  std::vector<std::thread> threads_;
  std::thread acceptor_;
};

class TcpStoreClient {
 public:
  // Connects to host:port, retrying until `timeout`; then says hello as (rank, world_size).
  // Throws ember::Error naming the address and the cause when the master cannot be reached
  // or refuses this rank.
  TcpStoreClient(const std::string& host, int port, int rank, int world_size, std::chrono::milliseconds timeout);
  ~TcpStoreClient();
  TcpStoreClient(const TcpStoreClient&) = delete;
  TcpStoreClient& operator=(const TcpStoreClient&) = delete;

  void set(const std::string& key, const std::vector<char>& data);
  // The value of `key`, waiting for it up to the client's timeout.
  std::vector<char> get(const std::string& key);
  // Waits until every key is set; throws ember::Error at the timeout or when the master refused a rank.
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout);
  std::chrono::milliseconds timeout() const { return timeout_; }

  // True when `key` is set (no waiting).
  bool check(const std::string& key);
  // The address of this end of the connection: the interface that reaches the master, which
  // is the one peers on other machines can reach this rank by.
  std::string local_address() const;

 private:
  // One request/reply round trip; returns the status and fills `value`.
  uint32_t call(uint32_t op, const std::string& key, const std::vector<char>& value, std::vector<char>& reply);
  std::string where() const;

  int fd_ = -1;
  std::string host_;
  int port_;
  int rank_;
  int world_size_;
  std::chrono::milliseconds timeout_;
  std::mutex mu_;
};

// A joined rendezvous: rank 0's server (null on the other ranks) and this rank's client.
struct Rendezvous {
  std::unique_ptr<TcpStoreServer> server;
  std::unique_ptr<TcpStoreClient> client;
};
// Joins the rendezvous of `c` (world_size > 1): rank 0 starts the server, every rank connects,
// says it joined and waits until all did. Throws ember::Error naming the missing ranks at the
// timeout, or the master's refusal. `who` starts the messages ("init_process_group (rank 1 of 2)").
Rendezvous join_rendezvous(const ProcessGroupConfig& c, const std::string& who);

// "rank R of W".
std::string rank_of(const ProcessGroupConfig& c);

}  // namespace ember::distributed::detail
