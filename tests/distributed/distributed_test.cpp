// The distributed suite: each test starts a job with ember-run (the worker executable as every
// rank, on 127.0.0.1 with a free port) under a hard wall-clock limit, so a hang fails the test
// instead of the suite. The workers check values against local references themselves and exit
// non-zero on a mismatch; the fault tests check that the job fails, in time, with an
// ember::Error on the surviving ranks. `--reports DIR` writes DIR/distributed.json.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "jobs.hpp"

namespace {

std::set<int> g_world_sizes;

using ember::distributed::test::count;
using ember::distributed::test::Result;

// Runs `env ember-run --nproc N ARGS` (ARGS after the worker, or a whole command when
// `program` is given) with a wall-clock limit, capturing stdout and stderr.
Result launch(int nproc, const std::string& args, double limit_s, const std::string& env = "",
              const std::string& program = EMBER_DIST_WORKER, const std::string& launcher_args = "--grace 6") {
  g_world_sizes.insert(nproc);
  return ember::distributed::test::run_job(nproc, args, limit_s, env, program, launcher_args);
}

// ---- the launcher ----

TEST(Launcher, SetsTorchrunEnvironment) {
  Result r = launch(3, "-c 'echo env $RANK/$WORLD_SIZE/$LOCAL_RANK/$LOCAL_WORLD_SIZE/$MASTER_ADDR'", 20, "", "/bin/sh");
  ASSERT_EQ(r.status, 0) << r.output;
  for (int rank = 0; rank < 3; ++rank)
    EXPECT_EQ(count(r.output, "env " + std::to_string(rank) + "/3/" + std::to_string(rank) + "/3/127.0.0.1"), 1)
        << r.output;
}

TEST(Launcher, ExitsWithTheFailingRanksStatusAndEndsTheOthers) {
  // Rank 1 fails at once; rank 0 would sleep for a minute: ember-run must end it after the grace.
  Result r = launch(2, "-c 'if [ $RANK = 1 ]; then exit 7; fi; sleep 60'", 20, "", "/bin/sh", "--grace 1");
  EXPECT_EQ(r.status, 7) << r.output;
  EXPECT_LT(r.seconds, 10) << r.output;
  EXPECT_NE(r.output.find("rank 1 (local rank 1) exited with status 7"), std::string::npos) << r.output;
}

TEST(Launcher, ForwardsSigterm) {
  // The ranks trap SIGTERM and say so; ember-run is sent SIGTERM by a background kill.
  std::string log = ::testing::TempDir() + "ember_dist_sig.log";
  std::string cmd = std::string("timeout -k 2 20 sh -c '") + EMBER_RUN +
                    " --nproc 2 /bin/sh -c \"trap \\\"echo got-term \\$RANK; exit 5\\\" TERM; sleep 30 & wait\" >" +
                    log + " 2>&1 & pid=$!; sleep 1; kill -TERM $pid; wait $pid; echo status $? >>" + log + "'";
  auto t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(std::system(cmd.c_str()) != -1, true);
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::ifstream f(log);
  std::stringstream ss;
  ss << f.rdbuf();
  EXPECT_EQ(count(ss.str(), "got-term"), 2) << ss.str();
  EXPECT_NE(ss.str().find("status 5"), std::string::npos) << ss.str();
  EXPECT_LT(s, 10);
}

TEST(Launcher, RejectsBadArguments) {
  Result r = launch(2, "", 10, "", "", "--nnodes 2");  // more than one node needs --master
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("--master"), std::string::npos) << r.output;
}

// ---- collectives ----

class Collectives : public ::testing::TestWithParam<int> {};
TEST_P(Collectives, EveryDtypeAndSizeMatchesLocalReference) {
  const int world = GetParam();
  Result r = launch(world, "collectives", 90, "EMBER_DIST_TIMEOUT=30");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(count(r.output, " failed"), world) << r.output;
  EXPECT_EQ(count(r.output, "checks, 0 failed"), world) << r.output;
}
INSTANTIATE_TEST_SUITE_P(World, Collectives, ::testing::Values(1, 2, 3));

// ---- DataParallel: 20 steps equal one process on the global batch ----

