#include "backends/cpu/gemm.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "backends/cpu/thread_pool.hpp"

namespace ember::cpu {
namespace {

// A strided matrix view over its own storage.
enum class Layout { kRow, kCol, kRowPad, kColPad, kBothStrided, kNegRows, kHuge };

template <class T>
struct Strided {
  std::vector<T> buf;
  int64_t rows = 0, cols = 0, rs = 0, cs = 0, off = 0;
  T* data() { return buf.data() + off; }
  const T* data() const { return buf.data() + off; }
  T& at(int64_t i, int64_t j) { return buf[static_cast<size_t>(off + i * rs + j * cs)]; }
  T at(int64_t i, int64_t j) const { return buf[static_cast<size_t>(off + i * rs + j * cs)]; }
};

template <class T>
Strided<T> make(int64_t rows, int64_t cols, Layout l) {
  Strided<T> m;
  m.rows = rows;
  m.cols = cols;
  switch (l) {
    case Layout::kRow: m.rs = cols; m.cs = 1; break;
    case Layout::kCol: m.rs = 1; m.cs = rows; break;
    case Layout::kRowPad: m.rs = cols + 3; m.cs = 1; break;
    case Layout::kColPad: m.rs = 1; m.cs = rows + 5; break;
    case Layout::kBothStrided: m.rs = 2 * cols + 1; m.cs = 2; break;
    case Layout::kNegRows: m.rs = -cols; m.cs = 1; m.off = (rows > 0 ? rows - 1 : 0) * cols; break;
    case Layout::kHuge: m.rs = int64_t(1) << 16; m.cs = 1; break;
  }
  int64_t hi = 0;
  if (rows > 0 && cols > 0) {
    hi = m.off;
    hi += m.rs > 0 ? (rows - 1) * m.rs : 0;
    hi += m.cs > 0 ? (cols - 1) * m.cs : 0;
  }
  m.buf.assign(static_cast<size_t>(hi + 1), T(0));
  return m;
}

template <class T>
void fill(Strided<T>& m, std::mt19937& rng) {
  if constexpr (std::is_floating_point_v<T>) {
    std::uniform_real_distribution<double> d(-1.0, 1.0);
    for (int64_t i = 0; i < m.rows; ++i)
      for (int64_t j = 0; j < m.cols; ++j) m.at(i, j) = static_cast<T>(d(rng));
  } else {
    std::uniform_int_distribution<int> d(-100, 100);
    for (int64_t i = 0; i < m.rows; ++i)
      for (int64_t j = 0; j < m.cols; ++j) m.at(i, j) = static_cast<T>(d(rng));
  }
}

std::vector<int> isas() {
  std::vector<int> v;
  for (int i = 0; i <= detail::gemm_best_isa(); ++i) v.push_back(i);
  return v;
}

template <class T>
void call_gemm(int isa, int64_t M, int64_t N, int64_t K, T alpha, const Strided<T>& A,
               const Strided<T>& B, T beta, Strided<T>& C) {
  if constexpr (std::is_same_v<T, float>)
    detail::gemm_f32_isa(isa, M, N, K, alpha, A.data(), A.rs, A.cs, B.data(), B.rs, B.cs, beta,
                         C.data(), C.rs, C.cs);
  else
    detail::gemm_f64_isa(isa, M, N, K, alpha, A.data(), A.rs, A.cs, B.data(), B.rs, B.cs, beta,
                         C.data(), C.rs, C.cs);
}

// Checks one product against a double-precision reference. Returns false on the first error.
template <class T>
bool check_one(int isa, int64_t M, int64_t N, int64_t K, Layout la, Layout lb, Layout lc,
               T alpha, T beta, std::mt19937& rng) {
  Strided<T> A = make<T>(M, K, la), B = make<T>(K, N, lb), C = make<T>(M, N, lc);
  fill(A, rng);
  fill(B, rng);
  fill(C, rng);
  Strided<T> C0 = C;
  if (beta == T(0)) {
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) C.at(i, j) = std::numeric_limits<T>::quiet_NaN();
  }
  // Sentinel in the gaps of C must survive.
  std::vector<T> before = C.buf;
  call_gemm<T>(isa, M, N, K, alpha, A, B, beta, C);
  const double eps = std::numeric_limits<T>::epsilon();
  for (int64_t i = 0; i < M; ++i) {
    for (int64_t j = 0; j < N; ++j) {
      double s = 0, sabs = 0;
      for (int64_t k = 0; k < K; ++k) {
        const double p = double(A.at(i, k)) * double(B.at(k, j));
        s += p;
        sabs += std::fabs(p);
      }
      double ref = double(alpha) * s;
      double scale = std::fabs(double(alpha)) * sabs;
      if (beta != T(0)) {
        ref += double(beta) * double(C0.at(i, j));
        scale += std::fabs(double(beta) * double(C0.at(i, j)));
      }
      const double got = double(C.at(i, j));
      const double tol = 2.0 * double(K + 4) * eps * scale + 1e-30;
      if (!(std::fabs(got - ref) <= tol)) {
        ADD_FAILURE() << "isa=" << isa << " M=" << M << " N=" << N << " K=" << K
                      << " la=" << int(la) << " lb=" << int(lb) << " lc=" << int(lc)
                      << " alpha=" << alpha << " beta=" << beta << " at (" << i << "," << j
                      << "): got " << got << " want " << ref << " tol " << tol;
        return false;
      }
    }
  }
  // Elements outside the M x N view were not touched.
  std::vector<char> inside(C.buf.size(), 0);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) inside[static_cast<size_t>(C.off + i * C.rs + j * C.cs)] = 1;
  for (size_t t = 0; t < C.buf.size(); ++t) {
    if (!inside[t] && !(C.buf[t] == before[t])) {
      ADD_FAILURE() << "isa=" << isa << " M=" << M << " N=" << N << " K=" << K
                    << ": wrote outside C at offset " << t;
      return false;
    }
  }
  return true;
}

