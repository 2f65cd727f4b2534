// Descriptions of every quantized operation: what the inputs are, not where they live. The same
// descriptions drive the reference numerics (reference.h), the backends (ops.h), the per-op
// capability queries and the accelerator's workload keys.
//
// Matrices are row-major. A is [M, K]. B is [K, N] (MatrixLayout::kn, ONNX MatMulInteger) or
// [N, K] (MatrixLayout::nk, the nn.Linear weight layout; block-wise B needs this layout so that
// blocks run along K). Outputs are [M, N].
//
// Convolutions (ConvDesc) are 2-D, with activations NCHW or NHWC and weights OIHW as ONNX
// stores them; see ConvDesc and docs/NUMERICS.md ("Convolution").
//
// Scheme of A: per-tensor, or per-channel along axis 0 (one pair per row).
// Scheme of B: per-tensor, per-channel on the N axis (one pair per column of the [K, N] view:
// axis 1 for kn, axis 0 for nk), or block-wise along K (nk only). See docs/NUMERICS.md.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "qforge/half.h"
#include "qforge/params.h"
#include "qforge/shape.h"

namespace qforge {

enum class OpKind : std::uint8_t {
  quantize,                 // float -> packed q
  dequantize,               // packed q -> float32
  requantize,               // int32 -> int8/uint8
  matmul_integer,           // ONNX MatMulInteger: int32 out
  matmul_dequant,           // fused dequantization: float out
  qlinear_matmul,           // ONNX QLinearMatMul: requantized int8/uint8 out
  dynamic_quantize_linear,  // ONNX DynamicQuantizeLinear: float -> uint8 + (s, z)
  linear_forward,           // quantized nn.Linear forward
  linear_backward,          // its backward: dX, dW, db
  conv_integer,             // ONNX ConvInteger: int32 out
  qlinear_conv,             // ONNX QLinearConv: requantized int8/uint8 out
  conv_dequant,             // convolution with fused dequantization: float32 out
  matmul_weight_only,       // float A x block-quantized B (ORT's MatMulNBits): float32 out
};
inline constexpr int kOpKindCount = 13;
QFORGE_API std::string_view to_string(OpKind op) noexcept;
QFORGE_API std::optional<OpKind> parse_op_kind(std::string_view text) noexcept;

enum class MatrixLayout : std::uint8_t { kn, nk };
QFORGE_API std::string_view to_string(MatrixLayout l) noexcept;

// quantize / dequantize: one tensor of `shape`, float side of type `float_type` (dequantize
// always writes float32).
struct QuantizeDesc {
  Shape shape;
  QuantizationParams params;
  FloatType float_type = FloatType::f32;
};

enum class RequantMode : std::uint8_t {
  float_multiplier,  // y = sat(rne(float(c) * m) + zy), float32 arithmetic (ONNX QLinearMatMul)
  fixed_point,       // TFLite: SaturatingRoundingDoublingHighMul + RoundingDivideByPOT
};
QFORGE_API std::string_view to_string(RequantMode m) noexcept;

// requantize: int32 tensor of `shape` -> out_dtype (int8 or uint8). `multipliers` has one entry
// (per tensor) or one per index along `axis`. In fixed_point mode each float multiplier is
// converted with quantize_multiplier() (reference.h), exactly as TFLite does.
struct RequantizeDesc {
  Shape shape;
  std::vector<float> multipliers;
  int axis = -1;
  DType out_dtype = DType::int8;
  std::int32_t out_zero_point = 0;
  RequantMode mode = RequantMode::float_multiplier;
};

// A clamp fused into the epilogue of qlinear_conv and qlinear_matmul (on the quantized output,
// exactly what requantize-then-clamp gives) and conv_dequant (on the float output).
enum class ConvActivation : std::uint8_t {
  none,
  relu,   // >= 0
  relu6,  // in [0, 6]
  clamp,  // in [clamp_min, clamp_max]
};
QFORGE_API std::string_view to_string(ConvActivation a) noexcept;

// matmul_integer / matmul_dequant / qlinear_matmul / matmul_weight_only.
// matmul_weight_only reads A as float32 [M, K] (`a` is not used), B as int4, uint4, int8 or
// uint8 codes (per tensor, per column, or in blocks along K with b_layout nk, as ONNX Runtime's
// MatMulNBits stores them) and writes float32 (docs/NUMERICS.md, "Weight-only matmul").
struct MatmulDesc {
  std::int64_t m = 0, n = 0, k = 0;
  QuantizationParams a;  // only zero points matter for matmul_integer
  QuantizationParams b;
  MatrixLayout b_layout = MatrixLayout::kn;
  // matmul_dequant and matmul_weight_only: bias is float32 [N]. qlinear_matmul: bias is int32
  // [N] at scale sa * sb[n], added to the accumulator before requantization (TFLite's
  // convention, as qlinear_conv's int32 bias).
  bool has_bias = false;
  FloatType out_type = FloatType::f32;  // f16/bf16 only where a backend claims them
  // qlinear_matmul: output params (per tensor, int8 or uint8) and requantization mode
  std::optional<QuantizationParams> y;
  RequantMode requant_mode = RequantMode::float_multiplier;
  // qlinear_matmul only: a clamp on the quantized output (a fused Relu, Relu6 or Clip), exactly
  // what requantize-then-clamp gives, as qlinear_conv's; the other matmul kinds take none.
  ConvActivation activation = ConvActivation::none;
  float clamp_min = 0, clamp_max = 0;  // ConvActivation::clamp, in real units
  // matmul_dequant with per-tensor A only: A's scale and zero point are inputs of every run
  // (op_table.h: `a_scale` float32 and `a_zero_point` int32, host-resident, after the other
  // inputs) rather than values of the descriptor, whose `a` then gives only A's dtype and
  // scheme. One plan then serves activations quantized anew on every call (dynamic
  // quantization); each run checks the values (reference::a_params_at_run). The per-call ops,
  // which have no place for the values, refuse the flag.
  bool a_params_at_run = false;

