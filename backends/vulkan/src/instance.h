// The Vulkan instance and the list of physical devices. Created once per plugin object.
//
// Validation: QFORGE_VULKAN_VALIDATION=1 enables VK_LAYER_KHRONOS_validation when it is
// installed (Debian's vulkan-validationlayers), with a debug messenger that collects every
// validation error; the plugin turns collected errors into a qforge::Error after each
// submission (Context::submit), so a test that triggers one fails. Without the layer installed
// the request is logged and ignored.
#pragma once

#include <vulkan/vulkan.h>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "device_caps.h"

namespace qforge::vulkan {

class Instance {
 public:
  // Throws qforge::Error(unavailable) when no Vulkan loader/driver answers, or (backend) when a
  // call fails.
  static std::shared_ptr<Instance> create();
  ~Instance();
  Instance(const Instance&) = delete;
  Instance& operator=(const Instance&) = delete;

  VkInstance handle() const noexcept { return instance_; }
  std::uint32_t api_version() const noexcept { return api_version_; }
  const std::vector<DeviceCaps>& devices() const noexcept { return devices_; }
  bool validation_enabled() const noexcept { return messenger_ != VK_NULL_HANDLE; }

  // Validation errors collected since the last call (empty without validation).
  std::vector<std::string> take_validation_errors();
  // Called by the messenger callback.
  void record_validation_error(std::string message);

 private:
  Instance() = default;

  VkInstance instance_ = VK_NULL_HANDLE;
  VkDebugUtilsMessengerEXT messenger_ = VK_NULL_HANDLE;
  std::uint32_t api_version_ = VK_API_VERSION_1_0;
  std::vector<DeviceCaps> devices_;
  std::mutex errors_mutex_;
  std::vector<std::string> errors_;
};

}  // namespace qforge::vulkan
