// Quantized 2-D convolution (docs/NUMERICS.md, "Convolution"): the implicit-GEMM kernel on the
// tensor cores, the direct depthwise kernel on the CUDA cores, and their operand preparation.
//
// Both kernels read X as NHWC codes (an NCHW X is transposed first, launch_nchw_to_nhwc) and
// write Y in the descriptor's layout. The implicit GEMM of group g is, per output pixel m and
// output channel o of the group,
//   C'[m, o] = sum over k = (kh * KW + kw) * C/G + ci of X~[m, k] * W'[o, k]
// with X~ the gathered codes (uint8 or int8 as X is; a padded position holds zx, so it adds
// (zx - zx) * ... = 0 to the exact sum) and W' the weights as int8 (uint8 ones flipped, their
// zero points lowered by 128), packed [O, kp] in this k order with kp a multiple of 64. The
// epilogue restores
//   acc = C' - zx * sum_k W'[o, k] - zw'[o] * sum_k X~[m, k] + K * zx * zw'[o]
// in wrap-around int32 arithmetic, exact whenever acc fits int32, which the reduction bound
// (reference::int32_safe_reduction) guarantees.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kernels/gemm.h"

namespace qforge::cuda {

struct ConvGeometry {
  std::int64_t n = 0, h = 0, w = 0, c = 0;  // X (NHWC codes)
  std::int64_t oh = 0, ow = 0, o = 0;       // Y
  std::int64_t kh = 1, kw = 1, stride_h = 1, stride_w = 1, dilation_h = 1, dilation_w = 1;
  std::int64_t pad_top = 0, pad_left = 0;
  std::int64_t groups = 1, cg = 0, og = 0;  // C / G, O / G
  std::int64_t k = 0, kp = 0;               // C/G * KH * KW, rounded up to a multiple of 64
  bool x_unsigned = false;                  // X codes are uint8
};

enum class ConvOut : int {
  int32,       // conv_integer: acc
  requantize,  // qlinear_conv: clamp(requantize_value(acc + bias[o], multiplier[o], zy), lo, hi)
  dequantize,  // conv_dequant: clamp((float(acc + bias_i32[o]) * sx) * sw[o] + bias_f32[o])
};

struct ConvEpilogue {
  ConvOut kind = ConvOut::int32;
  bool nchw = false;  // layout of Y
  void* y = nullptr;
  // compensation (see above); wsum null when zx == 0, need_xsum false when every zw' == 0
  std::int32_t zx = 0;
  const std::int32_t* wsum = nullptr;  // [O]
  IntVec zw;                           // zw'[o]
  bool need_xsum = false;
  std::int32_t k = 0;
  const std::int32_t* bias_i32 = nullptr;  // [O], added to acc; overflow flagged
  const float* bias_f32 = nullptr;         // [O]
  // dequantize
  float sx = 1.0f;
  FloatVec sw;
  float lo = 0.0f, hi = 0.0f;  // the activation's bounds (infinite when none)
  // requantize: multiplier[o] = (sx * sw[o]) / sy, or its fixed-point form
  const float* multiplier = nullptr;
  const std::int32_t* fixed_multiplier = nullptr;
  const std::int32_t* fixed_shift = nullptr;
  std::int32_t zy = 0, qmin = 0, qmax = 0, qlo = 0, qhi = 0;
  // set to 1 when some acc + bias_i32[o] leaves int32 (the host then reports it as the
  // reference does)
  int* overflow = nullptr;
};

// dst[n, p, c] = src[n, c, p] for p < pixels (bytes).
void launch_nchw_to_nhwc(const std::uint8_t* src, std::int64_t n, std::int64_t c,
                         std::int64_t pixels, std::uint8_t* dst, cudaStream_t stream);

// Packs OIHW weights [O, C/G, KH, KW] (uint8 codes flipped to int8 when `flip_sign`) into
// [O, kp] int8 in the implicit GEMM's k order, zero past k.
void launch_pack_conv_weights(const std::uint8_t* w, bool flip_sign, const ConvGeometry& g,
                              std::int8_t* packed, cudaStream_t stream);

// The implicit GEMM over every group (x: NHWC codes, 16-byte aligned; packed: from
// launch_pack_conv_weights). Refused shapes never reach it (conv_implicit_gemm_fits).
void launch_conv_implicit_gemm(const std::uint8_t* x, const std::int8_t* packed,
                               const ConvGeometry& g, const ConvEpilogue& e, cudaStream_t stream);
// Whether the implicit GEMM's grid holds the shape.
bool conv_implicit_gemm_fits(const ConvGeometry& g);

// The pipelined implicit GEMM (conv_igemm_pipelined.cu): 8 warps, a multi-stage cp.async ring
// for both operands, the tile staged in shared memory for coalesced stores. Its tiles; the
// 64x64 one splits the reduction across CTAs when its tiles alone leave SMs idle.
enum class ConvTileKind : int { t256x64, t128x128, t128x64, t64x64_splitk };
// Why the pipelined kernel cannot run the shape (C / G not a multiple of 16, int32 addressing,
// the grid), or nothing.
std::optional<std::string> conv_pipelined_refusal(const ConvGeometry& g);
// Its tiles in the order to try them on a GPU of `multiprocessors` SMs: the largest tile that
// still gives every SM a CTA first.
std::vector<ConvTileKind> conv_tile_order(const ConvGeometry& g, int multiprocessors);
// How many CTAs share each tile's reduction (1 but for t64x64_splitk on too few tiles).
int conv_splits(const ConvGeometry& g, ConvTileKind tile, int multiprocessors);
// x: NHWC codes, 16-byte aligned; packed: from launch_pack_conv_weights. With splits > 1,
// `partial` holds N * OH * OW * O int32 and `partial_xsum` N * OH * OW * groups (when
// e.need_xsum): scratch the call zeroes and sums into before its epilogue kernel.
void launch_conv_igemm_pipelined(const std::uint8_t* x, const std::int8_t* packed,
                                 const ConvGeometry& g, const ConvEpilogue& e, ConvTileKind tile,
                                 int splits, std::int32_t* partial, std::int32_t* partial_xsum,
                                 int device, cudaStream_t stream);

// Depthwise (G == C, any channel multiplier O / G): one thread per output, int32 sums of
// (x - zx) * (w - zw[o]) straight from the OIHW weights (`w_unsigned`: uint8 codes, zw as is).
// The epilogue's compensation fields are unused.
void launch_conv_depthwise(const std::uint8_t* x, const std::uint8_t* w, bool w_unsigned, IntVec zw,
                           const ConvGeometry& g, const ConvEpilogue& e, cudaStream_t stream);

// Depthwise, tiled (conv_depthwise_tiled.cu): the input tile with its halo in shared memory, 16
// outputs along a row per thread; same operands as launch_conv_depthwise.
void launch_conv_depthwise_tiled(const std::uint8_t* x, const std::uint8_t* w, bool w_unsigned,
                                 IntVec zw, const ConvGeometry& g, const ConvEpilogue& e,
                                 cudaStream_t stream);
// Why the tiled depthwise kernel cannot run the shape (not depthwise, a window too large for its
// shared memory, the grid), or nothing.
std::optional<std::string> conv_depthwise_tiled_refusal(const ConvGeometry& g);

}  // namespace qforge::cuda
