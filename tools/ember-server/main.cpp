// ember-server: serves a local device to ember clients (remote::connect) over WebSocket.
//   ember-server --listen 127.0.0.1:7878 --device cuda:0 [--fusion] --token-file FILE
//                [--tls-cert CERT.pem --tls-key KEY.pem] [--max-sessions N] [--max-memory BYTES]
//                [--max-frame BYTES]
// One log line per session on standard error; SIGTERM or SIGINT stops it cleanly (each session
// finishes the frame it is running). docs/remote.md covers deployment.
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include <ember/decorators/remote.hpp>
#include <ember/ember.hpp>

namespace {

const char* kUsage =
    "usage: ember-server --listen HOST:PORT --token-file FILE [--device cpu|cuda:N] [--fusion]\n"
    "                    [--tls-cert CERT.pem --tls-key KEY.pem] [--max-sessions N] [--max-memory BYTES]\n"
    "                    [--max-frame BYTES]\n";

int64_t number(const std::string& flag, const std::string& v) {
  char* end = nullptr;
  const long long n = std::strtoll(v.c_str(), &end, 10);
  EMBER_CHECK(end && *end == 0 && !v.empty() && n >= 0, "ember-server: ", flag, ": \"", v, "\" is not a count");
  return n;
}

ember::Device device_of(const std::string& s, bool fusion) {
  ember::Device d = ember::Device::cpu();
  if (s.rfind("cuda", 0) == 0) {
    const std::string idx = s.size() > 5 && s[4] == ':' ? s.substr(5) : "0";
    d = ember::Device::cuda(int(number("--device", idx)));
  } else {
    EMBER_CHECK(s == "cpu", "ember-server: --device: \"", s, "\": expected cpu or cuda:N");
  }
  return fusion ? d.fusion() : d;
}

std::string read_token(const std::string& path) {
  struct stat st {};
  EMBER_CHECK(stat(path.c_str(), &st) == 0, "ember-server: --token-file: can't read ", path);
  if (st.st_mode & (S_IRWXG | S_IRWXO))
    std::cerr << "ember-server: warning: " << path << " is readable by other users (chmod 600 it)\n";
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  std::string t = ss.str();
  while (!t.empty() && (t.back() == '\n' || t.back() == '\r' || t.back() == ' ')) t.pop_back();
  EMBER_CHECK(!t.empty(), "ember-server: --token-file: ", path, " is empty");
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    ember::remote::ServerOptions o;
    std::string listen, device = "cpu", token_file;
    bool fusion = false;
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      auto value = [&]() -> std::string {
        EMBER_CHECK(i + 1 < argc, "ember-server: ", a, " needs a value\n", kUsage);
        return argv[++i];
      };
      if (a == "--listen") listen = value();
      else if (a == "--device") device = value();
      else if (a == "--fusion") fusion = true;
      else if (a == "--token-file") token_file = value();
      else if (a == "--max-sessions") o.max_sessions = int(number(a, value()));
      else if (a == "--max-memory") o.max_memory = number(a, value());
      else if (a == "--max-frame") o.max_frame = size_t(number(a, value()));
      else if (a == "--tls-cert") o.tls_cert = value();
      else if (a == "--tls-key") o.tls_key = value();
      else if (a == "--help" || a == "-h") {
        std::cout << kUsage;
        return 0;
      } else {
        EMBER_FAIL("ember-server: unknown argument ", a, "\n", kUsage);
      }
    }
    EMBER_CHECK(!listen.empty() && !token_file.empty(), "ember-server: --listen and --token-file are required\n", kUsage);
    const size_t colon = listen.rfind(':');
    EMBER_CHECK(colon != std::string::npos, "ember-server: --listen: \"", listen, "\": expected HOST:PORT");
    o.host = listen.substr(0, colon);
    const int64_t port = number("--listen", listen.substr(colon + 1));
    EMBER_CHECK(port <= 65535, "ember-server: --listen: port ", port, " out of range");
    o.port = uint16_t(port);
    o.token = read_token(token_file);
    o.device = device_of(device, fusion);

    // the signals are taken by sigwait below, never by the serving threads
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    signal(SIGPIPE, SIG_IGN);
    ember::remote::Server server(o);
    server.start();
    int sig = 0;
    sigwait(&set, &sig);
    std::cerr << "ember-server: " << (sig == SIGTERM ? "SIGTERM" : "SIGINT") << ": finishing the sessions' work\n";
    server.stop();
    return 0;
  } catch (const std::exception& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
}
