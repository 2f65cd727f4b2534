#include "copy_anchor.h"

#include <vulkan/vulkan.h>

#include <algorithm>
#include <stdexcept>
#include <vector>

namespace qforge::vkbench {
namespace {

void ok(VkResult r, const char* call) {
  if (r != VK_SUCCESS)
    throw std::runtime_error(std::string(call) + " failed: VkResult " + std::to_string(r));
}

}  // namespace

CopyResult measure_copy(int index, std::size_t bytes, int reps) {
  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.apiVersion = VK_API_VERSION_1_2;
  VkInstanceCreateInfo ici{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  ici.pApplicationInfo = &app;
  VkInstance inst;
  ok(vkCreateInstance(&ici, nullptr, &inst), "vkCreateInstance");
  CopyResult result;
  VkDevice dev = VK_NULL_HANDLE;
  std::vector<VkBuffer> bufs;
  std::vector<VkDeviceMemory> mems;
  VkCommandPool pool = VK_NULL_HANDLE;
  VkQueryPool qp = VK_NULL_HANDLE;
  VkFence fence = VK_NULL_HANDLE;
  try {
    std::uint32_t n = 0;
    ok(vkEnumeratePhysicalDevices(inst, &n, nullptr), "vkEnumeratePhysicalDevices");
    std::vector<VkPhysicalDevice> phys(n);
    ok(vkEnumeratePhysicalDevices(inst, &n, phys.data()), "vkEnumeratePhysicalDevices");
    if (index < 0 || index >= static_cast<int>(n))
      throw std::runtime_error("no Vulkan device " + std::to_string(index));
    VkPhysicalDevice pd = phys[static_cast<std::size_t>(index)];
    VkPhysicalDeviceProperties props;
    vkGetPhysicalDeviceProperties(pd, &props);
    result.device = props.deviceName;
    std::uint32_t qn = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(pd, &qn, nullptr);
    std::vector<VkQueueFamilyProperties> qf(qn);
    vkGetPhysicalDeviceQueueFamilyProperties(pd, &qn, qf.data());
    std::uint32_t family = UINT32_MAX;
    for (std::uint32_t i = 0; i < qn; ++i)
      if ((qf[i].queueFlags & VK_QUEUE_COMPUTE_BIT) && qf[i].timestampValidBits > 0) {
        family = i;
        break;
      }
    if (family == UINT32_MAX) throw std::runtime_error("no compute queue with timestamps");
    const float prio = 1.0f;
    VkDeviceQueueCreateInfo qci{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
    qci.queueFamilyIndex = family;
    qci.queueCount = 1;
    qci.pQueuePriorities = &prio;
    VkDeviceCreateInfo dci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
    dci.queueCreateInfoCount = 1;
    dci.pQueueCreateInfos = &qci;
    ok(vkCreateDevice(pd, &dci, nullptr, &dev), "vkCreateDevice");
    VkQueue queue;
    vkGetDeviceQueue(dev, family, 0, &queue);
    VkPhysicalDeviceMemoryProperties mp;
    vkGetPhysicalDeviceMemoryProperties(pd, &mp);
    for (int b = 0; b < 2; ++b) {
      VkBufferCreateInfo bci{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
      bci.size = bytes;
      bci.usage = VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
      VkBuffer buf;
      ok(vkCreateBuffer(dev, &bci, nullptr, &buf), "vkCreateBuffer");
      bufs.push_back(buf);
      VkMemoryRequirements req;
      vkGetBufferMemoryRequirements(dev, buf, &req);
      std::uint32_t type = UINT32_MAX;
      for (std::uint32_t i = 0; i < mp.memoryTypeCount && type == UINT32_MAX; ++i)
        if ((req.memoryTypeBits & (1u << i)) &&
            (mp.memoryTypes[i].propertyFlags & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT))
          type = i;
      VkMemoryAllocateInfo mai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
      mai.allocationSize = req.size;
      mai.memoryTypeIndex = type;
      VkDeviceMemory mem;
      ok(vkAllocateMemory(dev, &mai, nullptr, &mem), "vkAllocateMemory");
      mems.push_back(mem);
      ok(vkBindBufferMemory(dev, buf, mem, 0), "vkBindBufferMemory");
    }
    VkCommandPoolCreateInfo cpi{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
    cpi.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
    cpi.queueFamilyIndex = family;
    ok(vkCreateCommandPool(dev, &cpi, nullptr, &pool), "vkCreateCommandPool");
    VkCommandBufferAllocateInfo cai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    cai.commandPool = pool;
    cai.commandBufferCount = 1;
    VkCommandBuffer cmd;
    ok(vkAllocateCommandBuffers(dev, &cai, &cmd), "vkAllocateCommandBuffers");
    VkQueryPoolCreateInfo qpi{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
    qpi.queryType = VK_QUERY_TYPE_TIMESTAMP;
    qpi.queryCount = 2;
    ok(vkCreateQueryPool(dev, &qpi, nullptr, &qp), "vkCreateQueryPool");
    VkFenceCreateInfo fci{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    ok(vkCreateFence(dev, &fci, nullptr, &fence), "vkCreateFence");
    std::vector<double> times;
    for (int r = 0; r < reps + 1; ++r) {  // the first is a warm-up
      VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
      ok(vkBeginCommandBuffer(cmd, &bi), "vkBeginCommandBuffer");
      vkCmdResetQueryPool(cmd, qp, 0, 2);
      vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, qp, 0);
      VkBufferCopy region{0, 0, bytes};
      vkCmdCopyBuffer(cmd, bufs[r % 2], bufs[(r + 1) % 2], 1, &region);
      vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, qp, 1);
      ok(vkEndCommandBuffer(cmd), "vkEndCommandBuffer");
      VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
      si.commandBufferCount = 1;
      si.pCommandBuffers = &cmd;
      ok(vkQueueSubmit(queue, 1, &si, fence), "vkQueueSubmit");
      ok(vkWaitForFences(dev, 1, &fence, VK_TRUE, UINT64_MAX), "vkWaitForFences");
      ok(vkResetFences(dev, 1, &fence), "vkResetFences");
      std::uint64_t ts[2];
      ok(vkGetQueryPoolResults(dev, qp, 0, 2, sizeof ts, ts, 8,
                               VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT),
         "vkGetQueryPoolResults");
      if (r > 0)
        times.push_back(static_cast<double>(ts[1] - ts[0]) * props.limits.timestampPeriod * 1e-9);
      ok(vkResetCommandBuffer(cmd, 0), "vkResetCommandBuffer");
    }
    std::sort(times.begin(), times.end());
    result.seconds = times[times.size() / 2];
    result.gbps = 2.0 * static_cast<double>(bytes) / result.seconds / 1e9;
  } catch (...) {
    if (dev) vkDeviceWaitIdle(dev);
    for (auto b : bufs) vkDestroyBuffer(dev, b, nullptr);
    for (auto m : mems) vkFreeMemory(dev, m, nullptr);
    if (fence) vkDestroyFence(dev, fence, nullptr);
    if (qp) vkDestroyQueryPool(dev, qp, nullptr);
    if (pool) vkDestroyCommandPool(dev, pool, nullptr);
    if (dev) vkDestroyDevice(dev, nullptr);
    vkDestroyInstance(inst, nullptr);
    throw;
  }
  vkDeviceWaitIdle(dev);
  for (auto b : bufs) vkDestroyBuffer(dev, b, nullptr);
  for (auto m : mems) vkFreeMemory(dev, m, nullptr);
  vkDestroyFence(dev, fence, nullptr);
  vkDestroyQueryPool(dev, qp, nullptr);
  vkDestroyCommandPool(dev, pool, nullptr);
  vkDestroyDevice(dev, nullptr);
  vkDestroyInstance(inst, nullptr);
  return result;
}

}  // namespace qforge::vkbench
