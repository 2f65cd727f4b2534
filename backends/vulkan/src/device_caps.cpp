#include "device_caps.h"

#include <algorithm>
#include <cstring>

#include "vk_error.h"

namespace qforge::vulkan {
namespace {

bool has_extension(const std::vector<VkExtensionProperties>& list, const char* name) {
  return std::any_of(list.begin(), list.end(), [&](const VkExtensionProperties& e) {
    return std::strcmp(e.extensionName, name) == 0;
  });
}

std::string type_name(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return "discrete-gpu";
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return "integrated-gpu";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return "virtual-gpu";
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return "cpu";
    default: return "other";
  }
}

std::string yes_no(bool v) { return v ? "yes" : "no"; }

// The s8 x s8 -> s32 subgroup shapes among the NV cooperative-matrix properties.
std::vector<CoopMatShape> query_coopmat_nv(VkInstance instance, VkPhysicalDevice device) {
  auto fn = reinterpret_cast<PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesNV>(
      vkGetInstanceProcAddr(instance, "vkGetPhysicalDeviceCooperativeMatrixPropertiesNV"));
  if (fn == nullptr) return {};
  std::uint32_t count = 0;
  check(fn(device, &count, nullptr), "vkGetPhysicalDeviceCooperativeMatrixPropertiesNV");
  std::vector<VkCooperativeMatrixPropertiesNV> props(count);
  for (auto& p : props) p.sType = VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_NV;
  check(fn(device, &count, props.data()), "vkGetPhysicalDeviceCooperativeMatrixPropertiesNV");
  std::vector<CoopMatShape> shapes;
  for (const auto& p : props) {
    if (p.AType == VK_COMPONENT_TYPE_SINT8_NV && p.BType == VK_COMPONENT_TYPE_SINT8_NV &&
        p.CType == VK_COMPONENT_TYPE_SINT32_NV && p.DType == VK_COMPONENT_TYPE_SINT32_NV &&
        p.scope == VK_SCOPE_SUBGROUP_NV) {
      const CoopMatShape s{p.MSize, p.NSize, p.KSize};
      if (std::find(shapes.begin(), shapes.end(), s) == shapes.end()) shapes.push_back(s);
    }
  }
  return shapes;
}

}  // namespace

std::string version_text(std::uint32_t v) {
  return std::to_string(VK_API_VERSION_MAJOR(v)) + "." + std::to_string(VK_API_VERSION_MINOR(v)) +
         "." + std::to_string(VK_API_VERSION_PATCH(v));
}

bool DeviceCaps::has_coopmat_shape(std::uint32_t m, std::uint32_t n, std::uint32_t k) const {
  return std::find(coopmat_s8_shapes.begin(), coopmat_s8_shapes.end(), CoopMatShape{m, n, k}) !=
         coopmat_s8_shapes.end();
}

