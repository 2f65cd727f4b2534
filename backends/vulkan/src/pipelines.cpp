#include "pipelines.h"

#include <string>
#include <vector>

#include "context.h"
#include "qforge/error.h"
#include "shaders.h"
#include "vk_error.h"

namespace qforge::vulkan {
namespace {

std::string statistic_text(const VkPipelineExecutableStatisticKHR& s) {
  switch (s.format) {
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_BOOL32_KHR: return s.value.b32 ? "yes" : "no";
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_INT64_KHR: return std::to_string(s.value.i64);
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_UINT64_KHR: return std::to_string(s.value.u64);
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_FLOAT64_KHR: return std::to_string(s.value.f64);
    default: return "?";
  }
}

// Every statistic of every executable of `pipeline`, as "name=value; ...". Best effort: a
// driver that answers nothing gives an empty string.
std::string pipeline_statistics(VkDevice dev, VkPipeline pipeline) {
  auto props = reinterpret_cast<PFN_vkGetPipelineExecutablePropertiesKHR>(
      vkGetDeviceProcAddr(dev, "vkGetPipelineExecutablePropertiesKHR"));
  auto stats = reinterpret_cast<PFN_vkGetPipelineExecutableStatisticsKHR>(
      vkGetDeviceProcAddr(dev, "vkGetPipelineExecutableStatisticsKHR"));
  if (!props || !stats) return {};
  VkPipelineInfoKHR info{VK_STRUCTURE_TYPE_PIPELINE_INFO_KHR};
  info.pipeline = pipeline;
  std::uint32_t count = 0;
  if (props(dev, &info, &count, nullptr) != VK_SUCCESS) return {};
  std::string text;
  for (std::uint32_t e = 0; e < count; ++e) {
    VkPipelineExecutableInfoKHR exec{VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INFO_KHR};
    exec.pipeline = pipeline;
    exec.executableIndex = e;
    std::uint32_t n = 0;
    if (stats(dev, &exec, &n, nullptr) != VK_SUCCESS) continue;
    std::vector<VkPipelineExecutableStatisticKHR> v(
        n, {VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_STATISTIC_KHR});
    if (stats(dev, &exec, &n, v.data()) != VK_SUCCESS) continue;
    for (std::uint32_t i = 0; i < n; ++i)
      text += (text.empty() ? "" : "; ") + std::string(v[i].name) + "=" + statistic_text(v[i]);
  }
  return text;
}

}  // namespace

PipelineCache::~PipelineCache() {
  VkDevice dev = ctx_.device();
  for (auto& [key, p] : pipelines_) {
    vkDestroyPipeline(dev, p->pipeline, nullptr);
    vkDestroyPipelineLayout(dev, p->layout, nullptr);
    vkDestroyDescriptorSetLayout(dev, p->set_layout, nullptr);
  }
  for (auto& [name, m] : modules_) vkDestroyShaderModule(dev, m, nullptr);
}

VkShaderModule PipelineCache::module(std::string_view shader) {
  if (auto it = modules_.find(shader); it != modules_.end()) return it->second;
  for (const ShaderBlob& blob : shader_blobs()) {
    if (shader != blob.name) continue;
    VkShaderModuleCreateInfo info{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
    info.codeSize = blob.size;
    info.pCode = reinterpret_cast<const std::uint32_t*>(blob.data);
    VkShaderModule m = VK_NULL_HANDLE;
    check(vkCreateShaderModule(ctx_.device(), &info, nullptr, &m),
          "vkCreateShaderModule(" + std::string(shader) + ")");
    modules_.emplace(std::string(shader), m);
    return m;
  }
  throw Error(ErrorCode::internal, "vulkan: shader '" + std::string(shader) +
                                       "' is not embedded in the plugin (see shader_table.cpp)");
}

const Pipeline& PipelineCache::get(std::string_view shader, std::uint32_t bindings,
                                   std::uint32_t push_bytes, std::span<const std::uint32_t> spec) {
  auto key =
      std::make_tuple(std::string(shader), std::vector<std::uint32_t>(spec.begin(), spec.end()));
  std::lock_guard lock(mutex_);  // entries are never removed: references stay valid after it
  if (auto it = pipelines_.find(key); it != pipelines_.end()) return *it->second;

  VkDevice dev = ctx_.device();
  auto p = std::make_unique<Pipeline>();
  p->name = std::string(shader);
  p->bindings = bindings;
  p->push_bytes = push_bytes;

  std::vector<VkDescriptorSetLayoutBinding> b(bindings);
  for (std::uint32_t i = 0; i < bindings; ++i)
    b[i] = {i, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, nullptr};
  VkDescriptorSetLayoutCreateInfo set{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
  set.bindingCount = bindings;
  set.pBindings = b.data();
  check(vkCreateDescriptorSetLayout(dev, &set, nullptr, &p->set_layout),
        "vkCreateDescriptorSetLayout");

  VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, push_bytes};
  VkPipelineLayoutCreateInfo layout{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  layout.setLayoutCount = 1;
  layout.pSetLayouts = &p->set_layout;
  layout.pushConstantRangeCount = push_bytes > 0 ? 1 : 0;
  layout.pPushConstantRanges = &range;
  if (VkResult r = vkCreatePipelineLayout(dev, &layout, nullptr, &p->layout); r != VK_SUCCESS) {
    vkDestroyDescriptorSetLayout(dev, p->set_layout, nullptr);
    check(r, "vkCreatePipelineLayout");
  }

  std::vector<VkSpecializationMapEntry> entries(spec.size());
  for (std::uint32_t i = 0; i < spec.size(); ++i)
    entries[i] = {i, static_cast<std::uint32_t>(i * sizeof(std::uint32_t)), sizeof(std::uint32_t)};
  VkSpecializationInfo special{static_cast<std::uint32_t>(entries.size()), entries.data(),
                               spec.size() * sizeof(std::uint32_t), spec.data()};
  VkComputePipelineCreateInfo info{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  info.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO};
  info.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  info.stage.module = module(shader);
  info.stage.pName = "main";
  info.stage.pSpecializationInfo = spec.empty() ? nullptr : &special;
  info.layout = p->layout;
  if (ctx_.capture_stats()) info.flags |= VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR;
  if (VkResult r = vkCreateComputePipelines(dev, VK_NULL_HANDLE, 1, &info, nullptr, &p->pipeline);
      r != VK_SUCCESS) {
    vkDestroyPipelineLayout(dev, p->layout, nullptr);
    vkDestroyDescriptorSetLayout(dev, p->set_layout, nullptr);
    check(r, "vkCreateComputePipelines(" + std::string(shader) + ")");
  }
  if (ctx_.capture_stats()) p->stats = pipeline_statistics(dev, p->pipeline);
  const Pipeline& ref = *p;
  pipelines_.emplace(std::move(key), std::move(p));
  return ref;
}

}  // namespace qforge::vulkan
