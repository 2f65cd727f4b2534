// Elementwise quantization kernels of the cpu_x86 plugin (AVX2 + F16C translation unit).
//
// A "run" is a stretch of contiguous elements that share one (scale, zero point); a "vec" run
// gives every element its own pair (per-channel quantization along the last axis). Every kernel
// is bit-exact with qforge::reference: q = sat(rne(x / s) + z) with a true float32 division,
// NaN -> z, +/-inf saturate; x = float(q - z) * s; requantization y = sat(rne(float(c) * m) + z).
// Rounding is done with an explicit round-to-nearest-even instruction, so a caller's MXCSR
// rounding mode cannot change the results (the reference is mode-independent too).
#pragma once

#include <cstdint>

namespace qforge::cpu_x86 {

enum class FloatKind : std::uint8_t { f32, f16, bf16 };  // the float side of quantize

struct QuantRange {
  bool is_signed;     // int8 storage (else uint8)
  std::int32_t qmin;  // saturation bounds of the params' mapping
  std::int32_t qmax;
};

// `stream`: write the output with non-temporal stores (tensors far larger than the caches,
// where a normal store would first read every output line: 25% more traffic for quantize).
void quantize_run_avx2(const void* x, FloatKind kind, void* q, std::int64_t count, float scale,
                       std::int32_t zero_point, QuantRange range, bool stream = false);
void quantize_vec_avx2(const void* x, FloatKind kind, void* q, std::int64_t count,
                       const float* scales, const std::int32_t* zero_points, QuantRange range);
void dequantize_run_avx2(const void* q, bool is_signed, float* x, std::int64_t count, float scale,
                         std::int32_t zero_point, bool stream = false);
void dequantize_vec_avx2(const void* q, bool is_signed, float* x, std::int64_t count,
                         const float* scales, const std::int32_t* zero_points);
// Block-wise: `count` elements in consecutive blocks of `block` (the last may be shorter), block
// i using (scales[i], zero_points[i]). One call per row slice instead of one per block; blocks
// of 32 (ggml's Q8_0/Q4_0) take a loop of exactly one vector step each.
void quantize_blocks_avx2(const void* x, FloatKind kind, void* q, std::int64_t count,
                          std::int64_t block, const float* scales, const std::int32_t* zero_points,
                          QuantRange range, bool stream = false);
void dequantize_blocks_avx2(const void* q, bool is_signed, float* x, std::int64_t count,
                            std::int64_t block, const float* scales,
                            const std::int32_t* zero_points, bool stream = false);
// float-multiplier requantization of int32 values; multipliers per element when `per_element`.
void requantize_float_avx2(const std::int32_t* c, void* y, std::int64_t count,
                           const float* multipliers, bool per_element, std::int32_t zero_point,
                           QuantRange range);

// min and max over finite-or-infinite values; NaN elements are reported through has_nan and
// otherwise ignored. count > 0.
struct MinMax {
  float lo, hi;
  bool has_nan;
};
MinMax minmax_f32_avx2(const float* x, std::int64_t count);

}  // namespace qforge::cpu_x86
