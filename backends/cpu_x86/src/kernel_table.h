// Every kernel variant of cpu_x86, by name (XNNPACK style: op, dtypes, tile, ISA), with what it
// needs. One list drives kernel selection, supports()' kernel lists, the kernels plans accept
// and the tests that run each variant.
//
// GEMM names: q8 = 8-bit activations (int8 or uint8, converted while packing) times packed
// 8-bit weights; qbw = the same with block-wise weights (int8/uint8/int4/uint4, per-block
// partial sums); "RxC" the largest output tile in rows x columns; c4 = four k per int32 lane.
#pragma once

#include <optional>
#include <span>
#include <string_view>

#include "conv_implicit.h"
#include "gemm_kernels.h"
#include "isa.h"

namespace qforge::cpu_x86 {

enum class KernelRole : std::uint8_t {
  gemm,        // matmul ops, M > 16
  gemv,        // matmul ops, M <= 16 (streams the packed weights once per call)
  gemm_block,  // block-wise B, any M
  quantize,
  dequantize,
  requantize,
  dynamic_quantize,
  conv_depthwise,  // direct depthwise convolution (groups == C); other convs run GEMM kernels
  conv_small_k,    // direct convolution of one group with C * KH * KW <= kSmallKMax
  conv_implicit,   // implicit GEMM of one group from the NHWC rows (conv_implicit.h)
  weight_only,     // matmul_weight_only: float A, 4- or 8-bit B dequantized into float panels
  reference,       // qforge::reference, for whatever no vector kernel serves
};

struct KernelInfo {
  std::string_view name;
  KernelRole role;
  Isa isa;
  TileFn tile = nullptr;  // GEMM roles
  TileShape shape{0, 0};
  bool s8_domain = false;     // A packed as s8 (maddubs idiom)
  bool needs_no_min = false;  // exact only when B holds no -128
  bool amx = false;           // depth in steps of 64 k, rows in multiples of 16
  void (*begin)() = nullptr;  // per-thread setup before a run of tiles, and its undo
  void (*end)() = nullptr;
  int min_rows = 0;  // automatic selection skips it for smaller M
  // Block-wise weights, float output: a fused per-block kernel (gemm_kernels.h), if any.
  void (*block_tile)(const BlockTileArgs&) = nullptr;
  IconvFn iconv = nullptr;  // conv_implicit: the block kernel
};

std::span<const KernelInfo> all_kernels();
const KernelInfo* find_kernel(std::string_view name);

inline constexpr std::string_view kReferenceKernel = "reference";
inline constexpr std::string_view kAmxImplicitConv = "q8_iconv_32x32c4__amx";

// The GEMM kernel that runs when `k` is chosen for weights that hold -128 (b_holds_min) or not:
// k itself, or for a maddubs kernel, which would saturate on -128, the always-exact maddwd
// kernel of the same role.
const KernelInfo& exact_for_weights(const KernelInfo& k, bool b_holds_min);

}  // namespace qforge::cpu_x86
