#include "instance.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "qforge/error.h"
#include "qforge/log.h"
#include "vk_error.h"

namespace qforge::vulkan {
namespace {

constexpr const char* kValidationLayer = "VK_LAYER_KHRONOS_validation";

bool env_flag(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' && std::strcmp(v, "0") != 0;
}

bool layer_installed(const char* name) {
  std::uint32_t count = 0;
  if (vkEnumerateInstanceLayerProperties(&count, nullptr) != VK_SUCCESS) return false;
  std::vector<VkLayerProperties> layers(count);
  if (vkEnumerateInstanceLayerProperties(&count, layers.data()) != VK_SUCCESS) return false;
  return std::any_of(layers.begin(), layers.end(), [&](const VkLayerProperties& l) {
    return std::strcmp(l.layerName, name) == 0;
  });
}

bool instance_extension_present(const char* name) {
  std::uint32_t count = 0;
  if (vkEnumerateInstanceExtensionProperties(nullptr, &count, nullptr) != VK_SUCCESS) return false;
  std::vector<VkExtensionProperties> exts(count);
  if (vkEnumerateInstanceExtensionProperties(nullptr, &count, exts.data()) != VK_SUCCESS)
    return false;
  return std::any_of(exts.begin(), exts.end(), [&](const VkExtensionProperties& e) {
    return std::strcmp(e.extensionName, name) == 0;
  });
}

VKAPI_ATTR VkBool32 VKAPI_CALL on_validation_message(
    VkDebugUtilsMessageSeverityFlagBitsEXT severity, VkDebugUtilsMessageTypeFlagsEXT,
    const VkDebugUtilsMessengerCallbackDataEXT* data, void* user) {
  const std::string text = data && data->pMessage ? data->pMessage : "(no message)";
  if (severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT) {
    qforge::log_message(qforge::LogLevel::error, "vulkan validation: " + text);
    static_cast<Instance*>(user)->record_validation_error(text);
  } else {
    qforge::log_message(qforge::LogLevel::warn, "vulkan validation: " + text);
  }
  return VK_FALSE;
}

}  // namespace

std::shared_ptr<Instance> Instance::create() {
  std::shared_ptr<Instance> self(new Instance());
  std::uint32_t loader_version = VK_API_VERSION_1_0;
  // vkEnumerateInstanceVersion is 1.1; a 1.0 loader lacks it.
  auto enumerate_version = reinterpret_cast<PFN_vkEnumerateInstanceVersion>(
      vkGetInstanceProcAddr(nullptr, "vkEnumerateInstanceVersion"));
  if (enumerate_version) check(enumerate_version(&loader_version), "vkEnumerateInstanceVersion");
  if (loader_version < VK_API_VERSION_1_2)
    throw Error(ErrorCode::unavailable, "the Vulkan loader offers Vulkan " +
                                            version_text(loader_version) +
                                            "; the plugin needs Vulkan 1.2");
  self->api_version_ = std::min<std::uint32_t>(loader_version, VK_API_VERSION_1_3);

  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "qforge";
  app.pEngineName = "qforge";
  app.apiVersion = self->api_version_;

  std::vector<const char*> layers;
  std::vector<const char*> extensions;
  const bool want_validation = env_flag("QFORGE_VULKAN_VALIDATION");
  bool validation = false;
  if (want_validation) {
    if (layer_installed(kValidationLayer) &&
        instance_extension_present(VK_EXT_DEBUG_UTILS_EXTENSION_NAME)) {
      layers.push_back(kValidationLayer);
      extensions.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
      validation = true;
    } else {
      qforge::log_message(qforge::LogLevel::warn,
                          std::string("vulkan: QFORGE_VULKAN_VALIDATION is set but ") +
                              kValidationLayer +
                              " (or VK_EXT_debug_utils) is not installed; running without "
                              "validation");
    }
  }

  VkInstanceCreateInfo info{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  info.pApplicationInfo = &app;
  info.enabledLayerCount = static_cast<std::uint32_t>(layers.size());
  info.ppEnabledLayerNames = layers.data();
  info.enabledExtensionCount = static_cast<std::uint32_t>(extensions.size());
  info.ppEnabledExtensionNames = extensions.data();
  const VkResult r = vkCreateInstance(&info, nullptr, &self->instance_);
  if (r == VK_ERROR_INCOMPATIBLE_DRIVER)
    throw Error(ErrorCode::unavailable,
                "vkCreateInstance: VK_ERROR_INCOMPATIBLE_DRIVER (no Vulkan driver is installed "
                "or none supports Vulkan 1.2)");
  check(r, "vkCreateInstance");

  if (validation) {
    auto create_messenger = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(self->instance_, "vkCreateDebugUtilsMessengerEXT"));
    if (create_messenger == nullptr)
      throw Error(ErrorCode::backend,
                  "vkGetInstanceProcAddr: vkCreateDebugUtilsMessengerEXT not found although "
                  "VK_EXT_debug_utils is enabled");
    VkDebugUtilsMessengerCreateInfoEXT m{VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
    m.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT |
                        VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT;
    m.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                    VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                    VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
    m.pfnUserCallback = &on_validation_message;
    m.pUserData = self.get();
    check(create_messenger(self->instance_, &m, nullptr, &self->messenger_),
          "vkCreateDebugUtilsMessengerEXT");
  }

  std::uint32_t count = 0;
  check(vkEnumeratePhysicalDevices(self->instance_, &count, nullptr), "vkEnumeratePhysicalDevices");
  std::vector<VkPhysicalDevice> physical(count);
  check(vkEnumeratePhysicalDevices(self->instance_, &count, physical.data()),
        "vkEnumeratePhysicalDevices");
  for (std::uint32_t i = 0; i < count; ++i)
    self->devices_.push_back(query_device_caps(self->instance_, physical[i], static_cast<int>(i)));
  return self;
}

Instance::~Instance() {
  if (messenger_ != VK_NULL_HANDLE) {
    auto destroy = reinterpret_cast<PFN_vkDestroyDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(instance_, "vkDestroyDebugUtilsMessengerEXT"));
    if (destroy) destroy(instance_, messenger_, nullptr);
  }
  if (instance_ != VK_NULL_HANDLE) vkDestroyInstance(instance_, nullptr);
}

std::vector<std::string> Instance::take_validation_errors() {
  std::lock_guard lock(errors_mutex_);
  std::vector<std::string> out;
  out.swap(errors_);
  return out;
}

void Instance::record_validation_error(std::string message) {
  std::lock_guard lock(errors_mutex_);
  errors_.push_back(std::move(message));
}

}  // namespace qforge::vulkan
