// What one physical device offers, read once when the instance is created. The plugin's per-op
// capabilities (support.cpp) and the kernel variants it may pick follow these fields.
#pragma once

#include <vulkan/vulkan.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace qforge::vulkan {

// One cooperative-matrix shape the device multiplies as s8 x s8 -> s32 (M x N x K).
struct CoopMatShape {
  std::uint32_t m = 0, n = 0, k = 0;
  friend bool operator==(const CoopMatShape&, const CoopMatShape&) = default;
};

struct DeviceCaps {
  VkPhysicalDevice physical = VK_NULL_HANDLE;
  int index = 0;
  std::string name;
  std::string type;    // "discrete-gpu", "integrated-gpu", "virtual-gpu", "cpu", "other"
  std::string driver;  // "NVIDIA 580.159.4", "llvmpipe Mesa 22.3.6"
  std::uint32_t api_version = 0;
  std::uint32_t vendor_id = 0, device_id = 0;
  std::uint64_t device_local_bytes = 0;

  // Why the plugin cannot use this device (empty when it can).
  std::string unusable_reason;

  // Features (each is what the device reports; the plugin enables those it uses).
  bool shader_int8 = false;
  bool shader_int64 = false;
  bool storage_buffer_8bit = false;
  bool vulkan_memory_model = false;         // with device scope (the coopmat shaders use it)
  bool integer_dot_product = false;         // VK_KHR_shader_integer_dot_product (or 1.3 core)
  bool integer_dot_product_ext = false;     // needs the extension enabled (device API < 1.3)
  bool dot_4x8_packed_accelerated = false;  // signed 4x8-bit packed dot product in hardware
  bool coopmat_nv = false;                  // VK_NV_cooperative_matrix with the feature on
  bool coopmat_khr_extension = false;       // VK_KHR_cooperative_matrix listed (reported only)
  bool pipeline_executable_info = false;    // VK_KHR_pipeline_executable_properties (statistics)
  std::vector<CoopMatShape> coopmat_s8_shapes;  // s8 x s8 -> s32, subgroup scope
  bool denorm_preserve_f32 = false;

  // Limits.
  std::uint32_t subgroup_size = 0;
  std::uint32_t max_shared_memory = 0;         // maxComputeSharedMemorySize, bytes
  std::uint64_t max_storage_buffer_range = 0;  // bytes one storage-buffer binding may span
  std::uint64_t min_storage_offset_alignment = 1;
  std::uint64_t max_allocation = 0;   // maxMemoryAllocationSize
  std::uint64_t max_buffer_size = 0;  // maxBufferSize (1.3), else max_allocation
  std::uint32_t max_workgroup_count[3] = {0, 0, 0};
  std::uint32_t max_workgroup_invocations = 0;
  float timestamp_period_ns = 0.0f;
  std::uint32_t compute_queue_family = UINT32_MAX;
  std::uint32_t timestamp_valid_bits = 0;

  bool has_coopmat_shape(std::uint32_t m, std::uint32_t n, std::uint32_t k) const;
  // Everything above as text, for DeviceInfo::properties.
  std::map<std::string, std::string> properties() const;
};

// Reads every field of DeviceCaps for one physical device of `instance`.
DeviceCaps query_device_caps(VkInstance instance, VkPhysicalDevice device, int index);

std::string version_text(std::uint32_t version);

}  // namespace qforge::vulkan
