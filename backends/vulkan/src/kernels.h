// The plugin's kernel variants: one enumerator list drives naming, supports(), set_kernel()
// and the tests (after XNNPACK's microkernel enumerators). Names carry op, types and method.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>

#include "device_caps.h"

namespace qforge::vulkan {

enum class Kernel {
  quantize,             // f32 -> int8/uint8, word-owning invocations
  dequantize,           // int8/uint8 -> f32
  requantize,           // int32 -> int8/uint8
  gemm_plain,           // int8 GEMM, int32 multiply-adds (everywhere)
  gemm_dot,             // int8 GEMM, OpSDot on packed 4x8-bit words
  gemm_coopmat_16x16x32,       // NV cooperative matrix s8 16x16x32, 128 x 128 per workgroup
  gemm_coopmat_16x16x32_wide,  // the same, 128 x 256 per workgroup
  gemm_coopmat_16x8x32,        // NV cooperative matrix s8 16x8x32, 128 x 128 per workgroup
};

struct KernelInfo {
  Kernel kernel;
  std::string_view name;
  bool gemm;
};

inline constexpr std::array<KernelInfo, 8> kKernels = {{
    {Kernel::quantize, "vk_quantize_f32_q8", false},
    {Kernel::dequantize, "vk_dequantize_q8_f32", false},
    {Kernel::requantize, "vk_requantize_s32_q8", false},
    {Kernel::gemm_plain, "vk_gemm_q8_s32acc_plain_64x64", true},
    {Kernel::gemm_dot, "vk_gemm_q8_s32acc_dot4x8_64x64", true},
    {Kernel::gemm_coopmat_16x16x32, "vk_gemm_q8_s32acc_coopmat_nv16x16x32_128x128", true},
    {Kernel::gemm_coopmat_16x16x32_wide, "vk_gemm_q8_s32acc_coopmat_nv16x16x32_128x256", true},
    {Kernel::gemm_coopmat_16x8x32, "vk_gemm_q8_s32acc_coopmat_nv16x8x32_128x128", true},
}};

std::string_view kernel_name(Kernel k);
std::optional<Kernel> parse_kernel(std::string_view name);

// Why this device cannot run kernel k (empty when it can).
std::string kernel_unavailable_reason(Kernel k, const DeviceCaps& caps);

}  // namespace qforge::vulkan
