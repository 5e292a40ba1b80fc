// Helpers of the distributed tests: running a job through ember-run under a wall-clock limit,
// counting lines in its output, and the message of an expected ember::Error.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>

#include "ember/core/error.hpp"

namespace ember::distributed::test {

#ifdef EMBER_RUN  // the job tests, which know where ember-run is
struct Result {
  int status = -1;  // the launcher's exit status; 124 when the wall-clock limit killed it
  std::string output;
  double seconds = 0;
};

// Runs `env ENV timeout LIMIT ember-run --nproc N LAUNCHER_ARGS PROGRAM ARGS`, capturing stdout and stderr.
inline Result run_job(int nproc, const std::string& args, double limit_s, const std::string& env,
                      const std::string& program, const std::string& launcher_args) {
  std::string log = ::testing::TempDir() + "ember_dist_" + std::to_string(::getpid()) + ".log";
  std::ostringstream cmd;
  cmd << "env " << env << " timeout -k 2 " << limit_s << " " << EMBER_RUN << " --nproc " << nproc << " "
      << launcher_args << " " << program << " " << args << " >" << log << " 2>&1";
  auto t0 = std::chrono::steady_clock::now();
  int rc = std::system(cmd.str().c_str());
  Result r;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.status = WIFEXITED(rc) ? WEXITSTATUS(rc) : 128 + WTERMSIG(rc);
  std::ifstream f(log);
  std::stringstream ss;
  ss << f.rdbuf();
  r.output = ss.str();
  std::remove(log.c_str());
  return r;
}
#endif

// How often `what` occurs in `text`.
inline int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

// The message of the ember::Error `f` throws; "(no error)" when it throws none.
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace ember::distributed::test
