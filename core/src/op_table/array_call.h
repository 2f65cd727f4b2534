// The reference with the method names of QuantizationOps, so that one call per kind
// (op_table/kinds/*.cpp) serves a backend and the reference alike, and the conversion of
// linear_forward's activation scale between an array and QuantizationParams.
#pragma once

#include <cstdint>
#include <cstring>

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
  void qlinear_matmul_bias(const MatmulDesc& d, const void* a, const void* b,
                           const std::int32_t* bias, void* y) {
    reference::qlinear_matmul(d, a, b, bias, y);
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

}  // namespace qforge::op_table_detail
