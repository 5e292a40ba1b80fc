// Standalone GEMM throughput probe (f32 / f64), for tuning the cpu backend.
//
//   gemm_peak [threads...]            default: 1 2
//   env GEMM_SIZES="64 128 512"       square sizes (default 64 128 256 512 1024 2048)
//   env GEMM_KC / GEMM_NC             override the f32 blocking of the best ISA
//   env GEMM_ISA=0|1|2                force scalar / avx2 / avx512
//   env GEMM_SHAPES="M,N,K,ta,tb ..."  extra f32 shapes (ta / tb = 1: transposed operand)
//   env GEMM_NO_EXTRA=1               skip the built-in extra shapes
//   env POOL_LATENCY=1                only measure thread-pool dispatch cost
#include <algorithm>
#include <array>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "backends/cpu/gemm.hpp"
#include "backends/cpu/thread_pool.hpp"

using namespace ember::cpu;

namespace {

int g_isa = -1;

template <class T>
void run(int64_t M, int64_t N, int64_t K, bool ta, bool tb, const char* label) {
  std::vector<T> A(static_cast<size_t>(M * K)), B(static_cast<size_t>(K * N)),
      C(static_cast<size_t>(M * N));
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> d(-1, 1);
  for (auto& x : A) x = d(rng);
  for (auto& x : B) x = d(rng);
  const int64_t rsa = ta ? 1 : K, csa = ta ? M : 1;
  const int64_t rsb = tb ? 1 : N, csb = tb ? K : 1;
  auto once = [&] {
    if constexpr (std::is_same_v<T, float>)
      detail::gemm_f32_isa(g_isa, M, N, K, 1.0f, A.data(), rsa, csa, B.data(), rsb, csb, 0.0f,
                           C.data(), N, 1);
    else
      detail::gemm_f64_isa(g_isa, M, N, K, 1.0, A.data(), rsa, csa, B.data(), rsb, csb, 0.0,
                           C.data(), N, 1);
  };
  const double flop = 2.0 * double(M) * double(N) * double(K);
  // Per-call minimum of wall time and of this thread's CPU time (the machine may be shared:
  // the minimum filters out calls that were preempted).
  const int reps = static_cast<int>(std::clamp(6e9 / flop, 5.0, 20000.0));
  once();
  double best = 1e30, best_cpu = 1e30, best_proc = 1e30;
  auto secs = [](const timespec& a, const timespec& b) {
    return double(b.tv_sec - a.tv_sec) + 1e-9 * double(b.tv_nsec - a.tv_nsec);
  };
  for (int r = 0; r < reps; ++r) {
    timespec c0, c1, p0, p1;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &p0);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
    auto t0 = std::chrono::steady_clock::now();
    once();
    const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &p1);
    best = std::min(best, dt);
    best_cpu = std::min(best_cpu, secs(c0, c1));
    best_proc = std::min(best_proc, secs(p0, p1));
  }
  // Process CPU time spread over the pool's threads: what the call would take if every
  // thread had its own core the whole time (includes spin-waiting, so it is conservative).
  const double proc_per_thread = best_proc / ThreadPool::global().size();
  std::printf("  %-4s %5lldx%5lldx%5lld %s%s %7.1f GFLOP/s %10.2f us  (cpu-time based: caller %6.1f,"
              " process/threads %6.1f GFLOP/s)\n",
              label, (long long)M, (long long)N, (long long)K, ta ? "T" : "N", tb ? "T" : "N",
              flop / best * 1e-9, best * 1e6, flop / best_cpu * 1e-9, flop / proc_per_thread * 1e-9);
}

// Thread-pool dispatch cost: an element-wise add over n floats, parallel vs inline.
void pool_latency() {
  ThreadPool& p = ThreadPool::global();
  std::vector<float> a(1 << 16, 1.f), b(1 << 16, 2.f), c(1 << 16);
  for (int n : {1024, 8192, 65536}) {
    const int iters = 20000;
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < iters; ++i)
      p.parallel_for(0, n, 256, [&](int64_t s, int64_t e) {
        for (int64_t j = s; j < e; ++j) c[size_t(j)] = a[size_t(j)] + b[size_t(j)];
      });
    const double us_par =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / iters;
    t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < iters; ++i) {
      for (int64_t j = 0; j < n; ++j) c[size_t(j)] = a[size_t(j)] + b[size_t(j)];
      asm volatile("" ::: "memory");
    }
    const double us_ser =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / iters;
    std::printf("  pool threads=%d n=%6d: parallel_for %.3f us, inline %.3f us\n", p.size(), n,
                us_par, us_ser);
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> threads;
  for (int i = 1; i < argc; ++i) threads.push_back(std::atoi(argv[i]));
  if (threads.empty()) threads = {1, 2};
  std::vector<int64_t> sizes = {64, 128, 256, 512, 1024, 2048};
  if (const char* s = std::getenv("GEMM_SIZES")) {
    sizes.clear();
    std::istringstream in(s);
    for (int64_t v; in >> v;) sizes.push_back(v);
  }
  g_isa = detail::gemm_best_isa();
  if (const char* s = std::getenv("GEMM_ISA")) g_isa = std::atoi(s);
  detail::GemmBlocking bl;
  if (const char* s = std::getenv("GEMM_KC")) bl.kc = std::atoll(s);
  if (const char* s = std::getenv("GEMM_NC")) bl.nc = std::atoll(s);
  detail::gemm_set_blocking_f32(g_isa, bl);
  const bool extra = std::getenv("GEMM_NO_EXTRA") == nullptr;
  // Extra shapes: GEMM_SHAPES="M,N,K,ta,tb M,N,K,ta,tb ..." (ta / tb: 0 or 1).
  std::vector<std::array<int64_t, 5>> shapes;
  if (const char* s = std::getenv("GEMM_SHAPES")) {
    std::istringstream in(s);
    for (std::string tok; in >> tok;) {
      std::array<int64_t, 5> v{0, 0, 0, 0, 0};
      std::istringstream t(tok);
      char comma;
      t >> v[0] >> comma >> v[1] >> comma >> v[2] >> comma >> v[3] >> comma >> v[4];
      shapes.push_back(v);
    }
  }
  if (std::getenv("POOL_LATENCY")) {
    for (int t : threads) {
      ThreadPool::global().set_num_threads(t);
      pool_latency();
    }
    return 0;
  }
  for (int t : threads) {
    ThreadPool::global().set_num_threads(t);
    std::printf("threads=%d isa=%d\n", t, g_isa);
    for (int64_t n : sizes) run<float>(n, n, n, false, false, "f32");
    for (const auto& v : shapes) run<float>(v[0], v[1], v[2], v[3] != 0, v[4] != 0, "f32");
    if (!extra) continue;
    run<float>(1024, 1024, 1024, true, false, "f32");
    run<float>(1024, 1024, 1024, false, true, "f32");
    run<float>(1, 1024, 784, false, true, "f32");
    run<float>(1, 1024, 784, false, false, "f32");
    run<float>(64, 1024, 784, false, true, "f32");
    run<float>(32, 32, 32, false, false, "f32");
    run<float>(16, 16, 16, false, false, "f32");
    run<double>(1024, 1024, 1024, false, false, "f64");
  }
  return 0;
}
