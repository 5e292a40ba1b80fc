// Helpers shared by the quant tests: error expectations, deterministic data, temporary files.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <ember/ember.hpp>
#include <ember/quant.hpp>
#include <ember/tensor/ops.hpp>
#include <filesystem>
#include <initializer_list>
#include <random>
#include <string>
#include <vector>

namespace quant_test {

// Runs f, expects an ember::Error whose message contains every fragment.
template <class F>
void expect_error(F&& f, std::initializer_list<std::string> fragments) {
  try {
    f();
    ADD_FAILURE() << "no error thrown";
  } catch (const ember::Error& e) {
    std::string msg = e.what();
    for (const auto& frag : fragments) EXPECT_NE(msg.find(frag), std::string::npos) << "message: " << msg;
  }
}

// n values from a normal distribution (std::mt19937, fixed seed).
inline std::vector<float> normal_values(size_t n, uint32_t seed, float stddev = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, stddev);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

inline ember::DynTensor tensor(const std::vector<float>& v, ember::Shape shape) {
  return ember::DynTensor::from_vector<float>(v, std::move(shape), ember::Device::cpu());
}

// Round half to even in double (what torch.round and ONNX use).
inline double round_even(double x) {
  double r = std::round(x);
  if (std::fabs(x - std::trunc(x)) == 0.5) r = 2.0 * std::round(x / 2.0);
  return r;
}

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/ember_quant_test_XXXXXX";
    const char* p = ::mkdtemp(tmpl);
    EXPECT_NE(p, nullptr);
    path_ = p ? p : "/tmp";
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

}  // namespace quant_test
