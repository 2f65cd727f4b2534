#include "kernels.h"

#include <algorithm>

#include "qforge/error.h"

namespace qforge::vulkan {
namespace {

// gemm_coopmat_pipe.comp's parameters (its -D definitions in CMakeLists.txt must match).
struct PipeConfig {
  std::uint32_t sg_m, sg_n;  // subgroups down and across
  std::uint32_t wt_m, wt_n;  // 16 x 16 accumulator tiles per subgroup
  std::uint32_t bk;          // bytes of K per step
  bool prefetch;             // the next step's copy in registers during the multiply
  std::uint32_t src = 0;     // full tiles: 0 A and B via shared, 1 B from the buffer, 2 both
  bool split = false;        // full tiles: two stages, each step's copy in halves

  constexpr std::uint32_t threads() const { return sg_m * sg_n * 32; }
  constexpr std::uint32_t tile_m() const { return sg_m * wt_m * 16; }
  constexpr std::uint32_t tile_n() const { return sg_n * wt_n * 16; }
  // The shader's one shared array: the K step's rows, or the epilogue strips when larger.
  constexpr std::uint32_t shared_bytes() const {
    const std::uint32_t main = (tile_m() + tile_n()) * (bk / 16 + 1) * 16;
    const std::uint32_t epilogue = sg_m * sg_n * 16 * (wt_n * 16 / 4 + 1) * 16;
    const std::uint32_t stages =
        split ? 2 * (tile_m() + (src == 0 ? tile_n() : 0)) * (bk / 16 + 1) * 16 : 0;
    return std::max({main, epilogue, stages});
  }
  constexpr std::uint32_t a_loads() const { return tile_m() * bk / 16 / threads(); }
  constexpr std::uint32_t b_loads() const { return tile_n() * bk / 16 / threads(); }
  // What the shader assumes: whole uvec4 copies per invocation, 32-column epilogue lanes,
  // K steps dividing Kp (a multiple of 128), at most 4 strips.
  constexpr bool valid() const {
    return (tile_m() * bk / 16) % threads() == 0 && (tile_n() * bk / 16) % threads() == 0 &&
           (wt_n * 16) % 32 == 0 && wt_m >= 1 && wt_m <= 4 && bk >= 32 && 128 % bk == 0 &&
           src <= 2 && !(prefetch && (src != 0 || split)) &&
           // B one slice ahead and the split's halves need an even number of slices per step;
           // the split's halves an even number of loads
           (src != 1 || bk >= 64) && (!split || (src != 2 && bk >= 64)) &&
           (!split || (a_loads() + (src == 0 ? b_loads() : 0)) % 2 == 0);
  }
};

constexpr GemmKernelInfo pipe(Kernel k, const char* shader, const char* shader_q8, PipeConfig c) {
  if (!c.valid()) throw "invalid PipeConfig";  // not a constant expression: fails the build
  return {k, shader, shader_q8, c.tile_m(), c.tile_n(), 16, c.shared_bytes()};
}

constexpr std::array<GemmKernelInfo, kGemmKernels> kGemm = {{
    pipe(Kernel::gemm_coop_128x128_w4_k64_direct, "gemm_cp_128x128_w4_k64_direct",
         "gemm_cp_128x128_w4_k64_direct_q8", {2, 2, 4, 4, 64, false}),
    pipe(Kernel::gemm_coop_128x128_w8_k128_prefetch, "gemm_cp_128x128_w8_k128_prefetch",
         "gemm_cp_128x128_w8_k128_prefetch_q8", {2, 4, 4, 2, 128, true}),
    // gemm_coopmat.comp: A and B slices of 128 bytes of K, one stage.
    {Kernel::gemm_coopmat_16x16x32, "gemm_coop16", "gemm_coop16_q8", 128, 128, 16, 36864},
    // Feeding variants measured slower on the H200 (docs/VULKAN.md), kept so a run can compare:
    pipe(Kernel::gemm_coop_128x128_w4_k64_split, "gemm_cp_128x128_w4_k64_split",
         "gemm_cp_128x128_w4_k64_split_q8", {2, 2, 4, 4, 64, false, 0, true}),
    pipe(Kernel::gemm_coop_128x128_w4_k64_bglobal, "gemm_cp_128x128_w4_k64_bglobal",
         "gemm_cp_128x128_w4_k64_bglobal_q8", {2, 2, 4, 4, 64, false, 1, false}),
    pipe(Kernel::gemm_coop_128x128_w4_global, "gemm_cp_128x128_w4_global",
         "gemm_cp_128x128_w4_global_q8", {2, 2, 4, 4, 64, false, 2, false}),
    {Kernel::gemm_dot, "gemm_dot", "gemm_dot_q8", 64, 64, 0, 0},
    {Kernel::gemm_plain, "gemm_plain", "gemm_plain_q8", 64, 64, 0, 0},
}};

}  // namespace

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

const std::array<GemmKernelInfo, kGemmKernels>& gemm_kernel_table() { return kGemm; }

const GemmKernelInfo& gemm_info(Kernel k) {
  for (const auto& g : kGemm)
    if (g.kernel == k) return g;
  throw Error(ErrorCode::internal,
              "vulkan: " + std::string(kernel_name(k)) + " is not a GEMM kernel");
}

std::string kernel_unavailable_reason(Kernel k, const DeviceCaps& caps) {
  const std::string dev = "device '" + caps.name + "'";
  if (k == Kernel::gemm_dot && !caps.integer_dot_product)
    return dev + " lacks VK_KHR_shader_integer_dot_product (shaderIntegerDotProduct)";
  const auto* g =
      std::find_if(kGemm.begin(), kGemm.end(), [k](const auto& e) { return e.kernel == k; });
  if (g == kGemm.end() || g->coop_n == 0) return {};
  if (!caps.coopmat_nv) return dev + " lacks VK_NV_cooperative_matrix with s8 x s8 -> s32 tiles";
  if (!caps.has_coopmat_shape(16, g->coop_n, 32))
    return dev + " offers no s8 cooperative-matrix shape 16x" + std::to_string(g->coop_n) + "x32";
  if (caps.subgroup_size != 32)
    return dev + " has subgroups of " + std::to_string(caps.subgroup_size) +
           "; the cooperative-matrix kernels are written for 32";
  if (caps.max_shared_memory < g->shared_bytes)
    return dev + " has " + std::to_string(caps.max_shared_memory) +
           " bytes of shared memory; this cooperative-matrix kernel needs " +
           std::to_string(g->shared_bytes);
  if (caps.max_workgroup_invocations < 256)
    return dev + " runs at most " + std::to_string(caps.max_workgroup_invocations) +
           " invocations per workgroup; the cooperative-matrix kernels need up to 256";
  return {};
}

}  // namespace qforge::vulkan
