// Every Vulkan call goes through check(): a failing VkResult becomes
// qforge::Error(ErrorCode::backend, "vkCreateDevice: VK_ERROR_OUT_OF_DEVICE_MEMORY").
#pragma once

#include <vulkan/vulkan.h>

#include <string>
#include <string_view>

namespace qforge::vulkan {

// "VK_ERROR_DEVICE_LOST", or "VkResult(-1000)" for a code this header does not name.
std::string result_name(VkResult result);

// Throws qforge::Error(backend) naming the call and the result unless result is VK_SUCCESS.
void check(VkResult result, std::string_view call);

}  // namespace qforge::vulkan
