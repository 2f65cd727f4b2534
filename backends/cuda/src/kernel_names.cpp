#include "kernel_names.h"

#include <array>
#include <utility>

namespace qforge::cuda {
namespace {

constexpr std::array<std::pair<GemmKernel, const char*>, 9> kGemmNames = {{
    {GemmKernel::wgmma_128x256, "s8_gemm_wgmma_m64n256k32_128x256"},
    {GemmKernel::mma_128x256, "s8_gemm_mma_m16n8k32_128x256"},
    {GemmKernel::mma_128x128, "s8_gemm_mma_m16n8k32_128x128"},
    {GemmKernel::mma_32x128, "s8_gemm_mma_m16n8k32_32x128_splitk"},
    {GemmKernel::mma_skinny, "s8_gemm_mma_m16n8k32_skinny_32x32"},
    {GemmKernel::dp4a_128x128, "s8_gemm_dp4a_128x128"},
    {GemmKernel::qbw_128x128, "s8_qbw_gemm_mma_m16n8k32_128x128"},
    {GemmKernel::qbw_16x128, "s8_qbw_gemm_mma_m16n8k32_16x128_splitk"},
    {GemmKernel::qbw_gemv, "s8_qbw_gemv_dp4a_warp_per_column"},
}};

}  // namespace

const char* gemm_kernel_name(GemmKernel k) {
  for (const auto& [id, name] : kGemmNames)
    if (id == k) return name;
  return "s8_gemm_unknown";
}

std::optional<GemmKernel> parse_gemm_kernel(std::string_view name) {
  for (const auto& [id, n] : kGemmNames)
    if (name == n) return id;
  return std::nullopt;
}

const std::vector<std::string>& all_kernel_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const auto& [id, name] : kGemmNames) v.emplace_back(name);
    for (const char* n : {kQuantizeKernel, kDequantizeKernel, kRequantizeKernel,
                          kDynamicQuantizeKernel, kLinearBackwardKernel, kConvImplicitGemmKernel,
                          kConvDepthwiseKernel, kConvDepthwiseTiledKernel})
      v.emplace_back(n);
    for (const char* n : kConvPipelinedKernels) v.emplace_back(n);
    return v;
  }();
  return names;
}

}  // namespace qforge::cuda
