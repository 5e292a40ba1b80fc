// The autotune store's files (autotune.hpp): plain file logic, no GPU needed, so these run
// wherever the CUDA backend builds. AutotuneGpu.*: with a GPU, a matmul's cuBLASLt winner is
// saved by one process and taken, untimed, by the next (child processes of this binary).
#include "autotune.hpp"

#include <cstdio>
#include <cstdlib>

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "ember/backends/cuda.hpp"
#include "ember/ember.hpp"
#include "ember/version.hpp"

namespace ember {
namespace {

namespace fs = std::filesystem;

const std::string kEnv = "NVIDIA H200 sm_90 driver 13000 runtime 13000 cuBLASLt 130000 ember " EMBER_VERSION_STRING;

// "<prefix><n>" (appends: g++ 12 warns falsely on "literal" + std::to_string(n) at -O3)
std::string numbered(std::string prefix, int n) {
  prefix += std::to_string(n);
  return prefix;
}

// A fresh, empty directory per test.
std::string fresh_dir(const std::string& name) {
  const std::string dir = testing::TempDir() + "ember_autotune_" + name + "_" + std::to_string(::getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

void spit(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << text;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    out.push_back(text.substr(pos, end - pos));
    pos = end + 1;
  }
  return out;
}

// The file holds the header and only lines that read back: nothing damaged or foreign is kept.
void expect_clean_file(const std::string& path, const std::string& env) {
  const std::vector<std::string> lines = lines_of(slurp(path));
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines[0], "ember-autotune-v1\t" + env);
  EXPECT_EQ(lines.size() - 1, cuda::read_autotune_file(path, env).size()) << slurp(path);
}

void expect_no_temporary_files(const std::string& dir) {
  for (const auto& e : fs::directory_iterator(dir))
    EXPECT_EQ(e.path().filename().string().find(".tmp"), std::string::npos) << "left behind: " << e.path();
}

TEST(AutotuneStore, WinnersSurviveTheProcess) {
  const std::string dir = fresh_dir("roundtrip");
  {
    cuda::AutotuneStore s(dir, "cublaslt", kEnv);
    EXPECT_FALSE(s.get("f32 64 64 64").has_value());
    s.put("f32 64 64 64", "00ff10");
    s.put("bf16 ta 128 256 512", "abcdef");
    s.put("f32 64 64 64", "00ff11");  // a later winner replaces the earlier
    EXPECT_EQ(s.get("f32 64 64 64"), "00ff11");
  }
  EXPECT_EQ(cuda::autotune_file_path(dir, "cublaslt"), dir + "/autotune-cublaslt.txt");
  cuda::AutotuneStore again(dir, "cublaslt", kEnv);  // (a new process)
  EXPECT_EQ(again.get("f32 64 64 64"), "00ff11");
  EXPECT_EQ(again.get("bf16 ta 128 256 512"), "abcdef");
  EXPECT_FALSE(again.get("f16 1 1 1").has_value());
  // another kind is another file
  cuda::AutotuneStore cudnn(dir, "cudnn", kEnv);
  EXPECT_FALSE(cudnn.get("f32 64 64 64").has_value());
  expect_clean_file(again.path(), kEnv);
  expect_no_temporary_files(dir);
  fs::remove_all(dir);
}

TEST(AutotuneStore, AnotherEnvironmentsFileIsIgnoredAndReplaced) {
  const std::string dir = fresh_dir("env");
  cuda::AutotuneStore old_driver(dir, "cudnn", kEnv);
  old_driver.put("fwd f32 x:1:3:8:8", "1 0");
  // the same GPU after a driver update, and ember's next version: none of the old winners count
  for (const std::string env : {"NVIDIA H200 sm_90 driver 13010 runtime 13000 cuBLASLt 130000 ember " EMBER_VERSION_STRING,
                                "NVIDIA H200 sm_90 driver 13000 runtime 13000 cuBLASLt 130000 ember 0.2.0",
                                "NVIDIA H100 80GB HBM3 sm_90 driver 13000 runtime 13000 cuBLASLt 130000 ember " EMBER_VERSION_STRING}) {
    cuda::AutotuneStore s(dir, "cudnn", env);
    EXPECT_FALSE(s.get("fwd f32 x:1:3:8:8").has_value()) << env;
    EXPECT_TRUE(cuda::read_autotune_file(s.path(), env).empty()) << env;
  }
  const std::string env2 = "NVIDIA H200 sm_90 driver 13010 runtime 13000 cuDNN 91100 ember " EMBER_VERSION_STRING;
  cuda::AutotuneStore updated(dir, "cudnn", env2);
  updated.put("fwd f32 x:2:3:8:8", "-1 1");  // rewrites the file for the new environment
  expect_clean_file(updated.path(), env2);
  const auto entries = cuda::read_autotune_file(updated.path(), env2);
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries.at("fwd f32 x:2:3:8:8"), "-1 1");
  EXPECT_TRUE(cuda::read_autotune_file(updated.path(), kEnv).empty());  // the old environment's lines are gone
  fs::remove_all(dir);
}

TEST(AutotuneStore, DamagedFilesAreIgnoredAndRewritten) {
  const std::string dir = fresh_dir("damage");
  const std::string path = cuda::autotune_file_path(dir, "cublaslt");
  std::map<std::string, std::string> three = {{"k1", "v1"}, {"k2", "value two"}, {"k3", "v3"}};
  ASSERT_TRUE(cuda::write_autotune_file(path, kEnv, three));
  const std::string good = slurp(path);
  EXPECT_EQ(cuda::read_autotune_file(path, kEnv), three);
  const std::vector<std::string> lines = lines_of(good);
  ASSERT_EQ(lines.size(), 4u);

  spit(path, good.substr(0, good.size() - 5));  // truncated inside the last line: that line is lost
  auto got = cuda::read_autotune_file(path, kEnv);
  EXPECT_EQ(got.size(), 2u);
  EXPECT_FALSE(got.count("k3"));
  spit(path, good.substr(0, 10));  // truncated inside the header: nothing
  EXPECT_TRUE(cuda::read_autotune_file(path, kEnv).empty());
  spit(path, lines[0]);  // a header without its line break: nothing
  EXPECT_TRUE(cuda::read_autotune_file(path, kEnv).empty());
  spit(path, "");  // empty
  EXPECT_TRUE(cuda::read_autotune_file(path, kEnv).empty());
  std::string flipped = good;
  flipped[good.find("value two") + 2] ^= 1;  // one bit of a value: that line fails its checksum
  spit(path, flipped);
  got = cuda::read_autotune_file(path, kEnv);
  EXPECT_EQ(got.size(), 2u);
  EXPECT_FALSE(got.count("k2"));
  std::string header_flipped = good;
  header_flipped[3] ^= 1;
  spit(path, header_flipped);
  EXPECT_TRUE(cuda::read_autotune_file(path, kEnv).empty());
  // the old cudnn_algos.txt format, binary junk, a cubin cache file: not ours
  spit(path, "NVIDIA H200 cudnn91100\tfwd f32 x:1\t1 0\n");
  EXPECT_TRUE(cuda::read_autotune_file(path, kEnv).empty());
  spit(path, std::string("EMBC\0\0\x01\x02\xff\n\n\t\t", 14));
  EXPECT_TRUE(cuda::read_autotune_file(path, kEnv).empty());
  EXPECT_TRUE(cuda::read_autotune_file(dir + "/missing.txt", kEnv).empty());

  // garbage lines among good ones are skipped, and the next write drops them
  spit(path, lines[0] + "\n" + lines[1] + "\n" + "garbage without tabs\n" + "k9\tv9\t0123456789abcdef\n" +
                 "k8\tv8\n" + "\t\t\n" + "a\tb\tc\td\n" + std::string(3, '\0') + "\n" + lines[3] + "\n" +
                 "k2\tvalue two\t" + lines[2].substr(lines[2].rfind('\t') + 1) + "x\n");
  got = cuda::read_autotune_file(path, kEnv);
  EXPECT_EQ(got, (std::map<std::string, std::string>{{"k1", "v1"}, {"k3", "v3"}}));
  cuda::AutotuneStore s(dir, "cublaslt", kEnv);
  EXPECT_EQ(s.get("k1"), "v1");
  EXPECT_FALSE(s.get("k2").has_value());
  s.put("k4", "v4");
  expect_clean_file(path, kEnv);
  EXPECT_EQ(cuda::read_autotune_file(path, kEnv),
            (std::map<std::string, std::string>{{"k1", "v1"}, {"k3", "v3"}, {"k4", "v4"}}));
  expect_no_temporary_files(dir);
  fs::remove_all(dir);
}

TEST(AutotuneStore, TabsAndLineBreaksInKeysAndValuesCannotSplitALine) {
  const std::string dir = fresh_dir("clean");
  cuda::AutotuneStore s(dir, "cudnn", "env\twith\na tab");
  s.put("fwd\tf32\nx", "1\t0\r");
  EXPECT_EQ(s.get("fwd\tf32\nx"), "1 0 ");  // (looked up as written)
  cuda::AutotuneStore again(dir, "cudnn", "env\twith\na tab");
  EXPECT_EQ(again.get("fwd f32 x"), "1 0 ");
  expect_clean_file(s.path(), "env with a tab");
  fs::remove_all(dir);
}

TEST(AutotuneStore, WritesAreAtomicAndLeaveNoTemporaryFiles) {
  const std::string dir = fresh_dir("atomic");
  const std::string path = cuda::autotune_file_path(dir, "fused");
  std::map<std::string, std::string> entries;
  for (int i = 0; i < 50; ++i) {
    entries[numbered("key ", i)] = numbered("value ", i * 7);
    ASSERT_TRUE(cuda::write_autotune_file(path, kEnv, entries));
  }
  EXPECT_EQ(cuda::read_autotune_file(path, kEnv), entries);
  // a directory that is not there, or a target that cannot be replaced: false, nothing left
  EXPECT_FALSE(cuda::write_autotune_file(dir + "/no/such/dir/autotune-x.txt", kEnv, entries));
  fs::create_directories(dir + "/autotune-blocked.txt/inside");
  EXPECT_FALSE(cuda::write_autotune_file(dir + "/autotune-blocked.txt", kEnv, entries));
  expect_no_temporary_files(dir);
  // no cache directory: the store keeps its winners in memory
  cuda::AutotuneStore memory_only("", "cublaslt", kEnv);
  EXPECT_TRUE(memory_only.path().empty());
  memory_only.put("k", "v");
  EXPECT_EQ(memory_only.get("k"), "v");
  fs::remove_all(dir);
}

TEST(AutotuneStore, ThreadsShareOneStore) {
  const std::string dir = fresh_dir("threads");
  cuda::AutotuneStore s(dir, "cublaslt", kEnv);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&s, t] {
      for (int i = 0; i < 50; ++i) {
        const std::string key = numbered(numbered("t", t) + " k", i);
        s.put(key, numbered("v", t * 1000 + i));
        (void)s.get(key);
      }
    });
  for (auto& th : threads) th.join();
  const auto entries = cuda::read_autotune_file(s.path(), kEnv);
  EXPECT_EQ(entries.size(), 200u);  // one process, one store: every write merges all of them
  for (int t = 0; t < 4; ++t)
    for (int i = 0; i < 50; ++i)
      EXPECT_EQ(entries.at(numbered(numbered("t", t) + " k", i)), numbered("v", t * 1000 + i));
  expect_clean_file(s.path(), kEnv);
  expect_no_temporary_files(dir);
  fs::remove_all(dir);
}

