// The kernel variants of the CUDA backend by name: what supports() lists and plans accept and
// report. Names carry the op, the operand types, the instruction and the tile
// (XNNPACK's naming), e.g. s8_gemm_mma_m16n8k32_128x256.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/gemm.h"

namespace qforge::cuda {

inline constexpr const char* kQuantizeKernel = "quantize_elementwise_vec16";
inline constexpr const char* kDequantizeKernel = "dequantize_elementwise_vec16";
inline constexpr const char* kRequantizeKernel = "requantize_elementwise";
inline constexpr const char* kDynamicQuantizeKernel = "dynamic_quantize_minmax_vec16";
inline constexpr const char* kLinearBackwardKernel = "linear_backward_f32_simt_128x128";
inline constexpr const char* kConvImplicitGemmKernel = "q8_conv_implicit_gemm_mma_m16n8k32_128x64";
// The pipelined implicit GEMM's tiles, in ConvTileKind's order (kernels/conv.h).
inline constexpr const char* kConvPipelinedKernels[] = {
    "q8_conv_implicit_gemm_mma_m16n8k32_256x64_cpasync4",
    "q8_conv_implicit_gemm_mma_m16n8k32_128x128_cpasync4",
    "q8_conv_implicit_gemm_mma_m16n8k32_128x64_cpasync4",
    "q8_conv_implicit_gemm_mma_m16n8k32_64x64_cpasync4_splitk"};
inline constexpr const char* kConvDepthwiseTiledKernel = "q8_conv_depthwise_tiled_8x16x32_simt";
inline constexpr const char* kConvDepthwiseKernel = "q8_conv_depthwise_direct_simt";

const char* gemm_kernel_name(GemmKernel k);
std::optional<GemmKernel> parse_gemm_kernel(std::string_view name);
// Every kernel name.
const std::vector<std::string>& all_kernel_names();

}  // namespace qforge::cuda
