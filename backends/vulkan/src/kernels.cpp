#include "kernels.h"

namespace qforge::vulkan {

std::string_view kernel_name(Kernel k) {
  for (const auto& info : kKernels)
    if (info.kernel == k) return info.name;
  return "unknown";
}

std::optional<Kernel> parse_kernel(std::string_view name) {
  for (const auto& info : kKernels)
    if (info.name == name) return info.kernel;
  return std::nullopt;
}

std::string kernel_unavailable_reason(Kernel k, const DeviceCaps& caps) {
  const std::string dev = "device '" + caps.name + "'";
  switch (k) {
    case Kernel::gemm_dot:
      if (!caps.integer_dot_product)
        return dev + " lacks VK_KHR_shader_integer_dot_product (shaderIntegerDotProduct)";
      return {};
    case Kernel::gemm_coopmat_16x16x32:
    case Kernel::gemm_coopmat_16x16x32_wide:
    case Kernel::gemm_coopmat_16x8x32: {
      if (!caps.coopmat_nv)
        return dev + " lacks VK_NV_cooperative_matrix with s8 x s8 -> s32 tiles";
      const bool n16 = k != Kernel::gemm_coopmat_16x8x32;
      if (!caps.has_coopmat_shape(16, n16 ? 16 : 8, 32))
        return dev + " offers no s8 cooperative-matrix shape " + (n16 ? "16x16x32" : "16x8x32");
      if (caps.subgroup_size != 32)
        return dev + " has subgroups of " + std::to_string(caps.subgroup_size) +
               "; the cooperative-matrix kernel is written for 32";
      // Shared memory: A and B slices of the K step, rows padded by 16 bytes (gemm_coopmat.comp).
      const std::uint32_t need = k == Kernel::gemm_coopmat_16x16x32_wide ? 30720u : 36864u;
      if (caps.max_shared_memory < need)
        return dev + " has " + std::to_string(caps.max_shared_memory) +
               " bytes of shared memory; this cooperative-matrix kernel needs " +
               std::to_string(need);
      return {};
    }
    default: return {};
  }
}

}  // namespace qforge::vulkan