struct DpCase {
  int world;
  const char* args;
};
void PrintTo(const DpCase& c, std::ostream* os) { *os << "world " << c.world << " '" << c.args << "'"; }
class DataParallelEquivalence : public ::testing::TestWithParam<DpCase> {};
TEST_P(DataParallelEquivalence, SameWeightsAsOneProcessOnTheGlobalBatch) {
  const DpCase& c = GetParam();
  Result r = launch(c.world, std::string("data_parallel ") + c.args, 90, "EMBER_DIST_TIMEOUT=30");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(count(r.output, ": ok"), c.world) << r.output;
}
INSTANTIATE_TEST_SUITE_P(World, DataParallelEquivalence,
                         ::testing::Values(DpCase{2, ""}, DpCase{3, ""}, DpCase{2, "--accum 2"}, DpCase{3, "--accum 2"},
                                           DpCase{3, "--bucket-mb 0.0000001"}),
                         [](const auto& info) {
                           std::string n = "world" + std::to_string(info.param.world);
                           std::string a = info.param.args;
                           if (a.find("accum") != std::string::npos) n += "_accum2";
                           if (a.find("bucket") != std::string::npos) n += "_bucket_per_param";
                           return n;
                         });

// ---- ZeRO-1: the same weights as one process running Adam; resume at another world size ----

class Zero : public ::testing::TestWithParam<int> {};
TEST_P(Zero, SameWeightsAsOneProcessWithAdam) {
  Result r = launch(GetParam(), "zero", 90, "EMBER_DIST_TIMEOUT=30");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(count(r.output, ": ok"), GetParam()) << r.output;
}
INSTANTIATE_TEST_SUITE_P(World, Zero, ::testing::Values(2, 3));

class ZeroResume : public ::testing::TestWithParam<std::pair<int, int>> {};
TEST_P(ZeroResume, CheckpointFromOneWorldSizeResumesOnAnother) {
  auto [before, after] = GetParam();
  std::string prefix = ::testing::TempDir() + "ember_zero_" + std::to_string(::getpid()) + "_" +
                       std::to_string(before) + std::to_string(after);
  Result a = launch(before, "zero --until 10 --save " + prefix, 90, "EMBER_DIST_TIMEOUT=30");
  ASSERT_EQ(a.status, 0) << a.output;
  Result b = launch(after, "zero --resume " + prefix, 90, "EMBER_DIST_TIMEOUT=30");
  ASSERT_EQ(b.status, 0) << b.output;
  EXPECT_EQ(count(b.output, "steps 10..20"), after) << b.output;
  EXPECT_EQ(count(b.output, ": ok"), after) << b.output;
  std::remove((prefix + ".model.safetensors").c_str());
  std::remove((prefix + ".optim.safetensors").c_str());
}
INSTANTIATE_TEST_SUITE_P(World, ZeroResume, ::testing::Values(std::make_pair(2, 3), std::make_pair(3, 2)),
                         [](const auto& info) {
                           return "from" + std::to_string(info.param.first) + "_to" + std::to_string(info.param.second);
                         });

// ---- faults: each job must fail, within the timeout (3 s) plus start-up, with an Error ----

