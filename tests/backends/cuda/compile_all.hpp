// Compiles generated CUDA sources for sm_90 on every core (NVRTC is thread-safe) and returns the
// failures' messages; `on_cubin` (optional) sees each compiled cubin, one call at a time. Threads take the next source from a shared counter, so a few slow
// sources (the sort family's) don't leave the other cores idle; with a cold kernel cache on a
// 16-core GPU machine the compile tests otherwise spend minutes here.
#pragma once

#include <algorithm>
#include <atomic>
#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "jit.hpp"

namespace ember::cuda_test {

using CubinSink = std::function<void(const cuda::KernelSource&, const std::vector<char>&)>;

inline std::vector<std::string> compile_all(const std::vector<cuda::KernelSource>& sources,
                                            const CubinSink& on_cubin = {}) {
  std::vector<std::string> errors;
  std::mutex mu;
  std::atomic<size_t> next{0};
  const unsigned nt = std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < nt; ++t) {
    threads.emplace_back([&] {
      for (size_t i = next++; i < sources.size(); i = next++) {
        std::string error;
        try {
          auto cubin = cuda::compile_cubin(sources[i].key, sources[i].source, 90);
          if (cubin.size() < 100) error = sources[i].key + ": empty cubin";
          if (error.empty() && on_cubin) {
            std::lock_guard<std::mutex> lock(mu);
            on_cubin(sources[i], cubin);
          }
        } catch (const std::exception& e) {
          error = e.what();
        }
        if (!error.empty()) {
          std::lock_guard<std::mutex> lock(mu);
          errors.push_back(std::move(error));
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  return errors;
}

}  // namespace ember::cuda_test
