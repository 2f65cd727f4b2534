// Float-output tolerances, one per op, as NMSE = sum (got - ref)^2 / sum ref^2 (ggml's metric).
// Integer outputs have none: they are exact. docs/TESTING.md gives the reasoning in full.
#pragma once

#include "qforge/half.h"

namespace qforge::conformance::tolerance {

// dequantize: (q - z) * s is one float32 rounding of an exact integer, and the logarithmic
// decode a power-of-two scaling; there is no freedom of order, so the result is bit-exact.
inline constexpr double kDequantize = 0.0;

// matmul_dequant with float32 output: the int32 dot product is exact; what remains is
// float(C) * sa * sb + bias, a handful of roundings whose order a backend may choose
// ((C*sa)*sb or C*(sa*sb), FMA or not), and for block-wise B one float sum of per-block
// partials. A few ulps per element give NMSE ~1e-14; 1e-12 leaves margin and still flags a
// single wrong element among thousands.
inline constexpr double kMatmulDequantF32 = 1e-12;
// Narrow outputs: the float32 value rounded once to the output type. At most one unit in the
// last place apart on every element bounds NMSE by (2^-10)^2 ~ 9.5e-7 for float16 (11-bit
// significand) and (2^-7)^2 ~ 6.1e-5 for bfloat16 (8-bit significand).
inline constexpr double kMatmulDequantF16 = 1e-6;
inline constexpr double kMatmulDequantBF16 = 1e-4;

constexpr double matmul_dequant(FloatType t) {
  return t == FloatType::f32   ? kMatmulDequantF32
         : t == FloatType::f16 ? kMatmulDequantF16
                               : kMatmulDequantBF16;
}

// conv_dequant: an exact int32 sum, then (float(acc) * sx) * sw[o] + bias, as matmul_dequant.
inline constexpr double kConvDequant = 1e-12;

// linear_forward Y: an exact int32 dot product scaled by sx * sw[n] plus bias, as above.
inline constexpr double kLinearForward = 1e-12;
// linear_backward dX, dW, db: float32 sums of N (dX), M (dW, db) products whose order is free
// (blocking, SIMD lanes, tree reductions on GPUs). Reordering n terms moves NMSE by about
// n * eps^2 ~ 130 * 3.6e-15 ~ 5e-13 for the shapes here; 1e-10 leaves margin for deeper trees
// while a dropped or doubled term still costs ~1/n.
inline constexpr double kLinearBackward = 1e-10;
// matmul_weight_only Y: float32 sums of K products (each weight dequantized exactly as the
// reference does) in a backend's own order, against the reference's double sum; as for
// linear_backward, reordering costs about K * eps^2 while a dropped block costs ~block / K.
inline constexpr double kWeightOnly = 1e-10;

}  // namespace qforge::conformance::tolerance