// Whether a snapshot of a winners file is whole: the header, then only lines that check.
bool whole(const std::string& text) {
  if (text.empty() || text.rfind("ember-autotune-v1\t" + kEnv + "\n", 0) != 0 || text.back() != '\n') return false;
  return lines_of(text).size() - 1 == cuda::parse_autotune_text(text, kEnv).size();
}

// Two processes sharing the directory write 200 winners each at the same time, while a third
// reads the file in a loop. Updates may be lost (a write merges the file as it was when read),
// but every snapshot anyone reads, and the file at the end, parse in full and hold only values
// that were written; the last writer's winners are all there.
TEST(AutotuneStore, TwoProcessesWritingAtOnceNeverCorruptTheFile) {
  const std::string dir = fresh_dir("fork");
  const std::string path = cuda::autotune_file_path(dir, "cublaslt");
  constexpr int kKeys = 200;
  // the number of torn snapshots seen
  auto write_all = [&](const std::string& who) {
    cuda::AutotuneStore s(dir, "cublaslt", kEnv);
    int torn = 0;
    for (int i = 0; i < kKeys; ++i) {
      s.put(who + " problem " + std::to_string(i), who + " winner " + std::to_string(i * 31));
      torn += !whole(slurp(path));
    }
    return torn;
  };
  auto read_all = [&] {
    int torn = 0;
    for (int i = 0; i < 4000; ++i) {
      std::ifstream f(path, std::ios::binary);
      if (!f) continue;  // not written yet
      // (a file that opens is one version: written in full before it was renamed into place)
      torn += !whole({std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()});
    }
    return torn;
  };
  int go[2];
  ASSERT_EQ(::pipe(go), 0);
  auto spawn = [&](const std::function<int()>& work) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::close(go[1]);
      char c = 0;
      int code = ::read(go[0], &c, 1) == 1 ? 0 : 100;
      try {
        code += std::min(work(), 99);
      } catch (...) {
        code = 101;
      }
      ::_exit(code);
    }
    return pid;
  };
  const pid_t writer = spawn([&] { return write_all("child"); });
  const pid_t reader = spawn(read_all);
  ASSERT_GT(writer, 0);
  ASSERT_GT(reader, 0);
  ::close(go[0]);
  ASSERT_EQ(::write(go[1], "xx", 2), 2);  // all start together
  ::close(go[1]);
  EXPECT_EQ(write_all("parent"), 0) << "torn snapshots seen by the parent";
  for (const pid_t pid : {writer, reader}) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0) << (pid == writer ? "child writer" : "reader")
                                      << ": torn snapshots seen (100+: never started)";
  }

  expect_clean_file(path, kEnv);
  const auto entries = cuda::read_autotune_file(path, kEnv);
  int parent = 0, child_keys = 0;
  for (const auto& [k, v] : entries) {
    const std::string who = k.substr(0, k.find(' '));
    ASSERT_TRUE(who == "parent" || who == "child") << k;
    const int i = std::stoi(k.substr(k.rfind(' ') + 1));
    EXPECT_EQ(v, who + " winner " + std::to_string(i * 31)) << k;
    (who == "parent" ? parent : child_keys)++;
  }
  EXPECT_TRUE(parent == kKeys || child_keys == kKeys) << parent << " parent and " << child_keys << " child winners";
  expect_no_temporary_files(dir);
  fs::remove_all(dir);
}