  Shape a_shape() const { return {m, k}; }
  Shape b_shape() const { return b_layout == MatrixLayout::kn ? Shape{k, n} : Shape{n, k}; }
};

// dynamic_quantize_linear: float32 tensor -> uint8 with computed (s, z).
struct DynamicQuantizeDesc {
  Shape shape;
};

// linear_forward / linear_backward, the quantized nn.Linear of the Triton seed:
//   X float32 [M, K]; W quantized int8 [N, K] per-output-channel (axis 0) or per-tensor
//   symmetric; bias float32 [N] optional.
//   forward:  Xq = quantize X per tensor symmetric int8, sx = max(max|X| / 127, 1e-8)
//             Y[M, N] = (Xq * Wq^T) * sx * sw[n] + bias[n]        (float32)
//   backward: dX[M, K] = dY * deq(Wq)            (dY float32 [M, N])
//             dW[N, K] = dY^T * deq(Xq)
//             db[N]    = sum over rows of dY
// In DESIGN.md's notation (Y = X W with W [K, N]) these are dX = dY deq(W)^T, dW = deq(X)^T dY.
struct LinearDesc {
  std::int64_t m = 0, n = 0, k = 0;
  QuantizationParams w;  // int8, symmetric, per_tensor or per_channel(axis 0)
  bool has_bias = false;
};

enum class ConvLayout : std::uint8_t { nchw, nhwc };
QFORGE_API std::string_view to_string(ConvLayout l) noexcept;

// ONNX's auto_pad. notset keeps the explicit pads of the descriptor.
enum class AutoPad : std::uint8_t { notset, same_upper, same_lower, valid };
QFORGE_API std::string_view to_string(AutoPad p) noexcept;

enum class ConvBias : std::uint8_t {
  none,
  f32,    // float32 [O], added after dequantization (conv_dequant only)
  int32,  // int32 [O] at scale sx * sw[o], added to the accumulator (qlinear_conv, conv_dequant)
};
QFORGE_API std::string_view to_string(ConvBias b) noexcept;

// (The conv kinds' fused clamp, ConvActivation, is declared before MatmulDesc, which has one.)
// conv_integer / qlinear_conv / conv_dequant: a 2-D convolution of quantized activations X by
// quantized weights W.
//   X: [N, C, H, W] (nchw) or [N, H, W, C] (nhwc), per-tensor params (int8 or uint8).
//   W: [O, C / groups, KH, KW] (ONNX's OIHW, whatever the activation layout), int8 or uint8,
//      per tensor or per output channel (per_channel along axis 0).
//   Y: [N, O, OH, OW] (nchw) or [N, OH, OW, O] (nhwc).
// Output channel o belongs to group g = o / (O / groups) and reads input channels
// [g * C / groups, (g + 1) * C / groups); depthwise is groups = C with O = C * multiplier.
// Padding is explicit (top, left, bottom, right); apply_auto_pad() turns ONNX's auto_pad into
// these. Padded positions contribute zero to the sums (as if they held the zero point of X).
struct QFORGE_API ConvDesc {
  ConvLayout layout = ConvLayout::nchw;
  std::int64_t n = 0, c = 0, h = 0, w = 0;  // activations
  std::int64_t out_channels = 0;            // O
  std::int64_t kernel_h = 1, kernel_w = 1;
  std::int64_t stride_h = 1, stride_w = 1;
  std::int64_t dilation_h = 1, dilation_w = 1;
  std::int64_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
  std::int64_t groups = 1;
  // Only the zero points matter for conv_integer.
  QuantizationParams x_params = QuantizationParams::per_tensor_affine(DType::uint8, 1.0f, 0);
  QuantizationParams w_params = QuantizationParams::per_tensor_symmetric(DType::int8, 1.0f);
  ConvBias bias = ConvBias::none;  // conv_integer: none
  // qlinear_conv: output params (per tensor, int8 or uint8) and requantization mode
  std::optional<QuantizationParams> y_params;
  RequantMode requant_mode = RequantMode::float_multiplier;
  ConvActivation activation = ConvActivation::none;  // conv_integer: none
  float clamp_min = 0, clamp_max = 0;                // ConvActivation::clamp, in real units

