// The NCCL group's tests. They need a CUDA device and skip without one (CI has none):
//  - in this process, a world of one GPU: every collective and dtype against a reference
//    computed on the host, strided and autodiff inputs, the errors for bad input;
//  - jobs of N = min(GPU count, 4) ranks started by ember-run with the worker on the NCCL group
//    (EMBER_TEST_NCCL=1), skipped with fewer than 2 GPUs: the collectives case, DataParallel
//    and ZeRO-1 equal to one process on the global batch, and the watchdog's timeout.
// Run: build/tests/distributed/ember_nccl_tests (docs/distributed.md).
#include <gtest/gtest.h>

#include <chrono>

#include "ember/distributed.hpp"
#include "ember/ember.hpp"
#include "jobs.hpp"

namespace ember::distributed {
namespace {

int gpu_count() {
  static const int n = [] {
    int k = 0;
    for (;; ++k) {
      try {
        Device::cuda(k);
      } catch (const Error&) {
        return k;  // Device::cuda throws for a GPU this machine does not have
      }
    }
  }();
  return n;
}

#define SKIP_WITHOUT_GPUS(n) \
  if (gpu_count() < (n)) GTEST_SKIP() << "needs " << (n) << " CUDA device(s); this machine has " << gpu_count()

ProcessGroupPtr solo() {
  static ProcessGroupPtr pg =
      init_process_group({.rank = 0, .world_size = 1, .timeout = std::chrono::seconds(30), .backend = "nccl"});
  return pg;
}

using test::count;
using test::error_of;

// Values exact in every dtype: small integers, negative where the dtype has them.
DynTensor values(int64_t n, DType dt, const Device& d) {
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    v[size_t(i)] = dt == DType::boolean ? double(i % 3 == 0) : double(i % 11) - (dt == DType::u8 ? 0 : 5);
  return DynTensor::from_data(TensorData::from_doubles(v, Shape({n}), dt), d);
}

std::vector<double> host(const DynTensor& t) { return t.into_data().to_vector<double>(); }

TEST(NcclSolo, EveryCollectiveAndDtypeMatchesTheHost) {
  SKIP_WITHOUT_GPUS(1);
  auto pg = solo();
  EXPECT_EQ(pg->backend(), "nccl");
  const Device d = Device::cuda(0);
  for (DType dt : {DType::f32, DType::f64, DType::f16, DType::bf16, DType::i64, DType::i32, DType::i8, DType::u8,
                   DType::boolean}) {
    for (int64_t n : {0, 1, 7919, (1 << 18) + 3}) {
      SCOPED_TRACE(std::string(dtype_name(dt)) + " [" + std::to_string(n) + "]");
      DynTensor x = values(n, dt, d);
      const std::vector<double> want = host(x);
      // several in flight before any wait: a world of one reduces to the input itself
      Work s = pg->all_reduce(x, ReduceOp::sum), m = pg->all_reduce(x, ReduceOp::max), b = pg->broadcast(x, 0),
           g = pg->all_gather(x), rs = pg->reduce_scatter(x.reshape({1, n}), ReduceOp::sum);
      DynTensor got = s.wait();
      EXPECT_EQ(got.device(), d);
      EXPECT_EQ(got.dtype(), dt);
      EXPECT_EQ(host(got), want);
      EXPECT_EQ(host(m.wait()), want);
      EXPECT_EQ(host(b.wait()), want);
      EXPECT_EQ(g.wait().shape(), Shape({1, n}));
      EXPECT_EQ(host(g.wait()), want);
      EXPECT_EQ(rs.wait().shape(), Shape({1, n}));
      EXPECT_EQ(host(rs.wait()), want);
      if (is_float(dt)) {
        EXPECT_EQ(host(pg->all_reduce(x, ReduceOp::avg).wait()), want);
      }
    }
  }
  pg->barrier().wait();
  EXPECT_GE(pg->communication_time().count(), 0);
}

TEST(NcclSolo, StridedFusionAndAutodiffInputs) {
  SKIP_WITHOUT_GPUS(1);
  auto pg = solo();
  DynTensor m = DynTensor::arange(0, 12, 1, DType::f32, Device::cuda(0)).reshape({3, 4});
  DynTensor t = m.transpose(0, 1);  // a strided view: the backend makes it contiguous on its stream
  EXPECT_EQ(host(pg->all_reduce(t).wait()), host(t));
  const Device ad = Device::cuda(0).autodiff();
  DynTensor a = t.to(ad);
  DynTensor r = pg->all_reduce(a, ReduceOp::avg).wait();
  EXPECT_EQ(r.device(), ad);
  EXPECT_EQ(host(r), host(t));
  // a fusion value: a queued elementwise result
  const Device fu = Device::cuda(0).fusion();
  DynTensor q = DynTensor::arange(0, 12, 1, DType::f32, fu) * 2.0 + 1.0;
  DynTensor f = pg->all_gather(q).wait();
  EXPECT_EQ(f.device(), fu);
  EXPECT_EQ(host(f.reshape({12})), host(q));
}

// DataParallel and ZeroOptimizer exchange metadata (parameter hashes, state sizes) in cpu
// tensors: the group stages them through its GPU and gives the result back on the cpu.
TEST(NcclSolo, CpuTensorsAreStagedThroughTheGpu) {
  SKIP_WITHOUT_GPUS(1);
  auto pg = solo();
  DynTensor x = values(1000, DType::i64, Device::cpu());
  DynTensor g = pg->all_gather(x).wait();
  EXPECT_EQ(g.device(), Device::cpu());
  EXPECT_EQ(host(g), host(x));
  EXPECT_EQ(host(pg->all_reduce(x, ReduceOp::max).wait()), host(x));
}

TEST(NcclSolo, BadInputIsAnErrorNamingTheCollective) {
  SKIP_WITHOUT_GPUS(1);
  auto pg = solo();
  const Device d = Device::cuda(0);
  EXPECT_NE(error_of([&] {
              pg->all_reduce(values(4, DType::i16, d));
            }).find("all_reduce (rank 0 of 1, i16 [4]) sum: NCCL has no i16"),
            std::string::npos);
  // bytes move for every dtype: i16 broadcasts and gathers
  EXPECT_EQ(host(pg->broadcast(values(5, DType::i16, d), 0).wait()), host(values(5, DType::i16, d)));
  EXPECT_NE(
      error_of([&] { pg->all_reduce(values(4, DType::i32, d), ReduceOp::avg); }).find("avg needs a floating dtype"),
      std::string::npos);
  EXPECT_NE(error_of([&] { pg->broadcast(values(4, DType::f32, d), 1); }).find("root must be in [0, 1)"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              pg->all_reduce(values(4, DType::f32, d), ReduceOp::sum, {.timeout = std::chrono::milliseconds(0)});
            }).find("the timeout must be positive"),
            std::string::npos);
  if (gpu_count() >= 2) {
    EXPECT_NE(error_of([&] { pg->all_reduce(values(4, DType::f32, Device::cuda(1))); }).find("runs on cuda:0"),
              std::string::npos);
  }
}

TEST(NcclSolo, AutoPicksNcclWhereThereIsAGpu) {
  SKIP_WITHOUT_GPUS(1);
  auto pg = init_process_group({.rank = 0, .world_size = 1, .timeout = std::chrono::seconds(30), .backend = "auto"});
  EXPECT_EQ(pg->backend(), "nccl");
}

// ---- jobs of several GPUs through ember-run ----

// NVLink multicast stays off unless asked for (the tests need none; on shared machines it is unsafe).
test::Result launch(int nproc, const std::string& args, int limit_s) {
  return test::run_job(nproc, args, limit_s, "EMBER_TEST_NCCL=1 EMBER_DIST_TIMEOUT=60 NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-0}", EMBER_DIST_WORKER, "");
}

int world() { return std::min(gpu_count(), 4); }

// Runs the worker case `args` on `nproc` ranks: every rank must exit 0 and print `says`.
void expect_job(int nproc, const std::string& args, const std::string& says, int limit_s = 300) {
  test::Result j = launch(nproc, args, limit_s);
  EXPECT_EQ(j.status, 0) << args << "\n" << j.output;
  EXPECT_EQ(count(j.output, says), nproc) << args << "\n" << j.output;
}

TEST(NcclJobs, OneRankCollectivesOverEmberRun) {
  SKIP_WITHOUT_GPUS(1);
  expect_job(1, "collectives", "checks, 0 failed");
}

TEST(NcclJobs, CollectivesOnEveryGpu) {
  SKIP_WITHOUT_GPUS(2);
  expect_job(world(), "collectives", "checks, 0 failed");
}

TEST(NcclJobs, DataParallelEqualsOneProcess) {
  SKIP_WITHOUT_GPUS(2);
  for (const char* args : {"", "--accum 2", "--bucket-mb 0.0000001"}) {
    if (12 % (world() * 2) != 0 && std::string(args) == "--accum 2") continue;  // the global batch is 12 rows
    expect_job(world(), std::string("data_parallel ") + args, ": ok");
  }
}

// ZeRO-1: reduce_scatter and all_gather of the flat gradients and parameters on the GPU, and
// the state's gather (cpu tensors, staged through the GPU).
TEST(NcclJobs, ZeroEqualsOneProcess) {
  SKIP_WITHOUT_GPUS(2);
  expect_job(world(), "zero", ": ok");
}

TEST(NcclJobs, SilentRankFailsTheCollectiveAtItsTimeout) {
  SKIP_WITHOUT_GPUS(2);
  expect_job(2, "nccl-timeout", "nccl-timeout: ok", 60);
}

}  // namespace
}  // namespace ember::distributed
