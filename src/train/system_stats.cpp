// Process CPU and memory from /proc, device memory from the backend.
#include "ember/train/system_stats.hpp"

#include <unistd.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>

namespace ember::train {

double process_cpu_seconds() {
  std::ifstream f("/proc/self/stat");
  std::string line;
  if (!std::getline(f, line)) return std::numeric_limits<double>::quiet_NaN();
  // Field 2 (comm) is parenthesised and may hold spaces: parse after the last ')'.
  auto close = line.rfind(')');
  if (close == std::string::npos) return std::numeric_limits<double>::quiet_NaN();
  std::istringstream rest(line.substr(close + 1));
  std::string field;
  unsigned long long utime = 0, stime = 0;
  // After ')' come fields 3 (state) ... ; utime and stime are fields 14 and 15.
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i == 14) utime = std::stoull(field);
    if (i == 15) stime = std::stoull(field);
  }
  long ticks = sysconf(_SC_CLK_TCK);
  return ticks > 0 ? double(utime + stime) / double(ticks) : std::numeric_limits<double>::quiet_NaN();
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
