// Process and device resource use, as the Learner reports it: CPU use of this process (percent of
// one core, from the process CPU clock), resident memory (/proc/self/statm) and, on non-CPU devices, the
// device memory in use (Device::memory_stats).
//
//   train::ProcessMonitor mon;
//   // ... work ...
//   train::ProcessSample s = mon.sample();   // s.cpu_percent since the previous sample, s.rss_bytes
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>

#include "ember/core/device.hpp"

namespace ember::train {

// Resource use measured by ProcessMonitor::sample().
struct ProcessSample {
  double cpu_percent = 0;  // CPU time / wall time since the previous sample, x100 (200 = two cores busy)
  int64_t rss_bytes = 0;   // resident set size
};

// CPU time (user + system) this process has used, in seconds; NaN where /proc is unavailable.
double process_cpu_seconds();
// Resident set size in bytes; 0 where /proc is unavailable.
int64_t process_rss_bytes();

// Measures this process's CPU use between samples (the first from construction) and its resident memory.
class ProcessMonitor {
 public:
  ProcessMonitor();
  ProcessSample sample();  // CPU use since the previous sample (or construction), and the current resident memory.

 private:
  double last_cpu_;
  std::chrono::steady_clock::time_point last_wall_;
};

// Memory in use on the device, or nothing for CPU devices (whose memory is the process's).
std::optional<MemoryStats> device_memory(const Device& device);

}  // namespace ember::train
