// Worker case "collectives": every collective, for every dtype and odd sizes, against a local
// reference. Each rank can compute every rank's input (a formula of rank and index), so the
// expected result of each collective is computed here, on the host, in double precision.
#include <cmath>
#include <cstdio>

#include "worker.hpp"

namespace ember::distributed::test {
namespace {

// Small integers, exact in every dtype (bf16 holds integers up to 256 exactly).
double input_value(int rank, int64_t i, DType dt) {
  if (dt == DType::boolean) return (i + rank) % 3 == 0 ? 1 : 0;
  double v = double((rank + 1) * (i % 7) + i % 3);
  if (is_signed_int(dt) || is_float(dt)) v -= 4;  // negatives too, where the dtype has them
  return v;
}

DynTensor input(int rank, int64_t n, DType dt) {
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = input_value(rank, i, dt);
  return DynTensor::from_data(TensorData::from_doubles(v, Shape({n}), dt), worker_device());
}

std::vector<double> values(const DynTensor& t) { return t.into_data().to_vector<double>(); }

struct Checker {
  int rank;
  int64_t checks = 0, failures = 0;
  void expect(const std::string& what, const DynTensor& got, const std::vector<double>& want, DType dt,
              const Shape& shape) {
    ++checks;
    if (got.dtype() != dt || got.shape() != shape) {
      ++failures;
      std::fprintf(stderr, "rank %d: %s: got %s %s, want %s %s\n", rank, what.c_str(),
                   std::string(dtype_name(got.dtype())).c_str(), got.shape().str().c_str(),
                   std::string(dtype_name(dt)).c_str(), shape.str().c_str());
      return;
    }
    std::vector<double> g = values(got);
    // avg of integers-valued inputs divided by the world size: rounded once in the dtype.
    double tol = dt == DType::f16 ? 1e-2 : dt == DType::bf16 ? 5e-2 : dt == DType::f32 ? 1e-6 : 1e-12;
    for (size_t i = 0; i < g.size(); ++i) {
      double w = want[i];
      if (dt == DType::boolean) w = w != 0 ? 1 : 0;
      if (std::abs(g[i] - w) > tol * std::max(1.0, std::abs(w))) {
        ++failures;
        std::fprintf(stderr, "rank %d: %s: element %zu is %g, want %g\n", rank, what.c_str(), i, g[i], w);
        return;
      }
    }
  }
};

}  // namespace

int run_collectives(const Args&) {
  auto pg = init_process_group(group_options());
  const int W = pg->size(), R = pg->rank();
  Checker c{R};
  // NCCL reduces every dtype but i16: that is an Error naming the collective and the dtype.
  auto reduces = [&](DType dt) { return !(nccl_mode() && dt == DType::i16); };
  const DType dtypes[] = {DType::f32, DType::f64, DType::f16, DType::bf16, DType::i64,
                          DType::i32, DType::i16, DType::i8,  DType::u8,   DType::boolean};
  // 0, 1, a prime, and more than one of Gloo's 1 MiB segments of f32 (and more than one
  // DataParallel bucket of 1 MB in the small-bucket tests).
  const int64_t sizes[] = {0, 1, 7919, (1 << 18) + 3};
  for (DType dt : dtypes) {
    for (int64_t n : sizes) {
      std::string tag = std::string(dtype_name(dt)) + " [" + std::to_string(n) + "]";
      DynTensor x = input(R, n, dt);
      std::vector<std::vector<double>> all;
      for (int r = 0; r < W; ++r) all.push_back(values(input(r, n, dt)));
      std::vector<double> sum(static_cast<size_t>(n), 0), mx(static_cast<size_t>(n), -1e300);
      for (int r = 0; r < W; ++r)
        for (size_t i = 0; i < sum.size(); ++i) {
          sum[i] += all[static_cast<size_t>(r)][i];
          mx[i] = std::max(mx[i], all[static_cast<size_t>(r)][i]);
        }
      if (!reduces(dt)) {
        ++c.checks;
        try {
          pg->all_reduce(x, ReduceOp::sum);
          ++c.failures;
          std::fprintf(stderr, "rank %d: all_reduce of %s did not throw\n", R, tag.c_str());
        } catch (const Error& e) {
          if (std::string(e.what()).find("NCCL has no i16") == std::string::npos) {
            ++c.failures;
            std::fprintf(stderr, "rank %d: all_reduce of %s: unexpected error %s\n", R, tag.c_str(), e.what());
          }
        }
      }
      // Issue several collectives before waiting for any: the handles are asynchronous.
      Work ws = reduces(dt) ? pg->all_reduce(x, ReduceOp::sum) : Work();
      Work wm = reduces(dt) ? pg->all_reduce(x, ReduceOp::max) : Work();
      Work wb = pg->broadcast(x, W - 1);
      Work wg = pg->all_gather(x);
      if (reduces(dt)) {
        c.expect("all_reduce sum " + tag, ws.wait(), sum, dt, Shape({n}));
        c.expect("all_reduce max " + tag, wm.wait(), mx, dt, Shape({n}));
      }
      c.expect("broadcast " + tag, wb.wait(), all[static_cast<size_t>(W - 1)], dt, Shape({n}));
      std::vector<double> gathered;
      for (auto& a : all) gathered.insert(gathered.end(), a.begin(), a.end());
      c.expect("all_gather " + tag, wg.wait(), gathered, dt, Shape({W, n}));
      if (!reduces(dt)) continue;
      if (is_float(dt)) {
        std::vector<double> avg = sum;
        for (double& v : avg) v /= W;
        c.expect("all_reduce avg " + tag, pg->all_reduce(x, ReduceOp::avg).wait(), avg, dt, Shape({n}));
      }
      // reduce_scatter of a [W * k] input: this rank's k elements of the sum.
      int64_t k = n == 0 ? 0 : n / W + 1;
      DynTensor xs = input(R, W * k, dt);
      std::vector<double> part(static_cast<size_t>(k), 0);
      for (int r = 0; r < W; ++r) {
        std::vector<double> a = values(input(r, W * k, dt));
        for (int64_t i = 0; i < k; ++i) part[static_cast<size_t>(i)] += a[static_cast<size_t>(R * k + i)];
      }
      c.expect("reduce_scatter sum " + tag, pg->reduce_scatter(xs, ReduceOp::sum).wait(), part, dt, Shape({k}));
    }
  }
  pg->barrier().wait();
  // Bad input is an Error naming the collective, before anything is sent.
  ++c.checks;
  try {
    pg->all_reduce(input(R, 4, DType::i32), ReduceOp::avg);
    ++c.failures;
    std::fprintf(stderr, "rank %d: all_reduce avg on i32 did not throw\n", R);
  } catch (const Error& e) {
    if (std::string(e.what()).find("all_reduce") == std::string::npos) ++c.failures;
  }
  std::printf("rank %d: collectives: %lld checks, %lld failed\n", R, static_cast<long long>(c.checks),
              static_cast<long long>(c.failures));
  return c.failures == 0 ? 0 : 1;
}

}  // namespace ember::distributed::test
