// The plugin's kernel variants: one enumerator list drives naming, supports(), plans' kernels
// and the tests (after XNNPACK's microkernel enumerators). Names carry op, types and method.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "device_caps.h"

namespace qforge::vulkan {

enum class Kernel {
  quantize,    // f32 -> int8/uint8, word-owning invocations
  dequantize,  // int8/uint8 -> f32
  requantize,  // int32 -> int8/uint8
  gemm_plain,  // int8 GEMM, int32 multiply-adds (everywhere)
  gemm_dot,    // int8 GEMM, OpSDot on packed 4x8-bit words
  // gemm_coopmat.comp (the first tensor-core kernel, kept to compare): NV cooperative
  // matrices s8 16x16x32, 8 subgroups of 64 x 32, 128 x 128 per workgroup
  gemm_coopmat_16x16x32,
  // gemm_coopmat_pipe.comp: NV cooperative matrices s8 16x16x32 (name: workgroup tile,
  // subgroups, K bytes per step, direct copy or register prefetch)
  gemm_coop_128x128_w4_k64_direct,     // 4 subgroups of 64 x 64: the default
  gemm_coop_128x128_w8_k128_prefetch,  // 8 subgroups of 64 x 32, no register spills
  // Feeding variants of the default (4 subgroups of 64 x 64), all slower on the H200 (0.48x,
  // 0.23x, 0.11x: docs/VULKAN.md), kept so that a run on another driver can compare:
  gemm_coop_128x128_w4_k64_split,    // two stages, each step's copy in halves
  gemm_coop_128x128_w4_k64_bglobal,  // A staged, B fragments from the buffer
  gemm_coop_128x128_w4_global,       // A and B fragments from the buffer, no barriers
  conv_direct,                       // conv_*: direct convolution, int32 multiply-adds
};

struct KernelInfo {
  Kernel kernel;
  std::string_view name;
  bool gemm;
};

inline constexpr std::array<KernelInfo, 12> kKernels = {{
    {Kernel::quantize, "vk_quantize_f32_q8", false},
    {Kernel::dequantize, "vk_dequantize_q8_f32", false},
    {Kernel::requantize, "vk_requantize_s32_q8", false},
    {Kernel::gemm_plain, "vk_gemm_q8_s32acc_plain_64x64", true},
    {Kernel::gemm_dot, "vk_gemm_q8_s32acc_dot4x8_64x64", true},
    {Kernel::gemm_coopmat_16x16x32, "vk_gemm_q8_s32acc_coopmat_nv16x16x32_128x128", true},
    {Kernel::gemm_coop_128x128_w4_k64_direct,
     "vk_gemm_q8_s32acc_coopmat_nv16x16x32_128x128_w4_k64_direct", true},
    {Kernel::gemm_coop_128x128_w8_k128_prefetch,
     "vk_gemm_q8_s32acc_coopmat_nv16x16x32_128x128_w8_k128_prefetch", true},
    {Kernel::gemm_coop_128x128_w4_k64_split,
     "vk_gemm_q8_s32acc_coopmat_nv16x16x32_128x128_w4_k64_split", true},
    {Kernel::gemm_coop_128x128_w4_k64_bglobal,
     "vk_gemm_q8_s32acc_coopmat_nv16x16x32_128x128_w4_k64_bglobal", true},
    {Kernel::gemm_coop_128x128_w4_global, "vk_gemm_q8_s32acc_coopmat_nv16x16x32_128x128_w4_global",
     true},
    {Kernel::conv_direct, "vk_conv_q8_s32acc_direct", false},
}};

std::string_view kernel_name(Kernel k);
std::optional<Kernel> parse_kernel(std::string_view name);

// How a GEMM kernel is built and launched.
struct GemmKernelInfo {
  Kernel kernel;
  const char* shader;            // embedded SPIR-V (CMakeLists.txt's qforge_vk_shaders)
  const char* shader_q8;         // the same with the requantizing byte epilogue
  std::uint32_t tile_m, tile_n;  // outputs per workgroup
  std::uint32_t coop_n;          // 0, or N of its s8 16 x N x 32 cooperative matrices
  std::uint32_t shared_bytes;    // shared memory the shader declares
};

// The GEMM kernels, best guess first (the order supports() lists them in).
inline constexpr std::size_t kGemmKernels = 8;
const std::array<GemmKernelInfo, kGemmKernels>& gemm_kernel_table();
// The entry of a GEMM kernel; throws internal for an element-wise one.
const GemmKernelInfo& gemm_info(Kernel k);

// Why this device cannot run kernel k (empty when it can).
std::string kernel_unavailable_reason(Kernel k, const DeviceCaps& caps);

}  // namespace qforge::vulkan
