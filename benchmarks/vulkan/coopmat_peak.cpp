#include "coopmat_peak.h"

#include <vulkan/vulkan.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <stdexcept>

#include "coopmat_peak_r16.spv.h"
#include "coopmat_peak_r8.spv.h"
#include "coopmat_peak_s16.spv.h"
#include "coopmat_peak_s8.spv.h"

namespace qforge::vkbench {
namespace {

void ok(VkResult r, const char* call) {
  if (r != VK_SUCCESS)
    throw std::runtime_error(std::string(call) + " failed: VkResult " + std::to_string(r));
}

struct Variant {
  const char* what;
  const unsigned char* spirv;
  std::size_t bytes;
  std::uint32_t n;              // accumulator tile columns
  std::uint32_t mmas_per_iter;  // multiply-adds per subgroup and loop iteration
};

// Everything the measurement creates, destroyed in reverse order whatever happens.
struct Objects {
  VkInstance inst = VK_NULL_HANDLE;
  VkDevice dev = VK_NULL_HANDLE;
  VkBuffer buf = VK_NULL_HANDLE;
  VkDeviceMemory mem = VK_NULL_HANDLE;
  VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
  VkPipelineLayout layout = VK_NULL_HANDLE;
  VkDescriptorPool dpool = VK_NULL_HANDLE;
  VkCommandPool pool = VK_NULL_HANDLE;
  VkQueryPool qp = VK_NULL_HANDLE;
  VkFence fence = VK_NULL_HANDLE;
  std::vector<VkShaderModule> modules;
  std::vector<VkPipeline> pipelines;
  ~Objects() {
    if (dev) {
      vkDeviceWaitIdle(dev);
      for (auto p : pipelines) vkDestroyPipeline(dev, p, nullptr);
      for (auto m : modules) vkDestroyShaderModule(dev, m, nullptr);
      if (fence) vkDestroyFence(dev, fence, nullptr);
      if (qp) vkDestroyQueryPool(dev, qp, nullptr);
      if (pool) vkDestroyCommandPool(dev, pool, nullptr);
      if (dpool) vkDestroyDescriptorPool(dev, dpool, nullptr);
      if (layout) vkDestroyPipelineLayout(dev, layout, nullptr);
      if (set_layout) vkDestroyDescriptorSetLayout(dev, set_layout, nullptr);
      if (buf) vkDestroyBuffer(dev, buf, nullptr);
      if (mem) vkFreeMemory(dev, mem, nullptr);
      vkDestroyDevice(dev, nullptr);
    }
    if (inst) vkDestroyInstance(inst, nullptr);
  }
};

bool has_s8_coopmat(VkInstance inst, VkPhysicalDevice pd) {
  std::uint32_t n = 0;
  vkEnumerateDeviceExtensionProperties(pd, nullptr, &n, nullptr);
  std::vector<VkExtensionProperties> ext(n);
  vkEnumerateDeviceExtensionProperties(pd, nullptr, &n, ext.data());
  const bool listed = std::any_of(ext.begin(), ext.end(), [](const VkExtensionProperties& e) {
    return std::strcmp(e.extensionName, VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME) == 0;
  });
  if (!listed) return false;
  auto get = reinterpret_cast<PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesNV>(
      vkGetInstanceProcAddr(inst, "vkGetPhysicalDeviceCooperativeMatrixPropertiesNV"));
  if (!get) return false;
  std::uint32_t count = 0;
  get(pd, &count, nullptr);
  std::vector<VkCooperativeMatrixPropertiesNV> props(
      count, {VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_NV});
  get(pd, &count, props.data());
  for (const auto& p : props)
    if (p.AType == VK_COMPONENT_TYPE_SINT8_NV && p.MSize == 16 && p.NSize == 16 && p.KSize == 32 &&
        p.scope == VK_SCOPE_SUBGROUP_NV)
      return true;
  return false;
}

}  // namespace

std::vector<CoopmatPeak> measure_coopmat_peak(int index, int reps) {
  const Variant variants[] = {
      {"16x16x32 s8, fragments in registers", qforge_spirv_coopmat_peak_r16,
       sizeof qforge_spirv_coopmat_peak_r16, 16, 32},
      {"16x8x32 s8, fragments in registers", qforge_spirv_coopmat_peak_r8,
       sizeof qforge_spirv_coopmat_peak_r8, 8, 32},
      {"16x16x32 s8, fragments from shared memory", qforge_spirv_coopmat_peak_s16,
       sizeof qforge_spirv_coopmat_peak_s16, 16, 8},
      {"16x8x32 s8, fragments from shared memory", qforge_spirv_coopmat_peak_s8,
       sizeof qforge_spirv_coopmat_peak_s8, 8, 8},
  };
  Objects o;
  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.apiVersion = VK_API_VERSION_1_2;
  VkInstanceCreateInfo ici{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  ici.pApplicationInfo = &app;
  ok(vkCreateInstance(&ici, nullptr, &o.inst), "vkCreateInstance");
  std::uint32_t n = 0;
  ok(vkEnumeratePhysicalDevices(o.inst, &n, nullptr), "vkEnumeratePhysicalDevices");
  std::vector<VkPhysicalDevice> phys(n);
  ok(vkEnumeratePhysicalDevices(o.inst, &n, phys.data()), "vkEnumeratePhysicalDevices");
  if (index < 0 || index >= static_cast<int>(n))
    throw std::runtime_error("no Vulkan device " + std::to_string(index));
  VkPhysicalDevice pd = phys[static_cast<std::size_t>(index)];
  if (!has_s8_coopmat(o.inst, pd)) return {};
  VkPhysicalDeviceProperties props;
  vkGetPhysicalDeviceProperties(pd, &props);
  std::uint32_t qn = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(pd, &qn, nullptr);
  std::vector<VkQueueFamilyProperties> qf(qn);
  vkGetPhysicalDeviceQueueFamilyProperties(pd, &qn, qf.data());
  std::uint32_t family = UINT32_MAX;
  for (std::uint32_t i = 0; i < qn && family == UINT32_MAX; ++i)
    if ((qf[i].queueFlags & VK_QUEUE_COMPUTE_BIT) && qf[i].timestampValidBits > 0) family = i;
  if (family == UINT32_MAX) throw std::runtime_error("no compute queue with timestamps");

  const float prio = 1.0f;
  VkDeviceQueueCreateInfo qci{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  qci.queueFamilyIndex = family;
  qci.queueCount = 1;
  qci.pQueuePriorities = &prio;
  VkPhysicalDeviceVulkan12Features f12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  f12.shaderInt8 = VK_TRUE;
  f12.vulkanMemoryModel = VK_TRUE;
  f12.vulkanMemoryModelDeviceScope = VK_TRUE;
  VkPhysicalDeviceCooperativeMatrixFeaturesNV fcoop{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV};
  fcoop.cooperativeMatrix = VK_TRUE;
  f12.pNext = &fcoop;
  const char* ext = VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME;
  VkDeviceCreateInfo dci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  dci.pNext = &f12;
  dci.queueCreateInfoCount = 1;
  dci.pQueueCreateInfos = &qci;
  dci.enabledExtensionCount = 1;
  dci.ppEnabledExtensionNames = &ext;
  ok(vkCreateDevice(pd, &dci, nullptr, &o.dev), "vkCreateDevice");
  VkQueue queue;
  vkGetDeviceQueue(o.dev, family, 0, &queue);

  // 64 KiB: the shader's inputs (32 KiB) and the accumulators it would store.
  const VkDeviceSize bytes = 64 << 10;
  VkBufferCreateInfo bci{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  bci.size = bytes;
  bci.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  ok(vkCreateBuffer(o.dev, &bci, nullptr, &o.buf), "vkCreateBuffer");
  VkMemoryRequirements req;
  vkGetBufferMemoryRequirements(o.dev, o.buf, &req);
  VkPhysicalDeviceMemoryProperties mp;
  vkGetPhysicalDeviceMemoryProperties(pd, &mp);
  std::uint32_t type = UINT32_MAX;
  for (std::uint32_t i = 0; i < mp.memoryTypeCount && type == UINT32_MAX; ++i)
    if ((req.memoryTypeBits & (1u << i)) &&
        (mp.memoryTypes[i].propertyFlags & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT))
      type = i;
  VkMemoryAllocateInfo mai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  mai.allocationSize = req.size;
  mai.memoryTypeIndex = type;
  ok(vkAllocateMemory(o.dev, &mai, nullptr, &o.mem), "vkAllocateMemory");
  ok(vkBindBufferMemory(o.dev, o.buf, o.mem, 0), "vkBindBufferMemory");

  VkDescriptorSetLayoutBinding binding{0, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1,
                                       VK_SHADER_STAGE_COMPUTE_BIT, nullptr};
  VkDescriptorSetLayoutCreateInfo sli{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
  sli.bindingCount = 1;
  sli.pBindings = &binding;
  ok(vkCreateDescriptorSetLayout(o.dev, &sli, nullptr, &o.set_layout),
     "vkCreateDescriptorSetLayout");
  VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, 8};
  VkPipelineLayoutCreateInfo pli{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  pli.setLayoutCount = 1;
  pli.pSetLayouts = &o.set_layout;
  pli.pushConstantRangeCount = 1;
  pli.pPushConstantRanges = &range;
  ok(vkCreatePipelineLayout(o.dev, &pli, nullptr, &o.layout), "vkCreatePipelineLayout");
  VkDescriptorPoolSize ps{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1};
  VkDescriptorPoolCreateInfo dpi{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
  dpi.maxSets = 1;
  dpi.poolSizeCount = 1;
  dpi.pPoolSizes = &ps;
  ok(vkCreateDescriptorPool(o.dev, &dpi, nullptr, &o.dpool), "vkCreateDescriptorPool");
  VkDescriptorSetAllocateInfo dsai{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
  dsai.descriptorPool = o.dpool;
  dsai.descriptorSetCount = 1;
  dsai.pSetLayouts = &o.set_layout;
  VkDescriptorSet set;
  ok(vkAllocateDescriptorSets(o.dev, &dsai, &set), "vkAllocateDescriptorSets");
  VkDescriptorBufferInfo dbi{o.buf, 0, bytes};
  VkWriteDescriptorSet w{VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
  w.dstSet = set;
  w.descriptorCount = 1;
  w.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
  w.pBufferInfo = &dbi;
  vkUpdateDescriptorSets(o.dev, 1, &w, 0, nullptr);

  for (const Variant& v : variants) {
    VkShaderModuleCreateInfo smi{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
    smi.codeSize = v.bytes;
    smi.pCode = reinterpret_cast<const std::uint32_t*>(v.spirv);
    VkShaderModule m;
    ok(vkCreateShaderModule(o.dev, &smi, nullptr, &m), "vkCreateShaderModule");
    o.modules.push_back(m);
    VkComputePipelineCreateInfo cpi{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
    cpi.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO};
    cpi.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
    cpi.stage.module = m;
    cpi.stage.pName = "main";
    cpi.layout = o.layout;
    VkPipeline p;
    ok(vkCreateComputePipelines(o.dev, VK_NULL_HANDLE, 1, &cpi, nullptr, &p),
       "vkCreateComputePipelines");
    o.pipelines.push_back(p);
  }

  VkCommandPoolCreateInfo cpci{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  cpci.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  cpci.queueFamilyIndex = family;
  ok(vkCreateCommandPool(o.dev, &cpci, nullptr, &o.pool), "vkCreateCommandPool");
  VkCommandBufferAllocateInfo cai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  cai.commandPool = o.pool;
  cai.commandBufferCount = 1;
  VkCommandBuffer cmd;
  ok(vkAllocateCommandBuffers(o.dev, &cai, &cmd), "vkAllocateCommandBuffers");
  VkQueryPoolCreateInfo qpi{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
  qpi.queryType = VK_QUERY_TYPE_TIMESTAMP;
  qpi.queryCount = 2;
  ok(vkCreateQueryPool(o.dev, &qpi, nullptr, &o.qp), "vkCreateQueryPool");
  VkFenceCreateInfo fci{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  ok(vkCreateFence(o.dev, &fci, nullptr, &o.fence), "vkCreateFence");

  // Workgroups of 8 subgroups; enough of them to fill every multiprocessor several times over.
  const std::uint32_t groups = 4096, subgroups = 8;
  std::vector<CoopmatPeak> out;
  for (std::size_t k = 0; k < std::size(variants); ++k) {
    const Variant& v = variants[k];
    const std::uint32_t push[2] = {v.mmas_per_iter == 32 ? 256u : 1024u, 0u};
    std::vector<double> times;
    for (int r = 0; r < reps + 1; ++r) {  // the first is a warm-up
      VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
      ok(vkBeginCommandBuffer(cmd, &bi), "vkBeginCommandBuffer");
      if (r == 0) {
        vkCmdFillBuffer(cmd, o.buf, 0, bytes, 0x01fe7f80u);
        VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
        mb.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
        mb.dstAccessMask = VK_ACCESS_SHADER_READ_BIT;
        vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT,
                             VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &mb, 0, nullptr, 0,
                             nullptr);
      }
      vkCmdResetQueryPool(cmd, o.qp, 0, 2);
      vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, o.pipelines[k]);
      vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, o.layout, 0, 1, &set, 0,
                              nullptr);
      vkCmdPushConstants(cmd, o.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof push, push);
      vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, o.qp, 0);
      vkCmdDispatch(cmd, groups, 1, 1);
      vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, o.qp, 1);
      ok(vkEndCommandBuffer(cmd), "vkEndCommandBuffer");
      VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
      si.commandBufferCount = 1;
      si.pCommandBuffers = &cmd;
      ok(vkQueueSubmit(queue, 1, &si, o.fence), "vkQueueSubmit");
      ok(vkWaitForFences(o.dev, 1, &o.fence, VK_TRUE, UINT64_MAX), "vkWaitForFences");
      ok(vkResetFences(o.dev, 1, &o.fence), "vkResetFences");
      std::uint64_t ts[2];
      ok(vkGetQueryPoolResults(o.dev, o.qp, 0, 2, sizeof ts, ts, 8,
                               VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT),
         "vkGetQueryPoolResults");
      if (r > 0)
        times.push_back(static_cast<double>(ts[1] - ts[0]) * props.limits.timestampPeriod * 1e-9);
      ok(vkResetCommandBuffer(cmd, 0), "vkResetCommandBuffer");
    }
    std::sort(times.begin(), times.end());
    const double s = times[times.size() / 2];
    const double ops = 2.0 * 16 * v.n * 32 * v.mmas_per_iter * push[0] * subgroups * groups;
    out.push_back({v.what, s, ops / s / 1e12});
  }
  return out;
}

}  // namespace qforge::vkbench
