// QuantizeLinear, DequantizeLinear (int8/uint8, per tensor or, from version 13, per axis) and
// DynamicQuantizeLinear: what a QDQ model (model/quantize's export, ONNX Runtime's
// quantize_static) wraps around its float ops. The arithmetic is core's reference
// (quantize_value / dequantize_value / dynamic_quantize_linear), so a QDQ model run here
// quantizes exactly as qforge's quantized layers do.
#include <cmath>

#include "ops/kernel.h"
#include "qforge/dtype.h"
#include "qforge/reference.h"

namespace qforge::model::ops {
namespace {

// Which scale (and zero point) each element uses: outer x channels x inner around `axis`.
struct AxisSplit {
  std::int64_t outer = 1, channels = 1, inner = 1;
};

AxisSplit split(const Node& n, const Shape& x, const TensorType& scale) {
  AxisSplit s;
  for (auto d : x) s.inner *= d;
  if (scale.shape.empty()) return s;
  if (n.since_version < 13)
    fail(n, ErrorCode::invalid_argument,
         "the scale must be a scalar before version 13 (per-axis scales need opset 13)");
  if (scale.shape.size() != 1)
    fail(n, ErrorCode::invalid_argument,
         "the scale has shape " + to_string(scale) + "; expected a scalar or a 1-D tensor");
  const auto rank = static_cast<std::int64_t>(x.size());
  const std::int64_t axis = normalize_axis(n, n.attr_int_or("axis", 1), rank);
  if (scale.shape[0] != x[static_cast<std::size_t>(axis)])
    fail(n, ErrorCode::invalid_argument,
         "the scale has " + std::to_string(scale.shape[0]) + " values; expected one per index " +
             "of axis " + std::to_string(axis) + " (" +
             std::to_string(x[static_cast<std::size_t>(axis)]) + ")");
  s = {1, scale.shape[0], 1};
  for (std::int64_t d = 0; d < rank; ++d) {
    if (d < axis) s.outer *= x[static_cast<std::size_t>(d)];
    if (d > axis) s.inner *= x[static_cast<std::size_t>(d)];
  }
  return s;
}

void check_zero_point_type(const Node& n, std::span<const InferInput> in, const TensorType& scale,
                           std::initializer_list<ElementType> allowed) {
  if (in.size() < 3 || !in[2].present()) return;
  require_type(n, in, 2, allowed);
  if (in[2].type->shape != scale.shape)
    fail(n, ErrorCode::invalid_argument,
         "the zero point has shape " + to_string(*in[2].type) + "; expected the scale's shape " +
             to_string(scale));
}

std::vector<TensorType> infer_quantize(const Node& n, std::span<const InferInput> in) {
  require_type(n, in, 0, {ElementType::float32});
  require_type(n, in, 1, {ElementType::float32});
  const TensorType& scale = input_type(n, in, 1);
  split(n, input_type(n, in, 0).shape, scale);
  check_zero_point_type(n, in, scale, {ElementType::int8, ElementType::uint8});
  const bool has_zp = in.size() > 2 && in[2].present();
  return {{has_zp ? in[2].type->type : ElementType::uint8, in[0].type->shape}};
}

std::vector<TensorType> infer_dequantize(const Node& n, std::span<const InferInput> in) {
  require_type(n, in, 0, {ElementType::int8, ElementType::uint8, ElementType::int32});
  require_type(n, in, 1, {ElementType::float32});
  const TensorType& scale = input_type(n, in, 1);
  split(n, input_type(n, in, 0).shape, scale);
  check_zero_point_type(n, in, scale, {in[0].type->type});
  return {{ElementType::float32, in[0].type->shape}};
}

// Integer values of an int8/uint8/int32 tensor (zero points, DequantizeLinear's input).
std::int32_t integer_at(const Tensor& t, std::int64_t i) {
  const auto k = static_cast<std::size_t>(i);
  switch (t.type()) {
    case ElementType::int8: return t.values<std::int8_t>()[k];
    case ElementType::uint8: return t.values<std::uint8_t>()[k];
    default: return t.values<std::int32_t>()[k];
  }
}

float checked_scale(const Node& n, const Tensor& scale, std::int64_t c) {
  const float s = scale.values<float>()[static_cast<std::size_t>(c)];
  if (!(std::isfinite(s) && s > 0.0f))
    fail(n, ErrorCode::invalid_argument,
         "scale[" + std::to_string(c) + "] = " + std::to_string(s) + "; expected finite and > 0");
  return s;
}

void run_quantize(const Node& n, std::span<const Tensor* const> in, std::span<Tensor* const> out) {
  const AxisSplit s = split(n, in[0]->shape(), in[1]->tensor_type());
  const Tensor* zp = in.size() > 2 ? in[2] : nullptr;
  const auto& tr = traits(out[0]->type() == ElementType::int8 ? DType::int8 : DType::uint8);
  const float* x = in[0]->values<float>().data();
  for (std::int64_t c = 0; c < s.channels; ++c) {
    const float scale = checked_scale(n, *in[1], c);
    const std::int32_t z = zp ? integer_at(*zp, c) : 0;
    for (std::int64_t o = 0; o < s.outer; ++o)
      for (std::int64_t i = 0; i < s.inner; ++i) {
        const std::int64_t e = (o * s.channels + c) * s.inner + i;
        const std::int32_t q = reference::quantize_value(x[e], scale, z, tr.qmin, tr.qmax);
        if (tr.dtype == DType::int8)
          out[0]->values<std::int8_t>()[static_cast<std::size_t>(e)] = static_cast<std::int8_t>(q);
        else
          out[0]->values<std::uint8_t>()[static_cast<std::size_t>(e)] =
              static_cast<std::uint8_t>(q);
      }
  }
}

void run_dequantize(const Node& n, std::span<const Tensor* const> in,
                    std::span<Tensor* const> out) {
  const AxisSplit s = split(n, in[0]->shape(), in[1]->tensor_type());
  const Tensor* zp = in.size() > 2 ? in[2] : nullptr;
  float* y = out[0]->values<float>().data();
  for (std::int64_t c = 0; c < s.channels; ++c) {
    const float scale = checked_scale(n, *in[1], c);
    const std::int32_t z = zp ? integer_at(*zp, c) : 0;
    for (std::int64_t o = 0; o < s.outer; ++o)
      for (std::int64_t i = 0; i < s.inner; ++i) {
        const std::int64_t e = (o * s.channels + c) * s.inner + i;
        y[e] = reference::dequantize_value(integer_at(*in[0], e), scale, z);
      }
  }
}

std::vector<TensorType> infer_dynamic(const Node& n, std::span<const InferInput> in) {
  require_type(n, in, 0, {ElementType::float32});
  return {{ElementType::uint8, in[0].type->shape},
          {ElementType::float32, {}},
          {ElementType::uint8, {}}};
}

void run_dynamic(const Node&, std::span<const Tensor* const> in, std::span<Tensor* const> out) {
  const QuantizationParams p = reference::dynamic_quantize_linear(
      DynamicQuantizeDesc{Shape{in[0]->size()}}, in[0]->values<float>().data(),
      out[0]->values<std::uint8_t>().data());
  out[1]->values<float>()[0] = p.scale();
  out[2]->values<std::uint8_t>()[0] = static_cast<std::uint8_t>(p.zero_point());
}

}  // namespace

void register_quantize_linear(KernelRegistry& r) {
  r.add({"QuantizeLinear", {10, 13}, {"axis"}, nullptr, infer_quantize, run_quantize});
  r.add({"DequantizeLinear", {10, 13}, {"axis"}, nullptr, infer_dequantize, run_dequantize});
  r.add({"DynamicQuantizeLinear", {11}, {}, nullptr, infer_dynamic, run_dynamic});
}

}  // namespace qforge::model::ops