const Layout kAB[] = {Layout::kRow, Layout::kCol};

TEST(Gemm, SmallShapesAllTransposes) {
  std::mt19937 rng(1);
  for (int isa : isas()) {
    for (int64_t M = 1; M <= 17; ++M)
      for (int64_t N = 1; N <= 17; ++N)
        for (int64_t K : {1, 3, 16, 17}) {
          for (Layout la : kAB)
            for (Layout lb : kAB)
              ASSERT_TRUE(check_one<float>(isa, M, N, K, la, lb, Layout::kRow, 1.0f, 0.0f, rng));
        }
  }
}

TEST(Gemm, OddShapes) {
  std::mt19937 rng(2);
  const int64_t sizes[] = {1, 7, 14, 15, 31, 33, 127, 129};
  for (int isa : isas()) {
    for (int64_t M : sizes)
      for (int64_t N : sizes)
        for (int64_t K : sizes) {
          if (M * N * K > 129 * 129 * 33) continue;
          for (Layout la : kAB)
            for (Layout lb : kAB)
              ASSERT_TRUE(
                  check_one<float>(isa, M, N, K, la, lb, Layout::kRow, 0.5f, -1.5f, rng));
        }
    for (Layout la : kAB)
      for (Layout lb : kAB)
        ASSERT_TRUE(check_one<float>(isa, 129, 127, 129, la, lb, Layout::kRow, 1.0f, 1.0f, rng));
  }
}

TEST(Gemm, AlphaBetaCombos) {
  std::mt19937 rng(3);
  for (int isa : isas()) {
    for (float alpha : {1.0f, -2.0f, 0.0f, 0.25f})
      for (float beta : {0.0f, 1.0f, -1.0f, 0.5f})
        for (int64_t n : {5, 40, 70})
          ASSERT_TRUE(check_one<float>(isa, n, n + 3, n - 1, Layout::kRow, Layout::kRow,
                                       Layout::kRow, alpha, beta, rng));
  }
}

