#include "vk_error.h"

#include "qforge/error.h"

namespace qforge::vulkan {

std::string result_name(VkResult result) {
  switch (result) {
#define QF_CASE(x) \
  case x: return #x;
    QF_CASE(VK_SUCCESS)
    QF_CASE(VK_NOT_READY)
    QF_CASE(VK_TIMEOUT)
    QF_CASE(VK_EVENT_SET)
    QF_CASE(VK_EVENT_RESET)
    QF_CASE(VK_INCOMPLETE)
    QF_CASE(VK_ERROR_OUT_OF_HOST_MEMORY)
    QF_CASE(VK_ERROR_OUT_OF_DEVICE_MEMORY)
    QF_CASE(VK_ERROR_INITIALIZATION_FAILED)
    QF_CASE(VK_ERROR_DEVICE_LOST)
    QF_CASE(VK_ERROR_MEMORY_MAP_FAILED)
    QF_CASE(VK_ERROR_LAYER_NOT_PRESENT)
    QF_CASE(VK_ERROR_EXTENSION_NOT_PRESENT)
    QF_CASE(VK_ERROR_FEATURE_NOT_PRESENT)
    QF_CASE(VK_ERROR_INCOMPATIBLE_DRIVER)
    QF_CASE(VK_ERROR_TOO_MANY_OBJECTS)
    QF_CASE(VK_ERROR_FORMAT_NOT_SUPPORTED)
    QF_CASE(VK_ERROR_FRAGMENTED_POOL)
    QF_CASE(VK_ERROR_UNKNOWN)
    QF_CASE(VK_ERROR_OUT_OF_POOL_MEMORY)
    QF_CASE(VK_ERROR_INVALID_EXTERNAL_HANDLE)
    QF_CASE(VK_ERROR_FRAGMENTATION)
    QF_CASE(VK_ERROR_INVALID_OPAQUE_CAPTURE_ADDRESS)
    QF_CASE(VK_PIPELINE_COMPILE_REQUIRED)
    QF_CASE(VK_ERROR_INVALID_SHADER_NV)
#undef QF_CASE
    default: return "VkResult(" + std::to_string(static_cast<int>(result)) + ")";
  }
}

void check(VkResult result, std::string_view call) {
  if (result == VK_SUCCESS) return;
  throw Error(ErrorCode::backend, std::string(call) + ": " + result_name(result));
}

}  // namespace qforge::vulkan
