#include "qforge/op_table.h"

#include <array>

#include "op_table/op_hooks.h"
#include "qforge/error.h"
#include "qforge/reference.h"

namespace qforge {
namespace op_table_detail {

OpOperands quantize_operands(const OpDesc& op);
OpOperands dequantize_operands(const OpDesc& op);
OpOperands requantize_operands(const OpDesc& op);
OpOperands matmul_operands(const OpDesc& op);
OpOperands dynamic_quantize_operands(const OpDesc& op);
OpOperands linear_forward_operands(const OpDesc& op);
OpOperands linear_backward_operands(const OpDesc& op);
OpOperands conv_operands(const OpDesc& op);
OpOperands matmul_weight_only_operands(const OpDesc& op);

// Work per run (kinds/*.cpp).
OpWork quantize_work(const OpDesc& op);
OpWork dequantize_work(const OpDesc& op);
OpWork requantize_work(const OpDesc& op);
OpWork matmul_work(const OpDesc& op);
OpWork dynamic_quantize_work(const OpDesc& op);
OpWork linear_work(const OpDesc& op);
OpWork conv_work(const OpDesc& op);

// Example grids (kinds/*.cpp).
std::vector<OpExample> quantize_examples(OpKind op);
std::vector<OpExample> requantize_examples(OpKind op);
std::vector<OpExample> matmul_examples(OpKind op);
std::vector<OpExample> weight_only_examples(OpKind op);
std::vector<OpExample> dynamic_quantize_examples(OpKind op);
std::vector<OpExample> linear_examples(OpKind op);
std::vector<OpExample> conv_examples(OpKind op);

// Core's own functions of each kind (op_hooks.h), defined `extern const` in kinds/*.cpp (a
// namespace-scope const would otherwise have internal linkage).
extern const OpHooks kQuantizeHooks, kDequantizeHooks, kRequantizeHooks, kMatmulIntegerHooks,
    kMatmulDequantHooks, kQlinearMatmulHooks, kDynamicQuantizeHooks, kLinearForwardHooks,
    kLinearBackwardHooks, kConvIntegerHooks, kQlinearConvHooks, kConvDequantHooks,
    kMatmulWeightOnlyHooks;

namespace {

void check(const OpDesc& op) { reference::check_descriptor(op); }

void run(const OpDesc& op, const void* const* in, void* const* out) {
  call_with_arrays(nullptr, op, in, out);
}

// Indexed by OpKind; op_table_test checks that every entry sits at its kind's index.
constexpr std::array<OpInfo, kOpKindCount> kTable = {{
    {OpKind::quantize, "quantize", "float -> quantized codes (ONNX QuantizeLinear)",
     &quantize_operands, &check, &run, &quantize_work, &quantize_examples, &kQuantizeHooks},
    {OpKind::dequantize, "dequantize", "quantized codes -> float32 (ONNX DequantizeLinear)",
     &dequantize_operands, &check, &run, &dequantize_work, &quantize_examples, &kDequantizeHooks},
    {OpKind::requantize, "requantize", "int32 -> int8/uint8 by a float or fixed-point multiplier",
     &requantize_operands, &check, &run, &requantize_work, &requantize_examples, &kRequantizeHooks},
    {OpKind::matmul_integer, "matmul_integer", "int32 C = (A - za)(B - zb) (ONNX MatMulInteger)",
     &matmul_operands, &check, &run, &matmul_work, &matmul_examples, &kMatmulIntegerHooks},
    {OpKind::matmul_dequant, "matmul_dequant",
     "float Y = C * sa * sb + bias (fused dequantization)", &matmul_operands, &check, &run,
     &matmul_work, &matmul_examples, &kMatmulDequantHooks},
    {OpKind::qlinear_matmul, "qlinear_matmul", "requantized Y (ONNX QLinearMatMul)",
     &matmul_operands, &check, &run, &matmul_work, &matmul_examples, &kQlinearMatmulHooks},
    {OpKind::dynamic_quantize_linear, "dynamic_quantize_linear",
     "float -> uint8 with the scale and zero point it computed (ONNX DynamicQuantizeLinear)",
     &dynamic_quantize_operands, &check, &run, &dynamic_quantize_work, &dynamic_quantize_examples,
     &kDynamicQuantizeHooks},
    {OpKind::linear_forward, "linear_forward",
     "quantized nn.Linear forward: X quantized per call, Y = Xq Wq^T sx sw + bias",
     &linear_forward_operands, &check, &run, &linear_work, &linear_examples, &kLinearForwardHooks},
    {OpKind::linear_backward, "linear_backward", "its backward: dX, dW, db",
     &linear_backward_operands, &check, &run, &linear_work, &linear_examples,
     &kLinearBackwardHooks},
    {OpKind::conv_integer, "conv_integer",
     "int32 Y = 2-D convolution of (X - zx) by (W - zw) (ONNX ConvInteger)", &conv_operands, &check,
     &run, &conv_work, &conv_examples, &kConvIntegerHooks},
    {OpKind::qlinear_conv, "qlinear_conv",
     "requantized 2-D convolution with int32 bias and fused clamp (ONNX QLinearConv)",
     &conv_operands, &check, &run, &conv_work, &conv_examples, &kQlinearConvHooks},
    {OpKind::conv_dequant, "conv_dequant",
     "float Y = conv * sx * sw + bias, fused clamp (fused dequantization)", &conv_operands, &check,
     &run, &conv_work, &conv_examples, &kConvDequantHooks},
    {OpKind::matmul_weight_only, "matmul_weight_only",
     "float Y = A deq(B) + bias, B int4/int8 in blocks along K (ONNX Runtime's MatMulNBits)",
     &matmul_weight_only_operands, &check, &run, &matmul_work, &weight_only_examples,
     &kMatmulWeightOnlyHooks},
}};

}  // namespace
}  // namespace op_table_detail

std::string_view to_string(OperandRole r) noexcept {
  switch (r) {
    case OperandRole::input: return "input";
    case OperandRole::weight: return "weight";
    case OperandRole::output: return "output";
  }
  return "unknown";
}

std::size_t OpOperands::input_bytes() const noexcept {
  std::size_t n = 0;
  for (const auto& a : inputs) n += a.bytes;
  return n;
}

std::size_t OpOperands::output_bytes() const noexcept {
  std::size_t n = 0;
  for (const auto& a : outputs) n += a.bytes;
  return n;
}

std::span<const OpInfo> op_table() noexcept { return op_table_detail::kTable; }

const OpInfo& op_info(OpKind kind) {
  const auto i = static_cast<std::size_t>(kind);
  if (i >= op_table_detail::kTable.size())
    throw Error(ErrorCode::invalid_argument,
                "op kind " + std::to_string(i) + " is not in the op table; expected one of the " +
                    std::to_string(kOpKindCount) + " kinds of op_desc.h");
  return op_table_detail::kTable[i];
}

OpOperands op_operands(const OpDesc& op) { return op_info(op.op).operands(op); }

void run_reference(const OpDesc& op, const void* const* inputs, void* const* outputs) {
  op_info(op.op).reference(op, inputs, outputs);
}

}  // namespace qforge