TEST(AutotuneStore, SettingFromTheEnvironment) {
  EXPECT_TRUE(cuda::autotune_setting(nullptr, nullptr));
  for (const char* off : {"off", "OFF", "0", "false", "False", "no"}) EXPECT_FALSE(cuda::autotune_setting(off, nullptr)) << off;
  for (const char* on : {"on", "1", "true"}) EXPECT_TRUE(cuda::autotune_setting(on, nullptr)) << on;
  EXPECT_FALSE(cuda::autotune_setting(nullptr, "0"));  // the older name
  EXPECT_TRUE(cuda::autotune_setting(nullptr, "1"));
  EXPECT_TRUE(cuda::autotune_setting("on", "0"));  // EMBER_AUTOTUNE decides when set
  EXPECT_FALSE(cuda::autotune_setting("", "0"));   // (set but empty counts as unset)
}

// Run by AutotuneGpu.WinnersAreSavedAndTakenByTheNextProcess in a child process: a 2-GFLOP f32
// product (autotuned: above kTuneFlops) checked against the CPU's.
TEST(AutotuneGpu, ChildRunsAMatmul) {
  if (!std::getenv("EMBER_AUTOTUNE_TEST_CHILD")) GTEST_SKIP() << "run by AutotuneGpu.WinnersAreSavedAndTakenByTheNextProcess";
  if (!cuda::available()) GTEST_SKIP() << "no CUDA device";
  Device::cpu().seed(7);
  DynTensor a = DynTensor::normal(Shape{1024, 1024}, 0, 1, DType::f32, Device::cpu());
  DynTensor b = DynTensor::normal(Shape{1024, 1024}, 0, 1, DType::f32, Device::cpu());
  const std::vector<float> got = matmul(a.to(Device::cuda(0)), b.to(Device::cuda(0))).to(Device::cpu()).to_vector<float>();
  const std::vector<float> want = matmul(a, b).to_vector<float>();
  ASSERT_EQ(got.size(), want.size());
  size_t bad = 0;
  for (size_t i = 0; i < got.size(); ++i) bad += !(std::abs(got[i] - want[i]) <= 1e-3f + 1e-4f * std::abs(want[i]));
  EXPECT_EQ(bad, 0u);
}

