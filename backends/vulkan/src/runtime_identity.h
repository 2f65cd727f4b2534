// The vulkan plugin's deferred identity (qforge/plugin/abi.h): what the Vulkan loader would
// find, described without creating an instance (which loads every installed driver: Mesa's
// llvmpipe brings LLVM, a tenth of a second on a small machine).
#pragma once

#include <string>

namespace qforge::vulkan {

std::string runtime_identity();

}  // namespace qforge::vulkan