TEST(Gemm, Strides) {
  std::mt19937 rng(4);
  const Layout all[] = {Layout::kRow,          Layout::kCol,     Layout::kRowPad, Layout::kColPad,
                        Layout::kBothStrided, Layout::kNegRows};
  for (int isa : isas()) {
    for (Layout la : all)
      for (Layout lb : all)
        for (Layout lc : all) {
          ASSERT_TRUE(check_one<float>(isa, 19, 37, 23, la, lb, lc, 1.0f, 0.0f, rng));
          ASSERT_TRUE(check_one<float>(isa, 1, 37, 23, la, lb, lc, 2.0f, 1.0f, rng));
          ASSERT_TRUE(check_one<float>(isa, 37, 1, 23, la, lb, lc, 1.0f, -1.0f, rng));
        }
    // Huge strides.
    for (Layout lb : kAB) {
      ASSERT_TRUE(check_one<float>(isa, 5, 40, 9, Layout::kHuge, lb, Layout::kHuge, 1.0f, 0.5f, rng));
      ASSERT_TRUE(check_one<float>(isa, 3, 50, 4, Layout::kRow, Layout::kHuge, Layout::kRow, 1.0f, 0.0f, rng));
    }
  }
}

TEST(Gemm, DegenerateSizes) {
  for (int isa : isas()) {
    // K == 0: C = beta * C, or zeros when beta == 0 (even over NaN).
    std::vector<float> C(12, 2.0f);
    detail::gemm_f32_isa(isa, 3, 4, 0, 1.0f, nullptr, 0, 1, nullptr, 4, 1, 0.5f, C.data(), 4, 1);
    for (float v : C) EXPECT_EQ(v, 1.0f);
    std::fill(C.begin(), C.end(), std::numeric_limits<float>::quiet_NaN());
    detail::gemm_f32_isa(isa, 3, 4, 0, 1.0f, nullptr, 0, 1, nullptr, 4, 1, 0.0f, C.data(), 4, 1);
    for (float v : C) EXPECT_EQ(v, 0.0f);
    // M == 0 / N == 0: nothing happens.
    detail::gemm_f32_isa(isa, 0, 4, 3, 1.0f, nullptr, 3, 1, nullptr, 4, 1, 0.0f, nullptr, 4, 1);
    detail::gemm_f32_isa(isa, 3, 0, 3, 1.0f, nullptr, 3, 1, nullptr, 4, 1, 0.0f, nullptr, 4, 1);
    std::mt19937 rng(5);
    ASSERT_TRUE(check_one<float>(isa, 1, 1, 1, Layout::kRow, Layout::kRow, Layout::kRow, 1.0f, 0.0f, rng));
    ASSERT_TRUE(check_one<float>(isa, 1, 1, 1000, Layout::kRow, Layout::kRow, Layout::kRow, 1.0f, 1.0f, rng));
    ASSERT_TRUE(check_one<float>(isa, 1, 1, 1000, Layout::kCol, Layout::kCol, Layout::kCol, 1.0f, 0.0f, rng));
  }
}

TEST(Gemm, LargeAndThreaded) {
  std::mt19937 rng(6);
  ThreadPool& pool = ThreadPool::global();
  const int saved = pool.size();
  for (int nt : {1, 2, 3}) {
    pool.set_num_threads(nt);
    for (int isa : isas()) {
      for (Layout la : kAB)
        for (Layout lb : kAB) {
          ASSERT_TRUE(check_one<float>(isa, 150, 200, 300, la, lb, Layout::kRow, 1.0f, 0.0f, rng));
          ASSERT_TRUE(check_one<float>(isa, 1, 1024, 784, la, lb, Layout::kRow, 1.0f, 0.0f, rng));
          ASSERT_TRUE(check_one<float>(isa, 1024, 1, 784, la, lb, Layout::kRow, 1.0f, 1.0f, rng));
          ASSERT_TRUE(check_one<float>(isa, 20, 1500, 70, la, lb, Layout::kCol, 1.0f, 0.0f, rng));
        }
      // Several K slices (beta applied once), several N blocks, several M blocks.
      ASSERT_TRUE(check_one<float>(isa, 45, 50, 1100, Layout::kRow, Layout::kRow, Layout::kRow, 1.0f, 2.0f, rng));
      ASSERT_TRUE(check_one<float>(isa, 40, 2100, 100, Layout::kRow, Layout::kRow, Layout::kRow, 1.0f, 0.0f, rng));
      ASSERT_TRUE(check_one<float>(isa, 1600, 20, 10, Layout::kRow, Layout::kCol, Layout::kRow, 1.0f, 0.0f, rng));
    }
  }
  pool.set_num_threads(saved);
}

