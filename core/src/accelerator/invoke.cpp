// One generic call per op, on a plugin or on the reference, from arrays in io_layout order.
#include <variant>

#include "accelerator/operands.h"
#include "op_table/array_call.h"
#include "qforge/error.h"
#include "qforge/reference.h"

namespace qforge::accel {
namespace {

using ReferenceTarget = op_table_detail::ReferenceOps;

template <class Target>
std::optional<QuantizationParams> call(Target& t, const OpDesc& op, const void* const* in,
                                       void* const* out,
                                       const std::optional<QuantizationParams>& xq_params) {
  auto f32 = [](const void* p) { return static_cast<const float*>(p); };
  switch (op.op) {
    case OpKind::quantize:
      t.quantize(std::get<QuantizeDesc>(op.desc), in[0], out[0]);
      return std::nullopt;
    case OpKind::dequantize:
      t.dequantize(std::get<QuantizeDesc>(op.desc), in[0], static_cast<float*>(out[0]));
      return std::nullopt;
    case OpKind::requantize:
      t.requantize(std::get<RequantizeDesc>(op.desc), static_cast<const std::int32_t*>(in[0]),
                   out[0]);
      return std::nullopt;
    case OpKind::matmul_integer:
      t.matmul_integer(std::get<MatmulDesc>(op.desc), in[0], in[1],
                       static_cast<std::int32_t*>(out[0]));
      return std::nullopt;
    case OpKind::matmul_dequant: {
      const auto& d = std::get<MatmulDesc>(op.desc);
      t.matmul_dequant(d, in[0], in[1], d.has_bias ? f32(in[2]) : nullptr, out[0]);
      return std::nullopt;
    }
    case OpKind::qlinear_matmul:
      t.qlinear_matmul(std::get<MatmulDesc>(op.desc), in[0], in[1], out[0]);
      return std::nullopt;
    case OpKind::matmul_weight_only: {
      const auto& d = std::get<MatmulDesc>(op.desc);
      t.matmul_weight_only(d, f32(in[0]), in[1], d.has_bias ? f32(in[2]) : nullptr,
                           static_cast<float*>(out[0]));
      return std::nullopt;
    }
    case OpKind::dynamic_quantize_linear:
      return t.dynamic_quantize_linear(std::get<DynamicQuantizeDesc>(op.desc), f32(in[0]),
                                       static_cast<std::uint8_t*>(out[0]));
    case OpKind::linear_forward: {
      const auto& d = std::get<LinearDesc>(op.desc);
      return t.linear_forward(d, f32(in[0]), static_cast<const std::int8_t*>(in[1]),
                              d.has_bias ? f32(in[2]) : nullptr, static_cast<std::int8_t*>(out[0]),
                              static_cast<float*>(out[1]));
    }
    case OpKind::linear_backward: {
      const auto& d = std::get<LinearDesc>(op.desc);
      if (!xq_params)
        throw Error(ErrorCode::internal, "accelerator: linear_backward called without xq params");
      t.linear_backward(d, f32(in[0]), static_cast<const std::int8_t*>(in[1]), *xq_params,
                        static_cast<const std::int8_t*>(in[2]), static_cast<float*>(out[0]),
                        static_cast<float*>(out[1]),
                        d.has_bias ? static_cast<float*>(out[2]) : nullptr);
      return std::nullopt;
    }
    case OpKind::conv_integer:
    case OpKind::qlinear_conv:
    case OpKind::conv_dequant: {
      const auto& d = std::get<ConvDesc>(op.desc);
      t.conv(op.op, d, in[0], in[1], d.bias != ConvBias::none ? in[2] : nullptr, out[0]);
      return std::nullopt;
    }
  }
  throw Error(ErrorCode::internal, "accelerator: unknown op kind");
}

}  // namespace

std::optional<QuantizationParams> invoke(QuantizationOps& ops, const OpDesc& op,
                                         const void* const* in, void* const* out,
                                         const std::optional<QuantizationParams>& xq_params) {
  return call(ops, op, in, out, xq_params);
}

std::optional<QuantizationParams> invoke_reference(
    const OpDesc& op, const void* const* in, void* const* out,
    const std::optional<QuantizationParams>& xq_params) {
  ReferenceTarget t;
  return call(t, op, in, out, xq_params);
}

}  // namespace qforge::accel
