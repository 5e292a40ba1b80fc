// init_process_group's configuration (torchrun's and OpenMPI's variables, the errors) and the
// argument checks of the collectives, in process, on a group of one rank.
#include <gtest/gtest.h>

#include <cstdlib>

#include "ember/distributed.hpp"
#include "jobs.hpp"

namespace ember::distributed {
namespace {

// Sets the given variables and clears every other one that resolve_config reads.
class Env {
 public:
  explicit Env(std::vector<std::pair<const char*, const char*>> vars) {
    clear();
    for (auto [k, v] : vars) setenv(k, v, 1);
  }
  ~Env() { clear(); }
  static void clear() {
    for (const char* k : {"RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT", "EMBER_DIST_TIMEOUT",
                          "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"})
      unsetenv(k);
  }
};

using test::error_of;

TEST(InitConfig, TorchrunVariables) {
  Env env({{"RANK", "3"},
           {"WORLD_SIZE", "4"},
           {"LOCAL_RANK", "1"},
           {"MASTER_ADDR", "10.1.2.3"},
           {"MASTER_PORT", "29500"},
           {"EMBER_DIST_TIMEOUT", "2.5"}});
  ProcessGroupConfig c = resolve_config();
  EXPECT_EQ(c.rank, 3);
  EXPECT_EQ(c.world_size, 4);
  EXPECT_EQ(c.local_rank, 1);
  EXPECT_EQ(c.master_addr, "10.1.2.3");
  EXPECT_EQ(c.master_port, 29500);
  EXPECT_EQ(c.timeout.count(), 2500);
  EXPECT_TRUE(launched_distributed());
  // Options win over the environment.
  c = resolve_config({.rank = 0, .timeout = std::chrono::milliseconds(7)});
  EXPECT_EQ(c.rank, 0);
  EXPECT_EQ(c.timeout.count(), 7);
}

TEST(InitConfig, OpenMpiVariables) {
  Env env({{"OMPI_COMM_WORLD_RANK", "5"},
           {"OMPI_COMM_WORLD_SIZE", "8"},
           {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
           {"MASTER_ADDR", "node0"},
           {"MASTER_PORT", "1234"}});
  ProcessGroupConfig c = resolve_config();
  EXPECT_EQ(c.rank, 5);
  EXPECT_EQ(c.world_size, 8);
  EXPECT_EQ(c.local_rank, 1);
  EXPECT_EQ(c.timeout.count(), 300000);
}

TEST(InitConfig, ErrorsNameTheVariable) {
  {
    Env env({});
    EXPECT_FALSE(launched_distributed());
    EXPECT_NE(error_of([] { resolve_config(); }).find("WORLD_SIZE"), std::string::npos);
  }
  {
    Env env({{"RANK", "x1"}, {"WORLD_SIZE", "2"}});
    EXPECT_NE(error_of([] { resolve_config(); }).find("RANK='x1'"), std::string::npos);
  }
  {
    Env env({{"RANK", "2"}, {"WORLD_SIZE", "2"}});
    EXPECT_NE(error_of([] { resolve_config(); }).find("RANK=2 is out of range for WORLD_SIZE=2"), std::string::npos);
  }
  {
    Env env({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "1"}});
    EXPECT_NE(error_of([] { resolve_config(); }).find("MASTER_ADDR is not set"), std::string::npos);
  }
  {
    Env env({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", "70000"}});
    EXPECT_NE(error_of([] { resolve_config(); }).find("MASTER_PORT"), std::string::npos);
  }
  {
    Env env({{"RANK", "0"}, {"WORLD_SIZE", "1"}, {"EMBER_DIST_TIMEOUT", "-1"}});
    EXPECT_NE(error_of([] { resolve_config(); }).find("EMBER_DIST_TIMEOUT"), std::string::npos);
  }
  {
    Env env({{"RANK", "0"}, {"WORLD_SIZE", "1"}});
    EXPECT_NE(error_of([] { init_process_group({.backend = "mpi"}); }).find("unknown backend 'mpi'"),
              std::string::npos);
  }
}

// A world of one: every collective returns its input (sum, max, avg of one rank), and bad
// arguments are Errors naming the collective.
TEST(SingleRank, CollectivesAndArgumentChecks) {
  Env env({});
  auto pg = init_process_group({.rank = 0, .world_size = 1, .timeout = std::chrono::seconds(5)});
  EXPECT_EQ(pg->backend(), "gloo");
  auto x = DynTensor::from_vector<float>({1.5f, -2.f, 3.f, 4.f}, {2, 2});
  EXPECT_EQ(pg->all_reduce(x, ReduceOp::avg).wait().to_vector<float>(), x.to_vector<float>());
  EXPECT_EQ(pg->all_gather(x).wait().shape(), Shape({1, 2, 2}));
  EXPECT_EQ(pg->reduce_scatter(x).wait().to_vector<float>(), x.to_vector<float>());
  Work w = pg->barrier();
  EXPECT_FALSE(w.wait().defined());
  EXPECT_TRUE(w.completed());
  EXPECT_NE(error_of([&] { pg->broadcast(x, 1); }).find("broadcast (rank 0 of 1, f32 [2, 2]) from rank 1: root must"),
            std::string::npos);
  EXPECT_NE(error_of([&] { pg->all_reduce(DynTensor()); }).find("all_reduce (rank 0 of 1): the tensor is undefined"),
            std::string::npos);
  EXPECT_NE(error_of([&] { pg->reduce_scatter(DynTensor::full({}, 1.0, DType::f32)); }).find("reduce_scatter"),
            std::string::npos);
  EXPECT_NE(error_of([&] { pg->barrier({.timeout = std::chrono::milliseconds(0)}); }).find("timeout must be positive"),
            std::string::npos);
  EXPECT_NE(error_of([] { Work().wait(); }).find("belongs to no collective"), std::string::npos);
  // A DataParallel needs a group.
  EXPECT_NE(error_of([] { DataParallel dp(nullptr); }).find("process group is null"), std::string::npos);
}

// Without a GPU (CI): "nccl" is an Error saying why (no device, or a build without NCCL), and
// "auto" picks Gloo. With a GPU, ember_nccl_tests covers both.
TEST(SingleRank, NcclWithoutAGpuIsAClearErrorAndAutoPicksGloo) {
  bool gpu = true;
  try {
    Device::cuda(0);
  } catch (const Error&) {
    gpu = false;
  }
  if (gpu) GTEST_SKIP() << "this machine has a CUDA device: ember_nccl_tests runs the NCCL group";
  Env env({});
  std::string e = error_of([] { init_process_group({.rank = 0, .world_size = 1, .backend = "nccl"}); });
  EXPECT_TRUE(e.find("the nccl backend needs a CUDA device, and this machine has none") != std::string::npos ||
              e.find("the nccl backend is not available: ember was built without NCCL") != std::string::npos)
      << e;
  auto pg = init_process_group({.rank = 0, .world_size = 1, .timeout = std::chrono::seconds(5), .backend = "auto"});
  EXPECT_EQ(pg->backend(), "gloo");
}

}  // namespace
}  // namespace ember::distributed