TEST(Gemm, ThreadedMatchesSerialBitwise) {
  // Every element is summed in the same order no matter how C is split over threads.
  std::mt19937 rng(7);
  ThreadPool& pool = ThreadPool::global();
  const int saved = pool.size();
  Strided<float> A = make<float>(333, 444, Layout::kRow), B = make<float>(444, 555, Layout::kRow);
  fill(A, rng);
  fill(B, rng);
  Strided<float> C1 = make<float>(333, 555, Layout::kRow), C2 = C1;
  pool.set_num_threads(1);
  gemm_f32(333, 555, 444, 1.0f, A.data(), A.rs, A.cs, B.data(), B.rs, B.cs, 0.0f, C1.data(), C1.rs, C1.cs);
  pool.set_num_threads(2);
  gemm_f32(333, 555, 444, 1.0f, A.data(), A.rs, A.cs, B.data(), B.rs, B.cs, 0.0f, C2.data(), C2.rs, C2.cs);
  pool.set_num_threads(saved);
  EXPECT_EQ(C1.buf, C2.buf);
}

TEST(Gemm, Float64) {
  std::mt19937 rng(8);
  for (int isa : isas()) {
    for (int64_t M : {1, 5, 14, 15, 33})
      for (int64_t N : {1, 7, 16, 17, 40})
        for (int64_t K : {1, 9, 64})
          for (Layout la : kAB)
            for (Layout lb : kAB)
              ASSERT_TRUE(check_one<double>(isa, M, N, K, la, lb, Layout::kRow, 1.5, 0.5, rng));
    for (Layout la : kAB)
      for (Layout lb : kAB)
        for (Layout lc : {Layout::kRow, Layout::kCol, Layout::kBothStrided}) {
          ASSERT_TRUE(check_one<double>(isa, 130, 129, 300, la, lb, lc, 1.0, 0.0, rng));
          ASSERT_TRUE(check_one<double>(isa, 1, 300, 129, la, lb, lc, 1.0, 0.0, rng));
        }
  }
}

