// ember-run: starts the local ranks of a data-parallel job with torchrun's environment.
//
//   ember-run --nproc 2 ./train --epochs 3
//   ember-run --nproc 4 --nnodes 2 --node-rank 0 --master 10.0.0.1:29500 ./train   # on machine 0
//   ember-run --nproc 4 --nnodes 2 --node-rank 1 --master 10.0.0.1:29500 ./train   # on machine 1
//
// Each child gets RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT (and
// GROUP_RANK, the node rank). SIGINT, SIGTERM and SIGHUP are forwarded to every child. When a
// child fails (non-zero exit or a signal), the others get `--grace` seconds to end on their own
// (their collectives fail within their timeout and they report it), then SIGTERM, then SIGKILL
// two seconds later; ember-run exits with the first failing rank's status (128 + signal for a
// signal). Without --master on one node, a free loopback port is chosen.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

volatile sig_atomic_t g_signal = 0;
void on_signal(int sig) { g_signal = sig; }

[[noreturn]] void usage(const char* msg) {
  std::fprintf(stderr,
               "ember-run: %s\nusage: ember-run --nproc N [--nnodes M --node-rank R] [--master ADDR:PORT] "
               "[--grace SECONDS] PROGRAM [ARGS...]\n",
               msg);
  std::exit(2);
}

int parse_int(const char* flag, const char* v, int lo) {
  char* end = nullptr;
  long x = v ? std::strtol(v, &end, 10) : 0;
  if (!v || !end || *end != '\0' || x < lo || x > 1 << 20) {
    std::string m = std::string(flag) + " needs an integer >= " + std::to_string(lo);
    usage(m.c_str());
  }
  return static_cast<int>(x);
}

// Signals a rank's whole process group (a rank started through a wrapper script takes its
// children along), or the process alone if its group is not set up yet.
void signal_rank(pid_t pid, int sig) {
  if (kill(-pid, sig) != 0) kill(pid, sig);
}

// A port that nothing listens on now (the kernel's choice), for single-node runs.
int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    std::perror("ember-run: choosing a free port");
    std::exit(2);
  }
  int port = ntohs(a.sin_port);
  ::close(fd);
  return port;
}

// The exit status ember-run reports for a child's wait status.
int exit_code(int status) { return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status); }
std::string describe(int status) {
  return WIFEXITED(status) ? "exited with status " + std::to_string(WEXITSTATUS(status))
                           : std::string("was killed by signal ") + std::to_string(WTERMSIG(status)) + " (" +
                                 strsignal(WTERMSIG(status)) + ")";
}

}  // namespace

int main(int argc, char** argv) {
  int nproc = -1, nnodes = 1, node_rank = 0;
  double grace = 10;
  std::string master;
  int i = 1;
  for (; i < argc && argv[i][0] == '-'; ++i) {
    std::string a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : nullptr;
    if (a == "--nproc" || a == "--nproc-per-node")
      nproc = parse_int("--nproc", v, 1), ++i;
    else if (a == "--nnodes")
      nnodes = parse_int("--nnodes", v, 1), ++i;
    else if (a == "--node-rank")
      node_rank = parse_int("--node-rank", v, 0), ++i;
    else if (a == "--master" && v)
      master = v, ++i;
    else if (a == "--grace" && v)
      grace = std::atof(v), ++i;
    else if (a == "--") {
      ++i;
      break;
    } else if (a == "-h" || a == "--help")
      usage("starts N processes of PROGRAM with torchrun's environment");
    else
      usage(("unknown option " + a).c_str());
  }
  if (nproc < 1) usage("--nproc is required");
  if (i >= argc) usage("no PROGRAM given");
  if (node_rank >= nnodes) usage("--node-rank must be less than --nnodes");
  std::string addr = "127.0.0.1";
  int port = 0;
  if (!master.empty()) {
    auto colon = master.rfind(':');
    if (colon == std::string::npos) usage("--master must be ADDR:PORT");
    addr = master.substr(0, colon);
    port = parse_int("--master's port", master.c_str() + colon + 1, 1);
  } else if (nnodes > 1) {
    usage("--master ADDR:PORT is required with --nnodes > 1");
  } else {
    port = free_port();
  }

  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  for (int s : {SIGINT, SIGTERM, SIGHUP}) sigaction(s, &sa, nullptr);

  const int world = nnodes * nproc;
  std::vector<pid_t> pids(static_cast<size_t>(nproc), -1);
  for (int local = 0; local < nproc; ++local) {
    pid_t pid = fork();
    if (pid < 0) {
      std::perror("ember-run: fork");
      for (pid_t p : pids)
        if (p > 0) signal_rank(p, SIGKILL);
      return 1;
    }
    if (pid == 0) {
      // Each child leads its own process group, so a terminal's Ctrl-C reaches ember-run, which
      // forwards it once, rather than every process twice.
      setpgid(0, 0);
      for (int s : {SIGINT, SIGTERM, SIGHUP}) signal(s, SIG_DFL);
      auto set = [](const char* k, const std::string& v) { setenv(k, v.c_str(), 1); };
      set("RANK", std::to_string(node_rank * nproc + local));
      set("WORLD_SIZE", std::to_string(world));
      set("LOCAL_RANK", std::to_string(local));
      set("LOCAL_WORLD_SIZE", std::to_string(nproc));
      set("GROUP_RANK", std::to_string(node_rank));
      set("MASTER_ADDR", addr);
      set("MASTER_PORT", std::to_string(port));
      execvp(argv[i], argv + i);
      std::fprintf(stderr, "ember-run: cannot start %s: %s\n", argv[i], std::strerror(errno));
      _exit(127);
    }
    setpgid(pid, pid);  // also here, so that the group exists before the child gets to it
    pids[static_cast<size_t>(local)] = pid;
  }

  using Clock = std::chrono::steady_clock;
  int alive = nproc;
  int result = 0;  // the first failure's exit code
  Clock::time_point failed_at{}, terminated_at{};
  bool failed = false, terminated = false, killed = false;
  int forwarded = 0;
  while (alive > 0) {
    if (g_signal && g_signal != forwarded) {
      forwarded = g_signal;
      for (pid_t p : pids)
        if (p > 0) signal_rank(p, forwarded);
    }
    int status = 0;
    pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid > 0) {
      for (size_t r = 0; r < pids.size(); ++r) {
        if (pids[r] != pid) continue;
        pids[r] = -1;
        --alive;
        bool bad = !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        if (bad && !failed) {
          failed = true;
          failed_at = Clock::now();
          result = exit_code(status);
          std::fprintf(stderr, "ember-run: rank %d (local rank %zu) %s; %s\n", node_rank * nproc + int(r), r,
                       describe(status).c_str(), alive ? "ending the other ranks" : "");
        }
      }
      continue;
    }
    auto now = Clock::now();
    if (failed && !terminated && now - failed_at > std::chrono::duration<double>(grace)) {
      terminated = true;
      terminated_at = now;
      for (pid_t p : pids)
        if (p > 0) signal_rank(p, SIGTERM);
    }
    if (terminated && !killed && now - terminated_at > std::chrono::seconds(2)) {
      killed = true;
      for (pid_t p : pids)
        if (p > 0) signal_rank(p, SIGKILL);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (!failed && forwarded) return 128 + forwarded;
  return result;
}
