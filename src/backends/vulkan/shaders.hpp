// Compute pipelines from generated GLSL: compiled to SPIR-V by shaderc at run time, cached in
// memory by key and on disk by the hash of the source (SPIR-V does not depend on the device),
// under $EMBER_CACHE_DIR/vulkan (else $XDG_CACHE_HOME/ember/vulkan, else ~/.cache/ember/vulkan).
// Each file carries its size and a checksum: a corrupt or truncated file is ignored, compiled
// again and rewritten (atomically). The driver's own VkPipelineCache is kept there too, one file
// per device and driver version, under the same checks.
#pragma once

#include <vulkan/vulkan.h>

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "runtime.hpp"

namespace ember::vulkan {

// The GLSL-to-SPIR-V compiler (no device needed): SPIR-V words, or an Error naming `name` with
// shaderc's log and the numbered source.
std::vector<uint32_t> compile_glsl(const std::string& name, const std::string& source);
// The disk cache's folder (made on demand; "" when there is none); read from the environment at
// each call.
std::string shader_cache_dir();

class Shaders {
 public:
  // Pipelines for `device`; `name` ("vulkan:0") goes into error messages.
  Shaders(VkDevice device, const PhysicalDevice& phys, std::string name);
  ~Shaders();
  Shaders(const Shaders&) = delete;
  Shaders& operator=(const Shaders&) = delete;

  // The pipeline of `key` ("add/f32"), made from source() on first use (source is called only
  // when the memory cache lacks the key); keys whose sources are the same share one pipeline. `op` names the op in
  // errors. A `wide` pipeline has wide_operands() more operand bindings, from binding 8 on (fused kernels).
  VkPipeline get(std::string_view op, const std::string& key, const std::function<std::string()>& source,
                 bool wide = false);
  VkPipelineLayout layout(bool wide = false) const { return wide ? wide_layout_ : layout_; }
  VkDescriptorSetLayout set_layout(bool wide = false) const { return wide ? wide_set_layout_ : set_layout_; }
  // The operand bindings a wide pipeline has beyond 0-5 (0 where the device's limit on storage
  // buffers per shader leaves none).
  int wide_operands() const { return wide_operands_; }

  struct Stats {
    int64_t pipelines = 0;  // made in this process
    int64_t compiled = 0;   // of them, compiled by shaderc
    int64_t disk_hits = 0;  // of them, SPIR-V read from the disk cache
  };
  Stats stats() const;
  // Writes the driver's pipeline cache to the disk cache (also done when destroyed).
  void save_pipeline_cache();

 private:
  std::string pipeline_cache_path() const;
  VkDevice device_;
  const PhysicalDevice& phys_;
  std::string name_;
  VkDescriptorSetLayout set_layout_ = VK_NULL_HANDLE;
  VkPipelineLayout layout_ = VK_NULL_HANDLE;
  VkDescriptorSetLayout wide_set_layout_ = VK_NULL_HANDLE;
  VkPipelineLayout wide_layout_ = VK_NULL_HANDLE;
  int wide_operands_ = 0;
  VkPipelineCache cache_ = VK_NULL_HANDLE;
  std::map<std::string, VkPipeline, std::less<>> pipelines_;  // by key
  std::map<uint64_t, VkPipeline> by_source_;                  // by the hash of the source (each once)
  int64_t unsaved_ = 0;  // pipelines made since the pipeline cache was last written
  mutable std::mutex mu_;
  Stats stats_;
};

}  // namespace ember::vulkan