template <class T>
void check_batched(int isa, int64_t batch, int64_t M, int64_t N, int64_t K, bool broadcast_b,
                   Layout la, Layout lb, T alpha, T beta, std::mt19937& rng) {
  std::vector<Strided<T>> As, Bs, Cs;
  Strided<T> A0 = make<T>(M, K, la), B0 = make<T>(K, N, lb), C0 = make<T>(M, N, Layout::kRow);
  const int64_t sa = static_cast<int64_t>(A0.buf.size()) + 7;
  const int64_t sb = broadcast_b ? 0 : static_cast<int64_t>(B0.buf.size()) + 3;
  const int64_t sc = static_cast<int64_t>(C0.buf.size()) + 1;
  std::vector<T> a(static_cast<size_t>(sa * batch)), b(static_cast<size_t>(broadcast_b ? sa : sb * batch) + B0.buf.size());
  std::vector<T> c(static_cast<size_t>(sc * batch));
  std::uniform_real_distribution<double> d(-1, 1);
  for (auto& x : a) x = T(d(rng));
  for (auto& x : b) x = T(d(rng));
  for (auto& x : c) x = T(d(rng));
  std::vector<T> c_init = c;
  if constexpr (std::is_same_v<T, float>)
    detail::gemm_batched_f32_isa(isa, batch, M, N, K, alpha, a.data() + A0.off, sa, A0.rs, A0.cs,
                                 b.data() + B0.off, sb, B0.rs, B0.cs, beta, c.data(), sc, N, 1);
  else
    detail::gemm_batched_f64_isa(isa, batch, M, N, K, alpha, a.data() + A0.off, sa, A0.rs, A0.cs,
                                 b.data() + B0.off, sb, B0.rs, B0.cs, beta, c.data(), sc, N, 1);
  const double eps = std::numeric_limits<T>::epsilon();
  for (int64_t t = 0; t < batch; ++t)
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double s = 0, sabs = 0;
        for (int64_t k = 0; k < K; ++k) {
          const double p = double(a[static_cast<size_t>(t * sa + A0.off + i * A0.rs + k * A0.cs)]) *
                           double(b[static_cast<size_t>(t * sb + B0.off + k * B0.rs + j * B0.cs)]);
          s += p;
          sabs += std::fabs(p);
        }
        const double c0 = double(c_init[static_cast<size_t>(t * sc + i * N + j)]);
        const double ref = double(alpha) * s + double(beta) * c0;
        const double tol = 2.0 * double(K + 4) * eps * (std::fabs(double(alpha)) * sabs + std::fabs(double(beta) * c0)) + 1e-30;
        const double got = double(c[static_cast<size_t>(t * sc + i * N + j)]);
        ASSERT_LE(std::fabs(got - ref), tol) << "batch " << t << " (" << i << "," << j << ")";
      }
}

TEST(Gemm, Batched) {
  std::mt19937 rng(9);
  for (int nt : {1, 2}) {
    ThreadPool::global().set_num_threads(nt);
    for (int isa : isas()) {
      for (Layout la : kAB)
        for (Layout lb : kAB) {
          check_batched<float>(isa, 7, 9, 13, 11, false, la, lb, 1.0f, 0.0f, rng);
          check_batched<float>(isa, 5, 1, 40, 17, true, la, lb, 0.5f, 1.0f, rng);
          check_batched<float>(isa, 3, 150, 140, 130, false, la, lb, 1.0f, 0.25f, rng);
          check_batched<double>(isa, 4, 17, 15, 20, true, la, lb, 1.0, 0.0, rng);
        }
      check_batched<float>(isa, 0, 3, 3, 3, false, Layout::kRow, Layout::kRow, 1.0f, 0.0f, rng);
    }
  }
  ThreadPool::global().set_num_threads(static_cast<int>(std::thread::hardware_concurrency()));
}

// ---- integer types ----------------------------------------------------------------------

template <class T>
void check_int(int64_t batch, int64_t M, int64_t N, int64_t K, Layout la, Layout lb, Layout lc,
               T alpha, T beta, std::mt19937& rng) {
  using U = std::make_unsigned_t<T>;
  std::vector<Strided<T>> A, B, C;
  for (int64_t t = 0; t < batch; ++t) {
    A.push_back(make<T>(M, K, la));
    B.push_back(make<T>(K, N, lb));
    C.push_back(make<T>(M, N, lc));
  }
  // Put all batches in one buffer with a fixed stride.
  const int64_t sa = static_cast<int64_t>(A[0].buf.size()), sb = static_cast<int64_t>(B[0].buf.size()),
                sc = static_cast<int64_t>(C[0].buf.size());
  std::vector<T> a(static_cast<size_t>(sa * batch)), b(static_cast<size_t>(sb * batch)),
      c(static_cast<size_t>(sc * batch));
  std::uniform_int_distribution<int> d(std::is_signed_v<T> ? -128 : 0, 127);
  for (auto& x : a) x = static_cast<T>(d(rng));
  for (auto& x : b) x = static_cast<T>(d(rng));
  for (auto& x : c) x = static_cast<T>(d(rng));
  std::vector<T> c0 = c;
  gemm_batched_generic<T>(batch, M, N, K, alpha, a.data() + A[0].off, sa, A[0].rs, A[0].cs,
                          b.data() + B[0].off, sb, B[0].rs, B[0].cs, beta, c.data() + C[0].off,
                          sc, C[0].rs, C[0].cs);
  for (int64_t t = 0; t < batch; ++t)
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        uint64_t s = 0;  // wrap-around reference
        for (int64_t k = 0; k < K; ++k)
          s += uint64_t(int64_t(a[static_cast<size_t>(t * sa + A[0].off + i * A[0].rs + k * A[0].cs)])) *
               uint64_t(int64_t(b[static_cast<size_t>(t * sb + B[0].off + k * B[0].rs + j * B[0].cs)]));
        const size_t ci = static_cast<size_t>(t * sc + C[0].off + i * C[0].rs + j * C[0].cs);
        uint64_t r = uint64_t(int64_t(alpha)) * s;
        if (beta != T(0)) r += uint64_t(int64_t(beta)) * uint64_t(int64_t(c0[ci]));
        const T want = static_cast<T>(static_cast<U>(r));
        ASSERT_EQ(c[ci], want) << "T size " << sizeof(T) << " batch " << t << " (" << i << ","
                               << j << ") M=" << M << " N=" << N << " K=" << K;
      }
}

