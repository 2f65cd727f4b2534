// The SPIR-V modules embedded in the plugin. shader_table.cpp is generated at build time
// (cmake/QforgeVulkanShaders.cmake) from shaders/*.comp; each blob is 4-byte aligned.
#pragma once

#include <cstddef>
#include <span>
#include <string_view>

namespace qforge::vulkan {

struct ShaderBlob {
  const char* name;
  const unsigned char* data;
  std::size_t size;  // bytes, a multiple of 4
};

std::span<const ShaderBlob> shader_blobs();

}  // namespace qforge::vulkan
