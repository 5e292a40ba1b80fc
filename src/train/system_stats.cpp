// Process CPU and memory from /proc, device memory from the backend.
#include "ember/train/system_stats.hpp"

#include <time.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>

namespace ember::train {

double process_cpu_seconds() {
  // The process's CPU clock (all threads, user + system) in nanoseconds; /proc/self/stat's ticks
  // are 10 ms, too coarse for short epochs.
  timespec ts{};
  if (::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) != 0) return std::numeric_limits<double>::quiet_NaN();
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

int64_t process_rss_bytes() {
  std::ifstream f("/proc/self/statm");
  long long size = 0, resident = 0;
  if (!(f >> size >> resident)) return 0;
  return int64_t(resident) * int64_t(sysconf(_SC_PAGESIZE));
}

ProcessMonitor::ProcessMonitor() : last_cpu_(process_cpu_seconds()), last_wall_(std::chrono::steady_clock::now()) {}

ProcessSample ProcessMonitor::sample() {
  double cpu = process_cpu_seconds();
  auto now = std::chrono::steady_clock::now();
  double wall = std::chrono::duration<double>(now - last_wall_).count();
  ProcessSample s;
  if (wall > 0 && std::isfinite(cpu) && std::isfinite(last_cpu_)) s.cpu_percent = 100 * (cpu - last_cpu_) / wall;
  s.rss_bytes = process_rss_bytes();
  last_cpu_ = cpu;
  last_wall_ = now;
  return s;
}

std::optional<MemoryStats> device_memory(const Device& device) {
  if (device.inner().name() == "cpu") return std::nullopt;
  return device.memory_stats();
}

}  // namespace ember::train