  // Output extents: (H + pad_top + pad_bottom - dilation_h * (kernel_h - 1) - 1) / stride_h + 1,
  // floored; may be <= 0 for a descriptor the reference rejects.
  std::int64_t out_h() const noexcept;
  std::int64_t out_w() const noexcept;
  Shape x_shape() const;
  Shape w_shape() const { return {out_channels, groups > 0 ? c / groups : 0, kernel_h, kernel_w}; }
  Shape y_shape() const;
  // The length of each output's sum: C / groups * KH * KW.
  std::int64_t reduction() const noexcept;
};

// Sets the pads of `d` as ONNX's auto_pad does from its H, W, kernel, strides and dilations:
// same_upper / same_lower give OH = ceil(H / stride_h) (likewise W), the odd pad going at the
// end (upper) or the beginning (lower); valid sets every pad to 0; notset changes nothing.
// Throws invalid_argument for extents, strides or dilations out of range.
QFORGE_API void apply_auto_pad(ConvDesc& d, AutoPad mode);

struct OpDesc {
  OpKind op;
  std::variant<QuantizeDesc, RequantizeDesc, MatmulDesc, DynamicQuantizeDesc, LinearDesc, ConvDesc>
      desc;
};

// A short human-readable key: "matmul_integer m=4 n=2 k=3 a=uint8/per_tensor_affine b=..."
QFORGE_API std::string describe(const OpDesc& op);

}  // namespace qforge
