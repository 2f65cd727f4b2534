// Helpers shared by the reference numerics (core/src/reference/*.cpp). Private to core.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "qforge/error.h"
#include "qforge/op_desc.h"
#include "qforge/params.h"
#include "qforge/reference.h"

namespace qforge::reference::detail {

// Round half to even, written out instead of std::nearbyint so that the oracle does not depend
// on the thread's floating-point rounding mode. Works on |v| so that floor(|v|) and the
// fraction |v| - floor(|v|) are exact (Sterbenz); ties-to-even is symmetric, so the sign is
// restored at the end. NaN and +/-inf pass through, as does anything >= 2^23 (already integral).
inline float round_half_even(float v) noexcept {
  const float a = std::fabs(v);
  if (!(a < 8388608.0f)) return v;
  const float f = std::floor(a);
  const float d = a - f;
  float r = f;
  if (d > 0.5f || (d == 0.5f && std::fmod(f, 2.0f) != 0.0f)) r = f + 1.0f;
  return std::copysign(r, v);
}

// Clamps an integer-valued double (possibly huge or infinite, never NaN) to [lo, hi].
inline std::int32_t saturate(double v, std::int32_t lo, std::int32_t hi) noexcept {
  if (v <= static_cast<double>(lo)) return lo;
  if (v >= static_cast<double>(hi)) return hi;
  return static_cast<std::int32_t>(v);
}

inline std::int32_t saturate(std::int64_t v, std::int32_t lo, std::int32_t hi) noexcept {
  return static_cast<std::int32_t>(std::clamp<std::int64_t>(v, lo, hi));
}

// A float printed with enough digits to round-trip ("0.0196078438", "inf", "nan").
std::string float_text(float v);

[[noreturn]] void fail(ErrorCode code, const std::string& op, const std::string& what);

// Throws invalid_argument naming `what` when a non-empty tensor comes with a null pointer.
void require_data(const std::string& op, const char* what, const void* p, std::int64_t count);

// Throws invalid_argument when a size is negative.
void require_non_negative(const std::string& op, const char* what, std::int64_t v);

// ---- sizes (common.cpp) ----
// Checks one operand against qforge's size limit (qforge/checked_size.h): its element count,
// and its bytes at `element_bytes` per element. Returns the element count; throws naming the op,
// the operand and its extents, e.g. "reference::matmul_integer: A [M, K] = [...] has more than".
// No allocation unless it throws: backends run it on every call.
std::int64_t checked_operand(const std::string& op, std::string_view operand,
                             std::span<const std::int64_t> extents, std::size_t element_bytes);
inline std::int64_t checked_operand(const std::string& op, std::string_view operand,
                                    std::initializer_list<std::int64_t> extents,
                                    std::size_t element_bytes) {
  return checked_operand(
      op, operand, std::span<const std::int64_t>(extents.begin(), extents.size()), element_bytes);
}
// The same for packed storage of `dtype`.
std::int64_t checked_operand(const std::string& op, std::string_view operand,
                             std::span<const std::int64_t> extents, DType dtype);

// quantize / dequantize's descriptor: the shape (q packed, x of `float_bytes` per element) and
// the params against it.
void validate_quantize(const std::string& op, const QuantizeDesc& desc, std::size_t float_bytes);

// dynamic_quantize_linear's descriptor: x float32 and y uint8 of desc.shape.
void validate_dynamic_quantize(const std::string& op, const DynamicQuantizeDesc& desc);

// ---- requantization (requantize.cpp) ----
// Throws invalid_argument unless the multiplier is finite and >= 0.
void require_multiplier(const std::string& op, float multiplier, const std::string& which);
// The fixed-point path of requantize_value with the multiplier already converted.
std::int32_t requantize_fixed(std::int32_t c, FixedPointMultiplier m, std::int32_t zero_point,
                              std::int32_t qmin, std::int32_t qmax) noexcept;

// ---- matmul operands (matmul_operands.cpp) ----
// Which (scale, zero point) pair of A serves row m, and which of B serves column n at depth k
// of a product with depth `depth` (the same indices QuantizationParams::param_index gives for
// the [M, K] and [N, K] / [K, N] shapes).
std::size_t a_pair(const QuantizationParams& a, std::int64_t m);
std::size_t b_pair(const QuantizationParams& b, std::int64_t n, std::int64_t k, std::int64_t depth);

// Validates dtypes, mappings and granularities of A and B for a matmul op and that their
// parameter counts fit [M, K] and the B layout. `allow_block_b` is false for ops whose output
// cannot be formed from per-block partial sums (qlinear_matmul).
void validate_matmul(const std::string& op, const MatmulDesc& desc, bool allow_block_b);
// Its first half: m, n, k >= 0 and A's params.
void validate_matmul_a(const std::string& op, const MatmulDesc& desc);
// Its second half: B's size and params against the B layout (and the bias's size).
void validate_matmul_b(const std::string& op, const MatmulDesc& desc, bool allow_block_b);
// matmul_weight_only's descriptor (matmul_weight_only.cpp): sizes, B's dtype and params, out_type.
void validate_matmul_weight_only(const std::string& op, const MatmulDesc& desc);
// qlinear_matmul's output params (desc.y): per-tensor affine or symmetric int8 or uint8.
void validate_qlinear_output(const std::string& op, const MatmulDesc& desc);
// desc.activation: none except for qlinear_matmul; a clamp's bounds finite and ordered.
void validate_matmul_activation(const std::string& op, const MatmulDesc& desc);
// The codes qlinear_matmul's clamp keeps, [lo, hi], from desc.y and desc.activation (desc.y set).
std::pair<std::int32_t, std::int32_t> qlinear_matmul_clamp(const MatmulDesc& desc);

// The largest |q - z| over the dtype's full range and every zero point of these params
// (matmul_operands.cpp).
std::int64_t max_centered_magnitude(const QuantizationParams& p);

// conv_integer / qlinear_conv / conv_dequant's descriptor (conv_check.cpp): extents, geometry,
// groups, operand sizes, params, bias, output params and activation for op `kind`.
void validate_conv(const std::string& op, OpKind kind, const ConvDesc& desc);
// qlinear_conv_16x8's descriptor: the geometry as validate_conv, X and Y int16 per tensor with
// zero point 0, W int8 symmetric, desc.bias none (the int64 bias is an argument), fixed-point mode,
// multipliers below 2^7.
void validate_conv_16x8(const std::string& op, const ConvDesc& desc);
// The quantized bounds [lo, hi] of qlinear_conv's fused activation (the output range when none).
std::pair<std::int32_t, std::int32_t> conv_output_clamp(const ConvDesc& desc);
// The same within [qmin, qmax] (16x8: the full int16 range, as TFLite's int16 activations).
std::pair<std::int32_t, std::int32_t> conv_output_clamp(const ConvDesc& desc, std::int32_t qmin,
                                                        std::int32_t qmax);

// requantize's descriptor: out dtype and zero point, multipliers, axis (requantize.cpp).
void validate_requantize(const std::string& op, const RequantizeDesc& desc);
// linear_forward / linear_backward's descriptor (linear.cpp).
void validate_linear(const std::string& op, const LinearDesc& desc);

// The operands with their zero points subtracted, as exact integers: a is [M, K] row-major,
// b is [N, K] row-major (B^T, whatever desc.b_layout is), so every dot product runs along K
// over contiguous memory.
struct CenteredOperands {
  std::vector<std::int32_t> a;
  std::vector<std::int32_t> b;
};
CenteredOperands center_operands(const MatmulDesc& desc, const void* a, const void* b);

// Exact sum over k in [k0, k1) of a[m, k] * b[n, k].
std::int64_t dot(const CenteredOperands& ops, std::int64_t k, std::int64_t m, std::int64_t n,
                 std::int64_t k0, std::int64_t k1);

// Returns v as int32, or throws ErrorCode::overflow naming the op, the position and the value.
std::int32_t checked_int32(const std::string& op, std::int64_t v, std::int64_t m, std::int64_t n,
                           const std::string& context = {});

}  // namespace qforge::reference::detail
