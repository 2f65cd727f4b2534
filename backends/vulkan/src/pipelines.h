// Compute pipelines made from the embedded SPIR-V (shaders.h), created on first use and kept
// for the life of the device. Every pipeline has one descriptor set of storage buffers
// (bindings 0..n-1) and one push-constant block; variants of one shader differ by
// specialization constants (constant_id 0..n-1, each 32 bits).
#pragma once

#include <vulkan/vulkan.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

namespace qforge::vulkan {

class Context;

struct Pipeline {
  std::string name;
  VkPipeline pipeline = VK_NULL_HANDLE;
  VkPipelineLayout layout = VK_NULL_HANDLE;
  VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
  std::uint32_t bindings = 0;
  std::uint32_t push_bytes = 0;
  // The driver's compiler statistics ("Register Count=128; ..."), when captured
  // (Context::capture_stats()); empty otherwise.
  std::string stats;
};

class PipelineCache {
 public:
  explicit PipelineCache(Context& ctx) : ctx_(ctx) {}
  ~PipelineCache();
  PipelineCache(const PipelineCache&) = delete;
  PipelineCache& operator=(const PipelineCache&) = delete;

  // The pipeline of embedded shader `shader` with these specialization constants; throws
  // internal when the shader is not embedded, backend when creation fails.
  const Pipeline& get(std::string_view shader, std::uint32_t bindings, std::uint32_t push_bytes,
                      std::span<const std::uint32_t> spec = {});

 private:
  VkShaderModule module(std::string_view shader);

  Context& ctx_;
  std::mutex mutex_;  // get() from several threads (plans of one device run at once)
  std::map<std::string, VkShaderModule, std::less<>> modules_;
  std::map<std::tuple<std::string, std::vector<std::uint32_t>>, std::unique_ptr<Pipeline>>
      pipelines_;
};

}  // namespace qforge::vulkan
