// The Vulkan backend's shader caches: SPIR-V on disk under $EMBER_CACHE_DIR/vulkan, reused by
// the next backend, and a corrupt or truncated file ignored, compiled again and rewritten.
#include "shaders.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "ember/backends/vulkan.hpp"
#include "ember/ember.hpp"
#include "vulkan_backend.hpp"

namespace ember {
namespace {

namespace fs = std::filesystem;

// A fresh cache folder, set as $EMBER_CACHE_DIR for the test's lifetime.
struct TempCache {
  fs::path dir;
  std::string old;
  bool had = false;
  TempCache() {
    dir = fs::temp_directory_path() / ("ember-vulkan-cache-" + std::to_string(::getpid()));
    fs::remove_all(dir);
    if (const char* e = std::getenv("EMBER_CACHE_DIR")) old = e, had = true;
    setenv("EMBER_CACHE_DIR", dir.c_str(), 1);
  }
  ~TempCache() {
    if (had)
      setenv("EMBER_CACHE_DIR", old.c_str(), 1);
    else
      unsetenv("EMBER_CACHE_DIR");
    fs::remove_all(dir);
  }
  std::vector<fs::path> spirv() const {
    std::vector<fs::path> out;
    if (fs::exists(dir / "vulkan"))
      for (const auto& e : fs::directory_iterator(dir / "vulkan"))
        if (e.path().extension() == ".spv") out.push_back(e.path());
    return out;
  }
};

// Runs hypot on f32 (one kernel) on a new backend; returns that backend's shader statistics.
vulkan::Shaders::Stats run_hypot() {
  auto be = vulkan::make_backend(0);
  auto a = be->write(TensorData::from_vector<float>({3, 5}, Shape{2}));
  auto b = be->write(TensorData::from_vector<float>({4, 12}, Shape{2}));
  auto y = be->execute(make_op(OpKind::hypot, {a, b}))[0];
  EXPECT_EQ(be->read(y).to_doubles(), (std::vector<double>{5, 13}));
  return static_cast<vulkan::VulkanBackend&>(*be).shaders().stats();
}

TEST(VulkanShaderCache, SpirvIsReusedAndACorruptFileRewritten) {
  if (!vulkan::available()) GTEST_SKIP() << "no Vulkan device: " << vulkan::describe_devices();
  TempCache cache;
  auto first = run_hypot();
  EXPECT_EQ(first.compiled, 1);
  EXPECT_EQ(first.disk_hits, 0);
  auto files = cache.spirv();
  ASSERT_EQ(files.size(), 1u);
  const auto good_size = fs::file_size(files[0]);

  auto second = run_hypot();  // a new backend: from the disk
  EXPECT_EQ(second.compiled, 0);
  EXPECT_EQ(second.disk_hits, 1);

  // corrupt the payload (same size), then truncate: each time compiled again and rewritten
  {
    std::fstream f(files[0], std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(std::streamoff(good_size / 2));
    const char junk[8] = {'g', 'a', 'r', 'b', 'a', 'g', 'e', '!'};
    f.write(junk, sizeof junk);
  }
  auto third = run_hypot();
  EXPECT_EQ(third.compiled, 1);
  EXPECT_EQ(third.disk_hits, 0);
  EXPECT_EQ(fs::file_size(files[0]), good_size);
  fs::resize_file(files[0], good_size / 3);
  auto fourth = run_hypot();
  EXPECT_EQ(fourth.compiled, 1);
  auto fifth = run_hypot();  // the rewritten file is good again
  EXPECT_EQ(fifth.compiled, 0);
  EXPECT_EQ(fifth.disk_hits, 1);
  // the driver's pipeline cache is kept beside the SPIR-V (written when a backend goes)
  bool pipelines = false;
  for (const auto& e : fs::directory_iterator(cache.dir / "vulkan"))
    pipelines |= e.path().filename().string().rfind("pipelines-", 0) == 0;
  EXPECT_TRUE(pipelines);
}

TEST(VulkanShaderCache, BadGlslIsAnErrorWithTheLog) {
  try {
    (void)vulkan::compile_glsl("broken/f32", "#version 450\nvoid main() { undeclared = 1; }\n");
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    const std::string w = e.what();
    EXPECT_NE(w.find("broken/f32: GLSL compilation failed"), std::string::npos) << w;
    EXPECT_NE(w.find("undeclared"), std::string::npos) << w;
  }
}

}  // namespace
}  // namespace ember