template <class T>
void int_suite() {
  std::mt19937 rng(10);
  const Layout ls[] = {Layout::kRow, Layout::kCol, Layout::kBothStrided};
  for (Layout la : ls)
    for (Layout lb : ls)
      for (Layout lc : {Layout::kRow, Layout::kCol}) {
        check_int<T>(1, 7, 9, 13, la, lb, lc, T(1), T(0), rng);
        check_int<T>(3, 17, 33, 40, la, lb, lc, T(3), T(2), rng);
        check_int<T>(2, 1, 70, 5, la, lb, lc, T(1), T(1), rng);
      }
  check_int<T>(2, 64, 300, 200, Layout::kRow, Layout::kRow, Layout::kRow, T(1), T(0), rng);
  check_int<T>(1, 40, 50, 0, Layout::kRow, Layout::kRow, Layout::kRow, T(1), T(2), rng);
}

TEST(GemmGeneric, Int64) { int_suite<int64_t>(); }
TEST(GemmGeneric, Int32) { int_suite<int32_t>(); }
TEST(GemmGeneric, Int16) { int_suite<int16_t>(); }
TEST(GemmGeneric, Int8) { int_suite<int8_t>(); }
TEST(GemmGeneric, UInt8) { int_suite<uint8_t>(); }

TEST(GemmGeneric, Int8WrapsAround) {
  // 100 * 100 * 3 = 30000 -> wraps modulo 256 like PyTorch's int8 matmul.
  std::vector<int8_t> a(3, 100), b(3, 100), c(1, 0);
  gemm_batched_generic<int8_t>(1, 1, 1, 3, 1, a.data(), 0, 3, 1, b.data(), 0, 1, 1, 0, c.data(), 0, 1, 1);
  EXPECT_EQ(c[0], static_cast<int8_t>(30000 & 0xFF));
}

TEST(GemmGeneric, FloatMatchesReference) {
  std::mt19937 rng(11);
  Strided<float> A = make<float>(20, 30, Layout::kCol), B = make<float>(30, 25, Layout::kCol),
                 C = make<float>(20, 25, Layout::kRow);
  fill(A, rng);
  fill(B, rng);
  gemm_batched_generic<float>(1, 20, 25, 30, 1.0f, A.data(), 0, A.rs, A.cs, B.data(), 0, B.rs,
                              B.cs, 0.0f, C.data(), 0, C.rs, C.cs);
  for (int64_t i = 0; i < 20; ++i)
    for (int64_t j = 0; j < 25; ++j) {
      double s = 0;
      for (int64_t k = 0; k < 30; ++k) s += double(A.at(i, k)) * double(B.at(k, j));
      EXPECT_NEAR(C.at(i, j), s, 1e-4);
    }
}

}  // namespace
}  // namespace ember::cpu