DeviceCaps query_device_caps(VkInstance instance, VkPhysicalDevice device, int index) {
  DeviceCaps c;
  c.physical = device;
  c.index = index;

  VkPhysicalDeviceProperties base{};
  vkGetPhysicalDeviceProperties(device, &base);
  c.name = base.deviceName;
  c.type = type_name(base.deviceType);
  c.api_version = base.apiVersion;
  c.vendor_id = base.vendorID;
  c.device_id = base.deviceID;
  c.max_shared_memory = base.limits.maxComputeSharedMemorySize;
  c.max_storage_buffer_range = base.limits.maxStorageBufferRange;
  c.min_storage_offset_alignment =
      std::max<VkDeviceSize>(1, base.limits.minStorageBufferOffsetAlignment);
  for (int i = 0; i < 3; ++i) c.max_workgroup_count[i] = base.limits.maxComputeWorkGroupCount[i];
  c.max_workgroup_invocations = base.limits.maxComputeWorkGroupInvocations;
  c.timestamp_period_ns = base.limits.timestampPeriod;

  VkPhysicalDeviceMemoryProperties mem{};
  vkGetPhysicalDeviceMemoryProperties(device, &mem);
  for (std::uint32_t i = 0; i < mem.memoryHeapCount; ++i)
    if (mem.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT)
      c.device_local_bytes = std::max<std::uint64_t>(c.device_local_bytes, mem.memoryHeaps[i].size);

  std::uint32_t qcount = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(device, &qcount, nullptr);
  std::vector<VkQueueFamilyProperties> families(qcount);
  vkGetPhysicalDeviceQueueFamilyProperties(device, &qcount, families.data());
  // Prefer a family with compute and timestamps; among those, the one with graphics too (the
  // universal queue is the fastest to submit to on every driver we know of).
  for (std::uint32_t i = 0; i < qcount; ++i) {
    const auto& f = families[i];
    if (!(f.queueFlags & VK_QUEUE_COMPUTE_BIT) || f.queueCount == 0) continue;
    const bool better = c.compute_queue_family == UINT32_MAX ||
                        (f.timestampValidBits > 0 && c.timestamp_valid_bits == 0);
    if (better) {
      c.compute_queue_family = i;
      c.timestamp_valid_bits = f.timestampValidBits;
    }
  }

  if (VK_API_VERSION_MAJOR(c.api_version) == 1 && VK_API_VERSION_MINOR(c.api_version) < 2) {
    c.unusable_reason = "device '" + c.name + "' offers Vulkan " + version_text(c.api_version) +
                        "; the plugin needs Vulkan 1.2";
    return c;
  }
  if (c.compute_queue_family == UINT32_MAX) {
    c.unusable_reason = "device '" + c.name + "' has no compute queue";
    return c;
  }

  std::uint32_t ecount = 0;
  check(vkEnumerateDeviceExtensionProperties(device, nullptr, &ecount, nullptr),
        "vkEnumerateDeviceExtensionProperties");
  std::vector<VkExtensionProperties> exts(ecount);
  check(vkEnumerateDeviceExtensionProperties(device, nullptr, &ecount, exts.data()),
        "vkEnumerateDeviceExtensionProperties");
  const bool core13 = c.api_version >= VK_API_VERSION_1_3;
  const bool dot_ext = has_extension(exts, VK_KHR_SHADER_INTEGER_DOT_PRODUCT_EXTENSION_NAME);
  const bool nv_coop = has_extension(exts, VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME);
  c.coopmat_khr_extension = has_extension(exts, "VK_KHR_cooperative_matrix");
  const bool exec_props = has_extension(exts, VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME);

  // Features.
  VkPhysicalDeviceVulkan11Features f11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
  VkPhysicalDeviceVulkan12Features f12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  VkPhysicalDeviceShaderIntegerDotProductFeatures fdot{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES};
  VkPhysicalDeviceCooperativeMatrixFeaturesNV fcoop{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV};
  VkPhysicalDeviceFeatures2 features{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  features.pNext = &f11;
  f11.pNext = &f12;
  void** tail = &f12.pNext;
  if (core13 || dot_ext) {
    *tail = &fdot;
    tail = &fdot.pNext;
  }
  if (nv_coop) {
    *tail = &fcoop;
    tail = &fcoop.pNext;
  }
  VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR fexec{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR};
  if (exec_props) {
    *tail = &fexec;
    tail = &fexec.pNext;
  }
  vkGetPhysicalDeviceFeatures2(device, &features);
  c.pipeline_executable_info = exec_props && fexec.pipelineExecutableInfo;
  c.shader_int8 = f12.shaderInt8;
  c.shader_int64 = features.features.shaderInt64;
  c.storage_buffer_8bit = f12.storageBuffer8BitAccess;
  c.vulkan_memory_model = f12.vulkanMemoryModel && f12.vulkanMemoryModelDeviceScope;
  c.integer_dot_product = (core13 || dot_ext) && fdot.shaderIntegerDotProduct;
  c.integer_dot_product_ext = c.integer_dot_product && !core13;
  c.coopmat_nv = nv_coop && fcoop.cooperativeMatrix && c.shader_int8 && c.vulkan_memory_model;

  // Properties.
  VkPhysicalDeviceVulkan11Properties p11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_PROPERTIES};
  VkPhysicalDeviceVulkan12Properties p12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_PROPERTIES};
  VkPhysicalDeviceVulkan13Properties p13{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_PROPERTIES};
  VkPhysicalDeviceShaderIntegerDotProductProperties pdot{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_PROPERTIES};
  VkPhysicalDeviceProperties2 props{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  props.pNext = &p11;
  p11.pNext = &p12;
  tail = &p12.pNext;
  if (core13) {
    *tail = &p13;
    tail = &p13.pNext;
  }
  if (c.integer_dot_product) {
    *tail = &pdot;
    tail = &pdot.pNext;
  }
  vkGetPhysicalDeviceProperties2(device, &props);
  c.subgroup_size = p11.subgroupSize;
  c.max_allocation = p11.maxMemoryAllocationSize;
  c.max_buffer_size = core13 ? p13.maxBufferSize : p11.maxMemoryAllocationSize;
  c.denorm_preserve_f32 = p12.shaderDenormPreserveFloat32;
  c.dot_4x8_packed_accelerated =
      c.integer_dot_product && pdot.integerDotProduct4x8BitPackedSignedAccelerated;
  c.driver = std::string(p12.driverName) + " " + p12.driverInfo;

  if (c.coopmat_nv) {
    c.coopmat_s8_shapes = query_coopmat_nv(instance, device);
    if (c.coopmat_s8_shapes.empty()) c.coopmat_nv = false;
  }
  return c;
}

