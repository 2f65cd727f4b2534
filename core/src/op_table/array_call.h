// Calls one op on anything with the method names of QuantizationOps (a backend, or the
// reference through ReferenceOps) from arrays in op_operands() order, host memory. The params
// an op computes or reads are arrays here (op_table.h) and QuantizationParams in the per-call
// signatures; this is the one place that converts between the two.
#pragma once

#include <cstdint>
#include <cstring>
#include <variant>

#include "qforge/error.h"
#include "qforge/op_desc.h"
#include "qforge/params.h"
#include "qforge/reference.h"

namespace qforge::op_table_detail {

// The reference with the method names of QuantizationOps.
struct ReferenceOps {
  void quantize(const QuantizeDesc& d, const void* x, void* q) { reference::quantize(d, x, q); }
  void dequantize(const QuantizeDesc& d, const void* q, float* x) {
    reference::dequantize(d, q, x);
  }
  void requantize(const RequantizeDesc& d, const std::int32_t* c, void* y) {
    reference::requantize(d, c, y);
  }
  void matmul_integer(const MatmulDesc& d, const void* a, const void* b, std::int32_t* c) {
    reference::matmul_integer(d, a, b, c);
  }
  void matmul_dequant(const MatmulDesc& d, const void* a, const void* b, const float* bias,
                      void* y) {
    reference::matmul_dequant(d, a, b, bias, y);
  }
  void qlinear_matmul(const MatmulDesc& d, const void* a, const void* b, void* y) {
    reference::qlinear_matmul(d, a, b, y);
  }
  void matmul_weight_only(const MatmulDesc& d, const float* a, const void* b, const float* bias,
                          float* y) {
    reference::matmul_weight_only(d, a, b, bias, y);
  }
  QuantizationParams dynamic_quantize_linear(const DynamicQuantizeDesc& d, const float* x,
                                             std::uint8_t* y) {
    return reference::dynamic_quantize_linear(d, x, y);
  }
  void conv(OpKind op, const ConvDesc& d, const void* x, const void* w, const void* bias, void* y) {
    reference::conv(op, d, x, w, bias, y);
  }
  QuantizationParams linear_forward(const LinearDesc& d, const float* x, const std::int8_t* wq,
                                    const float* bias, std::int8_t* xq, float* y) {
    return reference::linear_forward(d, x, wq, bias, xq, y);
  }
  void linear_backward(const LinearDesc& d, const float* dy, const std::int8_t* xq,
                       const QuantizationParams& xp, const std::int8_t* wq, float* dx, float* dw,
                       float* db) {
    reference::linear_backward(d, dy, xq, xp, wq, dx, dw, db);
  }
};

// linear_forward's activations are quantized per tensor, symmetric int8: the scale alone
// carries them.
inline QuantizationParams linear_activation_params(const void* x_scale) {
  float s;
  std::memcpy(&s, x_scale, sizeof s);
  return QuantizationParams::per_tensor_symmetric(DType::int8, s);
}

template <class Ops>
void call_with_arrays(Ops& t, const OpDesc& op, const void* const* in, void* const* out) {
  auto f32 = [](const void* p) { return static_cast<const float*>(p); };
  auto put_scale = [](void* dst, const QuantizationParams& p) {
    const float s = p.scale();
    std::memcpy(dst, &s, sizeof s);
  };
  switch (op.op) {
    case OpKind::quantize: t.quantize(std::get<QuantizeDesc>(op.desc), in[0], out[0]); return;
    case OpKind::dequantize:
      t.dequantize(std::get<QuantizeDesc>(op.desc), in[0], static_cast<float*>(out[0]));
      return;
    case OpKind::requantize:
      t.requantize(std::get<RequantizeDesc>(op.desc), static_cast<const std::int32_t*>(in[0]),
                   out[0]);
      return;
    case OpKind::matmul_integer:
      t.matmul_integer(std::get<MatmulDesc>(op.desc), in[0], in[1],
                       static_cast<std::int32_t*>(out[0]));
      return;
    case OpKind::matmul_dequant: {
      const auto& d = std::get<MatmulDesc>(op.desc);
      t.matmul_dequant(d, in[0], in[1], d.has_bias ? f32(in[2]) : nullptr, out[0]);
      return;
    }
    case OpKind::qlinear_matmul:
      t.qlinear_matmul(std::get<MatmulDesc>(op.desc), in[0], in[1], out[0]);
      return;
    case OpKind::matmul_weight_only: {
      const auto& d = std::get<MatmulDesc>(op.desc);
      t.matmul_weight_only(d, f32(in[0]), in[1], d.has_bias ? f32(in[2]) : nullptr,
                           static_cast<float*>(out[0]));
      return;
    }
    case OpKind::dynamic_quantize_linear: {
      const QuantizationParams p = t.dynamic_quantize_linear(
          std::get<DynamicQuantizeDesc>(op.desc), f32(in[0]), static_cast<std::uint8_t*>(out[0]));
      put_scale(out[1], p);
      *static_cast<std::uint8_t*>(out[2]) = static_cast<std::uint8_t>(p.zero_point());
      return;
    }
    case OpKind::linear_forward: {
      const auto& d = std::get<LinearDesc>(op.desc);
      const QuantizationParams p = t.linear_forward(
          d, f32(in[0]), static_cast<const std::int8_t*>(in[1]), d.has_bias ? f32(in[2]) : nullptr,
          static_cast<std::int8_t*>(out[0]), static_cast<float*>(out[1]));
      put_scale(out[2], p);
      return;
    }
    case OpKind::linear_backward: {
      const auto& d = std::get<LinearDesc>(op.desc);
      t.linear_backward(d, f32(in[0]), static_cast<const std::int8_t*>(in[1]),
                        linear_activation_params(in[2]), static_cast<const std::int8_t*>(in[3]),
                        static_cast<float*>(out[0]), static_cast<float*>(out[1]),
                        d.has_bias ? static_cast<float*>(out[2]) : nullptr);
      return;
    }
    case OpKind::conv_integer:
    case OpKind::qlinear_conv:
    case OpKind::conv_dequant: {
      const auto& d = std::get<ConvDesc>(op.desc);
      t.conv(op.op, d, in[0], in[1], d.bias != ConvBias::none ? in[2] : nullptr, out[0]);
      return;
    }
  }
  throw Error(ErrorCode::internal, "op table: unknown op kind");
}

}  // namespace qforge::op_table_detail
