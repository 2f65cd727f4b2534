// The quantized nn.Linear of the Triton seed (LinearDesc in op_desc.h).
//
// forward:  sx = max(max|X| / 127, 1e-8)        (float32)
//           Xq = quantize_value(X, sx, 0, -127, 127)
//           Y  = ((float(Xq Wq^T) * sx) * sw[n]) + bias[n]    (exact int32 dot, float32 epilogue)
// backward: dX = dY deq(Wq), dW = dY^T deq(Xq), db = column sums of dY, with deq() the float32
//           dequantize_value. Each sum runs in ascending index order and accumulates in double;
//           every product of two floats is exact in double, so the result is the float32
//           rounding of a nearly exact sum: an oracle for float32 backends whatever their
//           summation order (docs/NUMERICS.md states the tolerance).
#include "qforge/reference.h"
#include "reference/detail.h"

namespace qforge::reference {

void detail::validate_linear(const std::string& op, const LinearDesc& desc) {
  detail::require_non_negative(op, "m", desc.m);
  detail::require_non_negative(op, "n", desc.n);
  detail::require_non_negative(op, "k", desc.k);
  // Every operand within qforge's size limit before anything multiplies m, n and k: X, dX
  // [M, K] and W, dW [N, K] (float32 for the widest of each), Y, dY [M, N], bias, db [N].
  detail::checked_operand(op, "X [M, K]", {desc.m, desc.k}, sizeof(float));
  detail::checked_operand(op, "W [N, K]", {desc.n, desc.k}, sizeof(float));
  detail::checked_operand(op, "Y [M, N]", {desc.m, desc.n}, sizeof(float));
  detail::checked_operand(op, "bias [N]", {desc.n}, sizeof(float));
  const QuantizationParams& w = desc.w;
  const bool per_row = w.scheme().granularity == Granularity::per_channel && w.channel_axis(2) == 0;
  if (w.dtype() != DType::int8 || w.scheme().mapping != Mapping::symmetric ||
      !(w.scheme().granularity == Granularity::per_tensor || per_row))
    detail::fail(ErrorCode::invalid_argument, op,
                 "weight params " + w.to_string() +
                     "; expected int8 symmetric, per_tensor or per_channel(axis 0) of [N, K]");
  w.validate_for({desc.n, desc.k});
}

namespace {

float weight_scale(const LinearDesc& desc, std::int64_t n) {
  return desc.w.scale(
      desc.w.scheme().granularity == Granularity::per_tensor ? 0 : static_cast<std::size_t>(n));
}

}  // namespace

QuantizationParams linear_forward(const LinearDesc& desc, const float* x, const std::int8_t* wq,
                                  const float* bias, std::int8_t* xq, float* y) {
  const std::string op = "linear_forward";
  detail::validate_linear(op, desc);
  const std::int64_t M = desc.m, N = desc.n, K = desc.k;
  detail::require_data(op, "x", x, M * K);
  detail::require_data(op, "wq", wq, N * K);
  detail::require_data(op, "xq", xq, M * K);
  detail::require_data(op, "y", y, M * N);
  if (desc.has_bias) detail::require_data(op, "bias (has_bias is set)", bias, N);

  float amax = 0.0f;
  for (std::int64_t i = 0; i < M * K; ++i) {
    if (!std::isfinite(x[i]))
      detail::fail(ErrorCode::invalid_argument, op,
                   "x[" + std::to_string(i) + "] = " + detail::float_text(x[i]) +
                       "; expected finite inputs (the per-tensor scale comes from max|X|)");
    amax = std::max(amax, std::fabs(x[i]));
  }
  const auto& i8 = traits(DType::int8);
  const float sx = std::max(amax / static_cast<float>(i8.narrow_qmax), 1e-8f);
  for (std::int64_t i = 0; i < M * K; ++i)
    xq[i] = static_cast<std::int8_t>(quantize_value(x[i], sx, 0, i8.narrow_qmin, i8.narrow_qmax));

  for (std::int64_t m = 0; m < M; ++m)
    for (std::int64_t n = 0; n < N; ++n) {
      std::int64_t acc = 0;
      for (std::int64_t k = 0; k < K; ++k)
        acc += static_cast<std::int64_t>(xq[m * K + k]) * wq[n * K + k];
      const std::int32_t c = detail::checked_int32(op, acc, m, n);
      float v = (static_cast<float>(c) * sx) * weight_scale(desc, n);
      if (desc.has_bias) v = v + bias[n];
      y[m * N + n] = v;
    }
  return QuantizationParams::per_tensor_symmetric(DType::int8, sx);
}

void linear_backward(const LinearDesc& desc, const float* dy, const std::int8_t* xq,
                     const QuantizationParams& xq_params, const std::int8_t* wq, float* dx,
                     float* dw, float* db) {
  const std::string op = "linear_backward";
  detail::validate_linear(op, desc);
  if (xq_params.dtype() != DType::int8 || xq_params.scheme().mapping != Mapping::symmetric ||
      xq_params.scheme().granularity != Granularity::per_tensor)
    detail::fail(ErrorCode::invalid_argument, op,
                 "xq params " + xq_params.to_string() +
                     "; expected int8 per_tensor symmetric (what linear_forward returns)");
  const std::int64_t M = desc.m, N = desc.n, K = desc.k;
  detail::require_data(op, "dy", dy, M * N);
  detail::require_data(op, "xq", xq, M * K);
  detail::require_data(op, "wq", wq, N * K);
  detail::require_data(op, "dx", dx, M * K);
  detail::require_data(op, "dw", dw, N * K);
  if (desc.has_bias) detail::require_data(op, "db (has_bias is set)", db, N);
  const float sx = xq_params.scale();

  for (std::int64_t m = 0; m < M; ++m)
    for (std::int64_t k = 0; k < K; ++k) {
      double acc = 0.0;
      for (std::int64_t n = 0; n < N; ++n)
        acc += static_cast<double>(dy[m * N + n]) *
               dequantize_value(wq[n * K + k], weight_scale(desc, n), 0);
      dx[m * K + k] = static_cast<float>(acc);
    }
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t k = 0; k < K; ++k) {
      double acc = 0.0;
      for (std::int64_t m = 0; m < M; ++m)
        acc += static_cast<double>(dy[m * N + n]) * dequantize_value(xq[m * K + k], sx, 0);
      dw[n * K + k] = static_cast<float>(acc);
    }
  if (desc.has_bias)
    for (std::int64_t n = 0; n < N; ++n) {
      double acc = 0.0;
      for (std::int64_t m = 0; m < M; ++m) acc += dy[m * N + n];
      db[n] = static_cast<float>(acc);
    }
}

}  // namespace qforge::reference
