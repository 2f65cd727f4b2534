// Descriptions of every quantized operation: what the inputs are, not where they live. The same
// descriptions drive the reference numerics (reference.h), the backends (ops.h), the per-op
// capability queries and the accelerator's workload keys.
//
// Matrices are row-major. A is [M, K]. B is [K, N] (MatrixLayout::kn, ONNX MatMulInteger) or
// [N, K] (MatrixLayout::nk, the nn.Linear weight layout; block-wise B needs this layout so that
// blocks run along K). Outputs are [M, N].
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
};
inline constexpr int kOpKindCount = 9;
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

// matmul_integer / matmul_dequant / qlinear_matmul.
struct MatmulDesc {
  std::int64_t m = 0, n = 0, k = 0;
  QuantizationParams a;  // only zero points matter for matmul_integer
  QuantizationParams b;
  MatrixLayout b_layout = MatrixLayout::kn;
  // matmul_dequant
  bool has_bias = false;                // bias is float32 [N]
  FloatType out_type = FloatType::f32;  // f16/bf16 only where a backend claims them
  // qlinear_matmul: output params (per tensor, int8 or uint8) and requantization mode
  std::optional<QuantizationParams> y;
  RequantMode requant_mode = RequantMode::float_multiplier;

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

struct OpDesc {
  OpKind op;
  std::variant<QuantizeDesc, RequantizeDesc, MatmulDesc, DynamicQuantizeDesc, LinearDesc> desc;
};

// A short human-readable key: "matmul_integer m=4 n=2 k=3 a=uint8/per_tensor_affine b=..."
QFORGE_API std::string describe(const OpDesc& op);

}  // namespace qforge