std::map<std::string, std::string> DeviceCaps::properties() const {
  std::map<std::string, std::string> p;
  p["index"] = std::to_string(index);
  p["type"] = type;
  p["vulkan_api"] = version_text(api_version);
  p["driver"] = driver;
  char ids[32];
  std::snprintf(ids, sizeof ids, "%04x:%04x", vendor_id, device_id);
  p["vendor_device_id"] = ids;
  if (!unusable_reason.empty()) p["unusable"] = unusable_reason;
  p["shader_int8"] = yes_no(shader_int8);
  p["shader_int64"] = yes_no(shader_int64);
  p["storage_buffer_8bit"] = yes_no(storage_buffer_8bit);
  p["integer_dot_product"] = yes_no(integer_dot_product);
  p["integer_dot_product_4x8_packed_accelerated"] = yes_no(dot_4x8_packed_accelerated);
  p["cooperative_matrix_nv"] = yes_no(coopmat_nv);
  p["cooperative_matrix_khr_extension"] = yes_no(coopmat_khr_extension);
  p["pipeline_executable_info"] = yes_no(pipeline_executable_info);
  std::string shapes;
  for (const auto& s : coopmat_s8_shapes)
    shapes += (shapes.empty() ? "" : ",") + std::to_string(s.m) + "x" + std::to_string(s.n) + "x" +
              std::to_string(s.k);
  p["cooperative_matrix_s8_shapes"] = shapes.empty() ? "none" : shapes;
  p["denorm_preserve_f32"] = yes_no(denorm_preserve_f32);
  p["subgroup_size"] = std::to_string(subgroup_size);
  p["max_shared_memory_bytes"] = std::to_string(max_shared_memory);
  p["max_storage_buffer_range_bytes"] = std::to_string(max_storage_buffer_range);
  p["max_allocation_bytes"] = std::to_string(max_allocation);
  p["max_workgroup_count"] = std::to_string(max_workgroup_count[0]) + "," +
                             std::to_string(max_workgroup_count[1]) + "," +
                             std::to_string(max_workgroup_count[2]);
  p["timestamp_valid_bits"] = std::to_string(timestamp_valid_bits);
  return p;
}

}  // namespace qforge::vulkan
