// The exact reference numerics: plain loops written for obviousness, not speed. They define
// what every operation means; every backend's integer outputs equal these bit for bit and its
// float outputs meet the op's stated tolerance (docs/NUMERICS.md). All pointers are host memory.
//
// Rounding is half to even. Saturation clamps to the range of the params' mapping (full range
// for affine, narrow range for symmetric). +inf/-inf saturate; NaN maps to the zero point.
// Every function validates its descriptor and throws qforge::Error on a mismatch.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "qforge/export.h"
#include "qforge/op_desc.h"
#include "qforge/params.h"

namespace qforge::reference {

// ---- params from an observed range (lo = min(lo, 0), hi = max(hi, 0), so 0.0 is exact) ----
// affine:      s = (hi - lo) / (qmax - qmin), z = sat(rne(qmin - lo / s))
// symmetric:   s = max(|lo|, |hi|) / narrow_qmax_above_zero, z = symmetric_zero_point
// logarithmic: s = max(|lo|, |hi|)
// A zero range gives s = 1. Non-finite lo/hi throw.
QFORGE_API QuantizationParams params_from_range(DType dtype, Mapping mapping, float lo, float hi);
// One pair per entry of lo/hi, for per-channel (axis) or block (block_size) granularity.
QFORGE_API QuantizationParams params_from_ranges(DType dtype, const Scheme& scheme,
                                                 std::span<const float> lo,
                                                 std::span<const float> hi);

// ---- scalar kernels: the single definition every op uses ----
QFORGE_API std::int32_t quantize_value(float x, float scale, std::int32_t zero_point,
                                       std::int32_t qmin, std::int32_t qmax) noexcept;
QFORGE_API float dequantize_value(std::int32_t q, float scale, std::int32_t zero_point) noexcept;
QFORGE_API std::int32_t quantize_log_value(float x, float scale, DType dtype) noexcept;
QFORGE_API float dequantize_log_value(std::int32_t q, float scale) noexcept;

// ---- tensors ----
// x has element_count(desc.shape) elements of desc.float_type; q receives storage_bytes().
QFORGE_API void quantize(const QuantizeDesc& desc, const void* x, void* q);
// q packed -> x float32.
QFORGE_API void dequantize(const QuantizeDesc& desc, const void* q, float* x);

// TFLite's QuantizeMultiplier: real = multiplier * 2^(shift - 31), multiplier in [2^30, 2^31).
struct FixedPointMultiplier {
  std::int32_t multiplier = 0;
  int shift = 0;  // > 0: left shift, < 0: right shift
};
QFORGE_API FixedPointMultiplier quantize_multiplier(double real_multiplier);
QFORGE_API std::int32_t saturating_rounding_doubling_high_mul(std::int32_t a,
                                                              std::int32_t b) noexcept;
QFORGE_API std::int32_t rounding_divide_by_pot(std::int32_t x, int exponent) noexcept;
// TFLite's MultiplyByQuantizedMultiplier.
QFORGE_API std::int32_t multiply_by_quantized_multiplier(std::int32_t x,
                                                         FixedPointMultiplier m) noexcept;
// One requantized value in either mode, saturated to [qmin, qmax] of out dtype.
QFORGE_API std::int32_t requantize_value(std::int32_t c, float multiplier, RequantMode mode,
                                         std::int32_t zero_point, std::int32_t qmin,
                                         std::int32_t qmax);

QFORGE_API void requantize(const RequantizeDesc& desc, const std::int32_t* c, void* y);

// ---- descriptor checks (descriptor_check.cpp) ----
// Whether the reference accepts a descriptor, decided from the descriptor alone, as a backend's
// supports() must answer before any data exists: throws the Error the op itself would throw
// ("reference::<op>: what was wrong; expected ..."). What only the data can show (an int32
// overflow, a non-finite input of dynamic_quantize_linear) is not checked. Backends build their
// own capability rules on top of this one definition.
QFORGE_API void check_descriptor(const OpDesc& op);
// The same for one descriptor type, without building an OpDesc (which copies the descriptor's
// params: megabytes for block-wise params, on every call of an op that checks itself).
QFORGE_API void check_descriptor(OpKind op, const QuantizeDesc& desc);
QFORGE_API void check_descriptor(OpKind op, const RequantizeDesc& desc);
QFORGE_API void check_descriptor(OpKind op, const MatmulDesc& desc);
QFORGE_API void check_descriptor(OpKind op, const DynamicQuantizeDesc& desc);
QFORGE_API void check_descriptor(OpKind op, const LinearDesc& desc);
QFORGE_API void check_descriptor(OpKind op, const ConvDesc& desc);
// Parts of it for calls on weights packed earlier, whose B side was checked when packing:
// m, n, k >= 0 and A's params of a matmul op;
QFORGE_API void check_matmul_a(OpKind op, const MatmulDesc& desc);
// qlinear_matmul's output params and that every multiplier (sa * sb) / sy is finite, given the
// largest B scale (float multiplication and division round monotonically, so the largest
// scales decide for every pair).
QFORGE_API void check_qlinear_output(const MatmulDesc& desc, float max_b_scale);

// matmul_dequant with A's params given at run (MatmulDesc::a_params_at_run): throws
// invalid_argument unless `scale` is finite and > 0 and `zero_point` lies in A's dtype range (and
// is the mapping's fixed zero point for symmetric A). The one check a flagged plan's run makes.
QFORGE_API void check_a_params_at_run(const MatmulDesc& desc, float scale, std::int32_t zero_point);
// The flagged descriptor as the plain op: A's params built from the run's values (checked as
// above), the flag cleared. What the reference and the wrapping backends run, so that a flagged
// op's result is the unflagged op's bit for bit.
QFORGE_API MatmulDesc with_a_params_at_run(const MatmulDesc& desc, float scale,
                                           std::int32_t zero_point);
// For capability rules that depend on A's zero point (the int32-safe K): the flagged descriptor
// with A's zero point the one of A's dtype and mapping farthest from the codes (any zero point a
// run may bring), the flag cleared; an unflagged descriptor as it is.
QFORGE_API MatmulDesc a_params_at_run_bound(const MatmulDesc& desc);

// The largest K for which sum_k (a - za)(b - zb) cannot leave int32 for any operand values of
// these params' dtypes and zero points. Backends that accumulate in int32 claim only K <= this.
QFORGE_API std::int64_t int32_safe_k(const MatmulDesc& desc);

// C[m, n] = sum_k (A[m, k] - za) * (B[k, n] - zb). The reference accumulates in int64, so it is
// exact for every K; a result outside int32 throws ErrorCode::overflow naming (m, n) and value.
QFORGE_API void matmul_integer(const MatmulDesc& desc, const void* a, const void* b,
                               std::int32_t* c);
// Y[m, n] = float(C[m, n]) * sa * sb + bias[n] (per-block partial sums for block-wise B), written
// as desc.out_type. bias may be null when !desc.has_bias.
QFORGE_API void matmul_dequant(const MatmulDesc& desc, const void* a, const void* b,
                               const float* bias, void* y);
// y = clamp(sat(rne(float(C + bias[n]) * ((sa * sb) / sy)) + zy), lo, hi) (float mode) or the
// fixed-point equivalent; bias int32 [N] at scale sa * sb[n] when desc.has_bias (else null),
// C + bias must fit int32; [lo, hi] the codes of desc.activation's range (qmin, qmax for none).
QFORGE_API void qlinear_matmul(const MatmulDesc& desc, const void* a, const void* b,
                               const std::int32_t* bias, void* y);
// Without a bias (desc.has_bias false).
QFORGE_API void qlinear_matmul(const MatmulDesc& desc, const void* a, const void* b, void* y);

// Weight-only matmul (ONNX Runtime's MatMulNBits; docs/NUMERICS.md "Weight-only matmul"):
// Y[m, n] = sum_k A[m, k] * W[n, k] + bias[n], A float32 [M, K], W[n, k] = float(q - z) * s
// (float32) from B's codes and the (s, z) pair of (n, k): per tensor, per column or per block
// of K. Products and the sum over k (in order) are taken in double, the bias added in double,
// and the result rounded once to float32. bias may be null when !desc.has_bias.
QFORGE_API void matmul_weight_only(const MatmulDesc& desc, const float* a, const void* b,
                                   const float* bias, float* y);

// ---- convolution (ConvDesc, op_desc.h; docs/NUMERICS.md "Convolution") ----
// acc[n, o, oh, ow] = sum over the group's input channels and the kernel of
// (X - zx) * (W[o] - zw[o]), padded positions contributing 0; summed in int64, so exact; an
// accumulator (plus an int32 bias) outside int32 throws ErrorCode::overflow naming the position.
// The largest C / groups * KH * KW for which acc cannot leave int32 for any operand values of
// these params' dtypes and zero points (without a bias). Backends that accumulate in int32 claim
// only reductions up to this, or check.
QFORGE_API std::int64_t int32_safe_reduction(const ConvDesc& desc);
// ONNX ConvInteger: y = acc, int32.
QFORGE_API void conv_integer(const ConvDesc& desc, const void* x, const void* w, std::int32_t* y);
// ONNX QLinearConv: y = clamp(sat(rne(float(acc + bias[o]) * ((sx * sw[o]) / sy)) + zy)) (float
// mode; the fixed-point mode as requantize), the clamp being the fused activation's quantized
// bounds. bias is int32 [O] at scale sx * sw[o], null when desc.bias is none.
QFORGE_API void qlinear_conv(const ConvDesc& desc, const void* x, const void* w,
                             const std::int32_t* bias, void* y);
// y = clamp((float(acc + bias_i32[o]) * sx) * sw[o] + bias_f32[o]), float32; bias as desc.bias
// says (float32 or int32 [O]), null when none.
QFORGE_API void conv_dequant(const ConvDesc& desc, const void* x, const void* w, const void* bias,
                             float* y);
// One of the three by op kind; y is int32, int8/uint8 or float32 accordingly.
QFORGE_API void conv(OpKind op, const ConvDesc& desc, const void* x, const void* w,
                     const void* bias, void* y);

// ONNX DynamicQuantizeLinear. Returns the params it used.
QFORGE_API QuantizationParams dynamic_quantize_linear(const DynamicQuantizeDesc& desc,
                                                      const float* x, std::uint8_t* y);

// Quantized linear (see LinearDesc). Forward writes Y and returns Xq's params; xq receives M*K
// int8 values for the backward.
QFORGE_API QuantizationParams linear_forward(const LinearDesc& desc, const float* x,
                                             const std::int8_t* wq, const float* bias,
                                             std::int8_t* xq, float* y);
QFORGE_API void linear_backward(const LinearDesc& desc, const float* dy, const std::int8_t* xq,
                                const QuantizationParams& xq_params, const std::int8_t* wq,
                                float* dx, float* dw, float* db);

}  // namespace qforge::reference
