#include "shaders.hpp"

#include <errno.h>
#include <shaderc/shaderc.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>

#include "ember/core/atomic_write.hpp"
#include "ember/core/error.hpp"
#include "ember/core/hash.hpp"

namespace ember::vulkan {

namespace {

constexpr int kBindings = 8;          // operands 0-5, parameters 6, the error record 7
constexpr int kMaxWideOperands = 16;  // a wide pipeline's operand bindings beyond 0-5: 8 to 23
constexpr char kMagic[4] = {'E', 'V', 'K', '1'};
constexpr size_t kHeader = 4 + 8 + 8;  // magic, size, checksum

bool make_dirs(const std::string& path) {
  for (size_t i = 1; i <= path.size(); ++i) {
    if (i == path.size() || path[i] == '/') {
      std::string p = path.substr(0, i);
      if (::mkdir(p.c_str(), 0755) != 0 && errno != EEXIST) return false;
    }
  }
  return true;
}

// The payload of a cache file written by write_cached, or false when it is missing, truncated or
// does not match its checksum.
bool read_cached(const std::string& path, std::string& out) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  std::string all((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (all.size() < kHeader || std::memcmp(all.data(), kMagic, 4) != 0) return false;
  uint64_t size = 0, hash = 0;
  std::memcpy(&size, all.data() + 4, 8);
  std::memcpy(&hash, all.data() + 12, 8);
  if (size == 0 || size != all.size() - kHeader) return false;
  std::string_view payload(all.data() + kHeader, size);
  if (hash != fnv1a(payload)) return false;
  out.assign(payload);
  return true;
}

void write_cached(const std::string& path, std::string_view payload) {
  const uint64_t size = payload.size(), hash = fnv1a(payload);
  std::string file(kMagic, 4);
  file.append(reinterpret_cast<const char*>(&size), 8);
  file.append(reinterpret_cast<const char*>(&hash), 8);
  file.append(payload);
  (void)write_file_atomically(path, file);  // a cache: not written is only slower next time
}

std::string hex(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string numbered(const std::string& source) {
  std::istringstream in(source);
  std::ostringstream out;
  std::string line;
  for (int i = 1; std::getline(in, line); ++i) out << i << ": " << line << "\n";
  return out.str();
}

// What the SPIR-V depends on besides the source: the compiler's version and the target.
const std::string& compiler_tag() {
  static const std::string tag = [] {
    unsigned v = 0, r = 0;
    shaderc_get_spv_version(&v, &r);
    return "shaderc spv " + std::to_string(v) + "." + std::to_string(r) + " vulkan1.1 O0";
  }();
  return tag;
}

}  // namespace

std::string shader_cache_dir() {
  std::string d;
  if (const char* e = std::getenv("EMBER_CACHE_DIR"); e && *e)
    d = e;
  else if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x)
    d = std::string(x) + "/ember";
  else if (const char* h = std::getenv("HOME"); h && *h)
    d = std::string(h) + "/.cache/ember";
  if (d.empty()) return d;
  d += "/vulkan";
  return make_dirs(d) ? d : std::string();
}

std::vector<uint32_t> compile_glsl(const std::string& name, const std::string& source) {
  // one compiler per thread (shaderc compilers are not thread-safe to share)
  thread_local struct Compiler {
    shaderc_compiler_t c = shaderc_compiler_initialize();
    ~Compiler() { shaderc_compiler_release(c); }
  } compiler;
  shaderc_compile_options_t opts = shaderc_compile_options_initialize();
  shaderc_compile_options_set_target_env(opts, shaderc_target_env_vulkan, shaderc_env_version_vulkan_1_1);
  shaderc_compile_options_set_target_spirv(opts, shaderc_spirv_version_1_3);
  shaderc_compilation_result_t r = shaderc_compile_into_spv(compiler.c, source.data(), source.size(),
                                                            shaderc_compute_shader, name.c_str(), "main", opts);
  shaderc_compile_options_release(opts);
  if (shaderc_result_get_compilation_status(r) != shaderc_compilation_status_success) {
    std::string log = shaderc_result_get_error_message(r);
    shaderc_result_release(r);
    EMBER_FAIL(name, ": GLSL compilation failed (an ember bug):\n", log, numbered(source));
  }
  const size_t n = shaderc_result_get_length(r);
  std::vector<uint32_t> words(n / 4);
  std::memcpy(words.data(), shaderc_result_get_bytes(r), n);
  shaderc_result_release(r);
  return words;
}

Shaders::Shaders(VkDevice device, const PhysicalDevice& phys, std::string name)
    : device_(device), phys_(phys), name_(std::move(name)) {
  auto make_layout = [&](int bindings, VkDescriptorSetLayout& set, VkPipelineLayout& layout) {
    std::vector<VkDescriptorSetLayoutBinding> b(static_cast<size_t>(bindings));
    for (int i = 0; i < bindings; ++i) {
      b[size_t(i)].binding = uint32_t(i);
      b[size_t(i)].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
      b[size_t(i)].descriptorCount = 1;
      b[size_t(i)].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
    }
    VkDescriptorSetLayoutCreateInfo dl{};
    dl.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO;
    dl.bindingCount = uint32_t(bindings);
    dl.pBindings = b.data();
    check(vkCreateDescriptorSetLayout(device_, &dl, nullptr, &set), "Device::vulkan", "vkCreateDescriptorSetLayout",
          name_);
    VkPipelineLayoutCreateInfo pl{};
    pl.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO;
    pl.setLayoutCount = 1;
    pl.pSetLayouts = &set;
    check(vkCreatePipelineLayout(device_, &pl, nullptr, &layout), "Device::vulkan", "vkCreatePipelineLayout", name_);
  };
  make_layout(kBindings, set_layout_, layout_);
  const auto& lim = phys_.props.limits;
  const int64_t room = int64_t(std::min(lim.maxPerStageDescriptorStorageBuffers, lim.maxDescriptorSetStorageBuffers));
  wide_operands_ = int(std::clamp<int64_t>(room - kBindings, 0, kMaxWideOperands));
  if (wide_operands_ > 0) make_layout(kBindings + wide_operands_, wide_set_layout_, wide_layout_);

  // the driver's cache from the last run (the driver checks its own header; ours checks the bytes)
  std::string initial;
  const std::string path = pipeline_cache_path();
  if (!path.empty()) (void)read_cached(path, initial);
  VkPipelineCacheCreateInfo pc{};
  pc.sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO;
  pc.initialDataSize = initial.size();
  pc.pInitialData = initial.empty() ? nullptr : initial.data();
  if (vkCreatePipelineCache(device_, &pc, nullptr, &cache_) != VK_SUCCESS) {
    pc.initialDataSize = 0;
    pc.pInitialData = nullptr;
    check(vkCreatePipelineCache(device_, &pc, nullptr, &cache_), "Device::vulkan", "vkCreatePipelineCache", name_);
  }
}

Shaders::~Shaders() {
  if (unsaved_ > 0) save_pipeline_cache();
  for (auto& [h, p] : by_source_) vkDestroyPipeline(device_, p, nullptr);
  if (cache_) vkDestroyPipelineCache(device_, cache_, nullptr);
  if (layout_) vkDestroyPipelineLayout(device_, layout_, nullptr);
  if (set_layout_) vkDestroyDescriptorSetLayout(device_, set_layout_, nullptr);
  if (wide_layout_) vkDestroyPipelineLayout(device_, wide_layout_, nullptr);
  if (wide_set_layout_) vkDestroyDescriptorSetLayout(device_, wide_set_layout_, nullptr);
}

std::string Shaders::pipeline_cache_path() const {
  const std::string dir = shader_cache_dir();
  if (dir.empty()) return dir;
  const auto& p = phys_.props;
  std::string uuid(reinterpret_cast<const char*>(p.pipelineCacheUUID), VK_UUID_SIZE);
  return dir + "/pipelines-" +
         hex(fnv1a(uuid,
                   fnv1a(std::string(p.deviceName)) ^ p.driverVersion ^ (uint64_t(p.vendorID) << 32 | p.deviceID))) +
         ".bin";
}

void Shaders::save_pipeline_cache() {
  const std::string path = pipeline_cache_path();
  unsaved_ = 0;
  if (path.empty() || !cache_) return;
  size_t n = 0;
  if (vkGetPipelineCacheData(device_, cache_, &n, nullptr) != VK_SUCCESS || n == 0) return;
  std::string data(n, '\0');
  if (vkGetPipelineCacheData(device_, cache_, &n, data.data()) != VK_SUCCESS) return;
  data.resize(n);
  write_cached(path, data);
}

Shaders::Stats Shaders::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

VkPipeline Shaders::get(std::string_view op, const std::string& key, const std::function<std::string()>& source,
                        bool wide) {
  EMBER_CHECK(!wide || wide_layout_, op, ": ", name_, " has no room for a wide pipeline (an ember bug)");
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = pipelines_.find(key); it != pipelines_.end()) return it->second;
  const std::string glsl = source();
  // keys whose source is the same (fused groups of different signatures often are) share it
  const uint64_t source_id = fnv1a(glsl, wide ? 0x9e3779b97f4a7c15ULL : 0);
  if (auto it = by_source_.find(source_id); it != by_source_.end()) {
    pipelines_.emplace(key, it->second);
    return it->second;
  }
  const std::string dir = shader_cache_dir();
  const std::string file = dir.empty() ? dir : dir + "/" + hex(fnv1a(glsl, fnv1a(compiler_tag()))) + ".spv";
  std::string spirv;
  if (!file.empty() && read_cached(file, spirv) && spirv.size() % 4 == 0) {
    ++stats_.disk_hits;
  } else {
    std::vector<uint32_t> words = compile_glsl(key, glsl);
    spirv.assign(reinterpret_cast<const char*>(words.data()), words.size() * 4);
    ++stats_.compiled;
    if (!file.empty()) write_cached(file, spirv);
  }
  VkShaderModuleCreateInfo mi{};
  mi.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO;
  mi.codeSize = spirv.size();
  mi.pCode = reinterpret_cast<const uint32_t*>(spirv.data());
  VkShaderModule module = VK_NULL_HANDLE;
  check(vkCreateShaderModule(device_, &mi, nullptr, &module), op, "vkCreateShaderModule (" + key + ")", name_);
  VkComputePipelineCreateInfo ci{};
  ci.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO;
  ci.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
  ci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  ci.stage.module = module;
  ci.stage.pName = "main";
  ci.layout = wide ? wide_layout_ : layout_;
  VkPipeline pipeline = VK_NULL_HANDLE;
  VkResult r = vkCreateComputePipelines(device_, cache_, 1, &ci, nullptr, &pipeline);
  vkDestroyShaderModule(device_, module, nullptr);
  check(r, op, "vkCreateComputePipelines (" + key + ")", name_);
  pipelines_.emplace(key, pipeline);
  by_source_.emplace(source_id, pipeline);
  ++stats_.pipelines;
  if (++unsaved_ >= 32) save_pipeline_cache();
  return pipeline;
}

}  // namespace ember::vulkan
