// What each op reads and writes, with sizes and how outputs are compared (docs/NUMERICS.md,
// "Tolerances for backends").
#include <variant>

#include "qforge/checked_size.h"
#include "qforge/dtype.h"
#include "qforge/error.h"
#include "qforge/op_table.h"
#include "qforge/shape.h"

namespace qforge::op_table_detail {
namespace {

// Checked against qforge's size limit (checked_size.h), so the byte counts below are exact.
std::size_t count_of(const Shape& s) { return static_cast<std::size_t>(element_count(s)); }
std::size_t count_of(std::int64_t a, std::int64_t b) {
  return static_cast<std::size_t>(a < 0 || b < 0 ? 0 : checked_element_count("operand", {a, b}));
}

OperandSpec exact(std::string_view name, OperandRole role, std::size_t bytes, std::size_t count) {
  OperandSpec s;
  s.name = name;
  s.role = role;
  s.count = count;
  s.bytes = bytes;
  return s;
}
OperandSpec codes(std::string_view name, OperandRole role, DType t, std::size_t count) {
  return exact(name, role, storage_bytes(t, count), count);
}
OperandSpec int32s(std::string_view name, OperandRole role, std::size_t count) {
  return exact(name, role, count * sizeof(std::int32_t), count);
}
OperandSpec floats(std::string_view name, OperandRole role, std::size_t count,
                   FloatType t = FloatType::f32, double tolerance = 0) {
  OperandSpec s = exact(name, role, count * static_cast<std::size_t>(size_of(t)), count);
  s.comparison = Comparison::nmse;
  s.float_type = t;
  s.tolerance = tolerance;
  return s;
}
// A computed scale or zero point: every backend computes it exactly as the reference does. It
// lives in host memory on every device (op_table.h).
OperandSpec param(std::string_view name, OperandRole role, std::size_t bytes) {
  OperandSpec s = exact(name, role, bytes, 1);
  s.params_in_calls = true;
  s.host_resident = true;
  return s;
}

// A scalar the host supplies to every run (MatmulDesc::a_params_at_run): host memory on every
// device, as the computed params above, but an array of the plan rather than a per-call argument.
OperandSpec run_param(std::string_view name, std::size_t bytes) {
  OperandSpec s = exact(name, OperandRole::input, bytes, 1);
  s.host_resident = true;
  return s;
}

double matmul_dequant_tolerance(FloatType t) {
  return t == FloatType::f32 ? 1e-12 : t == FloatType::f16 ? 1e-6 : 1e-4;
}

// matmul_weight_only's NMSE bound against the double-precision reference (docs/NUMERICS.md).
constexpr double kWeightOnlyTolerance = 1e-10;

constexpr OperandRole in = OperandRole::input;
constexpr OperandRole weight = OperandRole::weight;
constexpr OperandRole out = OperandRole::output;

}  // namespace

OpOperands quantize_operands(const OpDesc& op) {
  const auto& d = std::get<QuantizeDesc>(op.desc);
  const std::size_t n = count_of(d.shape);
  return {{floats("x", in, n, d.float_type)}, {codes("q", out, d.params.dtype(), n)}};
}

OpOperands dequantize_operands(const OpDesc& op) {
  const auto& d = std::get<QuantizeDesc>(op.desc);
  const std::size_t n = count_of(d.shape);
  return {{codes("q", in, d.params.dtype(), n)}, {floats("x", out, n, FloatType::f32, 0.0)}};
}

OpOperands requantize_operands(const OpDesc& op) {
  const auto& d = std::get<RequantizeDesc>(op.desc);
  const std::size_t n = count_of(d.shape);
  return {{int32s("c", in, n)}, {codes("y", out, d.out_dtype, n)}};
}

OpOperands matmul_operands(const OpDesc& op) {
  const auto& d = std::get<MatmulDesc>(op.desc);
  OpOperands l;
  l.inputs = {codes("a", in, d.a.dtype(), count_of(d.m, d.k)),
              codes("b", weight, d.b.dtype(), count_of(d.k, d.n))};
  const std::size_t mn = count_of(d.m, d.n);
  if (op.op == OpKind::matmul_integer) {
    l.outputs = {int32s("c", out, mn)};
  } else if (op.op == OpKind::matmul_dequant) {
    if (d.has_bias) l.inputs.push_back(floats("bias", weight, count_of(d.n, 1)));
    // After the other inputs, so that B and the bias keep their places (packed weights, the C
    // boundary's older plugins and every plan that fixes input 1 count on them).
    if (d.a_params_at_run) {
      l.inputs.push_back(run_param("a_scale", sizeof(float)));
      l.inputs.push_back(run_param("a_zero_point", sizeof(std::int32_t)));
    }
    l.outputs = {floats("y", out, mn, d.out_type, matmul_dequant_tolerance(d.out_type))};
  } else {
    if (d.has_bias) l.inputs.push_back(int32s("bias", weight, count_of(d.n, 1)));
    l.outputs = {codes("y", out, d.y ? d.y->dtype() : DType::int8, mn)};
  }
  return l;
}

OpOperands matmul_weight_only_operands(const OpDesc& op) {
  const auto& d = std::get<MatmulDesc>(op.desc);
  OpOperands l;
  l.inputs = {floats("a", in, count_of(d.m, d.k)),
              codes("b", weight, d.b.dtype(), count_of(d.k, d.n))};
  if (d.has_bias) l.inputs.push_back(floats("bias", weight, count_of(d.n, 1)));
  // Backends sum in float32 in their own order; the reference in double (docs/NUMERICS.md).
  l.outputs = {floats("y", out, count_of(d.m, d.n), FloatType::f32, kWeightOnlyTolerance)};
  return l;
}

OpOperands dynamic_quantize_operands(const OpDesc& op) {
  const auto& d = std::get<DynamicQuantizeDesc>(op.desc);
  const std::size_t n = count_of(d.shape);
  return {{floats("x", in, n)},
          {codes("y", out, DType::uint8, n), param("y_scale", out, sizeof(float)),
           param("y_zero_point", out, sizeof(std::uint8_t))}};
}

OpOperands linear_forward_operands(const OpDesc& op) {
  const auto& d = std::get<LinearDesc>(op.desc);
  OpOperands l;
  l.inputs = {floats("x", in, count_of(d.m, d.k)),
              codes("wq", weight, DType::int8, count_of(d.n, d.k))};
  if (d.has_bias) l.inputs.push_back(floats("bias", weight, count_of(d.n, 1)));
  l.outputs = {codes("xq", out, DType::int8, count_of(d.m, d.k)),
               floats("y", out, count_of(d.m, d.n), FloatType::f32, 1e-12),
               param("x_scale", out, sizeof(float))};
  return l;
}

OpOperands linear_backward_operands(const OpDesc& op) {
  const auto& d = std::get<LinearDesc>(op.desc);
  OpOperands l;
  l.inputs = {floats("dy", in, count_of(d.m, d.n)),
              codes("xq", in, DType::int8, count_of(d.m, d.k)), param("x_scale", in, sizeof(float)),
              codes("wq", weight, DType::int8, count_of(d.n, d.k))};
  l.outputs = {floats("dx", out, count_of(d.m, d.k), FloatType::f32, 1e-10),
               floats("dw", out, count_of(d.n, d.k), FloatType::f32, 1e-10)};
  if (d.has_bias) l.outputs.push_back(floats("db", out, count_of(d.n, 1), FloatType::f32, 1e-10));
  return l;
}

OpOperands conv_operands(const OpDesc& op) {
  const auto& d = std::get<ConvDesc>(op.desc);
  auto count = [](const Shape& s) {
    for (const auto e : s)
      if (e < 0) return std::size_t{0};
    return static_cast<std::size_t>(checked_element_count("operand", s));
  };
  OpOperands l;
  l.inputs = {codes("x", in, d.x_params.dtype(), count(d.x_shape())),
              codes("w", weight, d.w_params.dtype(), count(d.w_shape()))};
  const std::size_t o = count({d.out_channels});
  if (d.bias == ConvBias::f32) l.inputs.push_back(floats("bias", weight, o));
  if (d.bias == ConvBias::int32) l.inputs.push_back(int32s("bias", weight, o));
  const std::size_t ny = count(d.y_shape());
  if (op.op == OpKind::conv_integer) {
    l.outputs = {int32s("y", out, ny)};
  } else if (op.op == OpKind::qlinear_conv) {
    l.outputs = {codes("y", out, d.y_params ? d.y_params->dtype() : DType::int8, ny)};
  } else {
    // Every backend evaluates the float epilogue in the reference's order (docs/NUMERICS.md).
    l.outputs = {floats("y", out, ny, FloatType::f32, 1e-12)};
  }
  return l;
}

}  // namespace qforge::op_table_detail