TEST(AutotuneGpu, WinnersAreSavedAndTakenByTheNextProcess) {
  if (!cuda::available()) GTEST_SKIP() << "no CUDA device: " << cuda::describe_devices();
  const std::string dir = fresh_dir("gpu");
  // this test binary's path, resolved here: inside popen's shell /proc/self/exe is the shell
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  auto child = [&](const std::string& extra_env) {
    const std::string cmd = "EMBER_AUTOTUNE_TEST_CHILD=1 EMBER_AUTOTUNE_VERBOSE=1 EMBER_CACHE_DIR='" + dir + "' " +
                            extra_env + " '" + self + "' --gtest_filter=AutotuneGpu.ChildRunsAMatmul 2>&1";
    std::string out;
    FILE* f = ::popen(cmd.c_str(), "r");
    if (!f) return out;
    char buf[4096];
    for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) out.append(buf, n);
    EXPECT_EQ(::pclose(f), 0) << out;
    return out;
  };
  const std::string first = child("");
  EXPECT_NE(first.find("[ember autotune] cublaslt timed"), std::string::npos) << first;
  const std::string path = cuda::autotune_file_path(dir, "cublaslt");
  const std::vector<std::string> lines = lines_of(slurp(path));
  ASSERT_GE(lines.size(), 2u) << slurp(path);
  EXPECT_NE(lines[0].find(" ember "), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find(" driver "), std::string::npos) << lines[0];
  const std::string second = child("");
  EXPECT_NE(second.find("[ember autotune] cublaslt saved"), std::string::npos) << second;
  EXPECT_EQ(second.find("[ember autotune] cublaslt timed"), std::string::npos) << second;
  for (const std::string off : {"EMBER_AUTOTUNE=off", "EMBER_CUDA_AUTOTUNE=0"}) {
    const std::string out = child(off);
    EXPECT_EQ(out.find("[ember autotune]"), std::string::npos) << off << "\n" << out;
  }
  // a stale file (another driver) is ignored: timed again, and the file rewritten
  const std::string text = slurp(path);
  const size_t d = text.find(" driver ");
  ASSERT_NE(d, std::string::npos);
  spit(path, text.substr(0, d) + " driver 9" + text.substr(d + 8));
  const std::string stale = child("");
  EXPECT_NE(stale.find("[ember autotune] cublaslt timed"), std::string::npos) << stale;
  EXPECT_EQ(lines_of(slurp(path))[0], lines[0]);
  expect_no_temporary_files(dir);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ember