struct FaultCase {
  const char* name;
  int world;
  const char* survivor_says;  // in the surviving rank 0's ember::Error
};
void PrintTo(const FaultCase& c, std::ostream* os) { *os << c.name << ", world " << c.world; }
class Faults : public ::testing::TestWithParam<FaultCase> {};
TEST_P(Faults, SurvivorsRaiseErrorInTimeAndLauncherFails) {
  const FaultCase& c = GetParam();
  Result r =
      launch(c.world, std::string("fault-") + c.name, 40, "EMBER_DIST_TIMEOUT=3", EMBER_DIST_WORKER, "--grace 2");
  EXPECT_NE(r.status, 0) << r.output;
  EXPECT_NE(r.status, 124) << "the job hung:\n" << r.output;
  EXPECT_LT(r.seconds, 15) << r.output;
  EXPECT_NE(r.output.find("rank 0: ember::Error"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(c.survivor_says), std::string::npos) << r.output;
}
INSTANTIATE_TEST_SUITE_P(
    Cases, Faults,
    ::testing::Values(FaultCase{"kill", 3, "all_reduce (rank 0 of 3"},
                      FaultCase{"kill-ddp", 3, "all_reduce (rank 0 of 3"}, FaultCase{"stall", 2, "Timed out"},
                      FaultCase{"never-joins", 2, "rank(s) 1 did not join"},
                      FaultCase{"world-size", 2, "WORLD_SIZE=3 but the master (rank 0) has WORLD_SIZE=2"},
                      FaultCase{"master", 2, "rank(s) 1 did not join"}, FaultCase{"shape", 2, "shape"}),
    [](const auto& info) {
      std::string n = info.param.name;
      for (char& ch : n)
        if (ch == '-') ch = '_';
      return n;
    });

// The culprit of fault-master itself says why it could not join.
TEST(FaultDetails, UnreachableMasterIsNamed) {
  Result r = launch(2, "fault-master", 40, "EMBER_DIST_TIMEOUT=3");
  EXPECT_NE(r.output.find("rank 1: ember::Error"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("cannot reach the master at 127.0.0.1:1"), std::string::npos) << r.output;
}

// ---- under OpenMPI's mpirun (when installed): ranks from OMPI_COMM_WORLD_*, master exported ----

int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  int port = 0;
  if (fd >= 0 && ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
    port = ntohs(a.sin_port);
  if (fd >= 0) ::close(fd);
  return port;
}

TEST(Mpirun, CollectivesAndDataParallel) {
  if (std::system("command -v mpirun >/dev/null 2>&1") != 0) GTEST_SKIP() << "mpirun is not installed (openmpi-bin)";
  for (auto [np, args] : {std::pair<int, std::string>{3, "collectives"}, {2, "data_parallel --accum 2"}}) {
    g_world_sizes.insert(np);
    std::string log = ::testing::TempDir() + "ember_dist_mpi.log";
    std::string cmd = "timeout -k 2 90 mpirun --allow-run-as-root --oversubscribe -np " + std::to_string(np) +
                      " -x MASTER_ADDR=127.0.0.1 -x MASTER_PORT=" + std::to_string(free_port()) +
                      " -x EMBER_DIST_TIMEOUT=30 " + EMBER_DIST_WORKER + " " + args + " >" + log + " 2>&1";
    int rc = std::system(cmd.c_str());
    std::ifstream f(log);
    std::stringstream ss;
    ss << f.rdbuf();
    EXPECT_EQ(rc, 0) << ss.str();
    for (int r = 0; r < np; ++r)
      EXPECT_NE(ss.str().find("rank " + std::to_string(r) + ": " + args.substr(0, args.find(' '))), std::string::npos)
          << ss.str();
    EXPECT_EQ(count(ss.str(), args == "collectives" ? "checks, 0 failed" : ": ok"), np) << ss.str();
  }
}

// ---- the report test.sh reads ----

class Report : public ::testing::EmptyTestEventListener {
 public:
  explicit Report(std::string path) : path_(std::move(path)) {}
  void OnTestEnd(const ::testing::TestInfo& info) override {
    ++cases_;
    if (info.result()->Failed()) ++failed_;
    if (std::string(info.test_suite_name()).find("Faults") != std::string::npos) ++faults_;
  }
  void OnTestProgramEnd(const ::testing::UnitTest&) override {
    std::ofstream f(path_);
    f << "{\"world_sizes\": [";
    bool first = true;
    for (int w : g_world_sizes) f << (first ? "" : ", ") << w, first = false;
    f << "], \"cases\": " << cases_ << ", \"failed\": " << failed_ << ", \"fault_cases\": " << faults_ << "}\n";
  }

 private:
  std::string path_;
  int cases_ = 0, failed_ = 0, faults_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  for (int i = 1; i + 1 < argc; ++i)
    if (std::string(argv[i]) == "--reports")
      ::testing::UnitTest::GetInstance()->listeners().Append(
          new Report(std::string(argv[i + 1]) + "/distributed.json"));
  return RUN_ALL_TESTS();
}
