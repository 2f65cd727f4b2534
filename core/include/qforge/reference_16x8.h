// TFLite's 16x8 quantization in the reference numerics (docs/NUMERICS.md, "16x8"): int16
// symmetric activations (zero point 0), int8 symmetric weights per tensor or per output channel,
// int64 bias at scale sx * sw, int64 accumulation, and TFLite's int64 requantization. These are
// reference functions only, not op kinds: the op table and every backend refuse int16
// activations for qlinear_conv and qlinear_matmul (reference::check_descriptor says why).
#pragma once

#include <cstdint>
#include <string>

#include "qforge/op_desc.h"
#include "qforge/reference.h"

namespace qforge::reference {

// TFLite's MultiplyByQuantizedMultiplier for an int64 accumulator (its 16x8 kernels, and
// CMSIS-NN's arm_nn_requantize_s64): the Q31 multiplier is reduced to Q15, (m + 2^15) >> 16, or
// 0x7FFF from 0x7FFF0000 on, and
//   y = floor((x * reduced + 2^(14 - shift)) / 2^(15 - shift))
// one rounding, half toward +infinity. Returned in int64 (TFLite narrows it to int32; callers
// here saturate to the output range). Throws ErrorCode::overflow for x outside [-2^47, 2^47)
// and invalid_argument for a negative multiplier or a shift outside [-31, 7] (TFLite's
// preconditions: a real multiplier below 2^7).
QFORGE_API std::int64_t multiply_by_quantized_multiplier_s64(std::int64_t x,
                                                             FixedPointMultiplier m);

// A 16x8 layer's requantization multiplier, as TFLite derives it
// (PopulateConvolutionQuantizationParams): the effective scale (sx * sw) / sy in double, then
// quantize_multiplier. Throws invalid_argument, naming the op and `position` ("output channel
// 3"), where the scale is not finite or its Q31 form needs a shift above 7 (a real multiplier of
// about 2^7 or more: TFLite's precondition).
QFORGE_API FixedPointMultiplier multiplier_16x8(float sx, float sw, float sy, const std::string& op,
                                                const std::string& position);

// TFLite's 16x8 convolution (reference_integer_ops::ConvPerChannel with int16 input): desc as
// qlinear_conv's geometry, X and Y int16 per tensor with zero point 0, W int8 symmetric,
// requant_mode fixed_point, desc.bias none; bias is int64 [O] at scale sx * sw[o], or null.
//   Y = clamp(multiply_by_quantized_multiplier_s64(acc + bias[o], m[o]), lo, hi)
// with m[o] = multiplier_16x8(sx, sw[o], sy) (TFLite's: the ratio in double) and
// [lo, hi] the fused activation's bounds within [-32768, 32767]. The sums are exact in int64;
// acc + bias outside [-2^47, 2^47) throws ErrorCode::overflow naming the position.
QFORGE_API void qlinear_conv_16x8(const ConvDesc& desc, const void* x, const void* w,
                                  const std::int64_t* bias, void* y);
// Throws what qlinear_conv_16x8 throws for `desc` (its descriptor check), without running it.
QFORGE_API void check_conv_16x8(const ConvDesc& desc);

// TFLite's 16x8 fully connected as a matmul: A [M, K] int16 per tensor with zero point 0, B int8
// symmetric per tensor or per column (either layout), y int16 per tensor with zero point 0,
// requant_mode fixed_point; bias int64 [N] at scale sa * sb[n], or null.
//   Y[m, n] = sat16(multiply_by_quantized_multiplier_s64(acc + bias[n], m[n]))
// with m[n] = multiplier_16x8(sa, sb[n], sy) (the ratio in double, as TFLite).
QFORGE_API void qlinear_matmul_16x8(const MatmulDesc& desc, const void* a, const void* b,
                                    const std::int64_t* bias, void* y);

}  // namespace qforge::reference
