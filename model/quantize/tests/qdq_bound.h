// How far two runs of one quantized MatMul/Gemm layer may differ when they share the weight
// codes but evaluate the float parts (A before quantization, the dequantized product) in
// different orders: qforge's QuantizedModel and the exported QDQ model (in qforge's float
// executor or in ONNX Runtime). docs/MODEL.md, "The ONNX Runtime check", derives it:
//
//   y[m,n] = sa * sb[n] * sum_k (qa[m,k] - za) (qb[k,n] - zb[n]) + bias[n]
//
// so with each run's own A params (dynamic layers compute them from slightly different inputs)
//   y_x - y_q = sa_x sb[n] sum_k ((qa_x - za_x) - (qa_q - za_q)) (qb - zb)     (codes that moved)
//             + (sa_x - sa_q) sb[n] sum_k (qa_q - za_q) (qb - zb)               (scale that moved)
// exactly, plus the float rounding of either evaluation, which is bounded by
// one output quantization step sa * sb[n] and 2^-20 of the sum of |terms| and |bias| (the
// float32 rounding of a dot product of this length in any order, with margin).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "qforge/model/quantized_model.h"

namespace qforge::model::qtest {

struct LayerDiff {
  std::size_t codes = 0;      // A codes compared
  std::size_t flipped = 0;    // A codes that differ
  int max_code_diff = 0;      // largest |qa_x - qa_q|
  double worst_ratio = 0.0;   // max |y_x - y_q| / bound over the outputs (<= 1 passes)
  std::string worst;          // where that was, for messages
  bool params_moved = false;  // dynamic layers: the runs computed different A params
};

// Weight code (k, n) of the layer as a signed integer minus its zero point.
inline std::int32_t weight_term(const QuantizedLayerInfo& l, std::int64_t k, std::int64_t n) {
  const std::size_t i =
      static_cast<std::size_t>(l.b_layout == MatrixLayout::kn ? k * l.n + n : n * l.k + k);
  const auto byte = l.b_codes[i];
  const std::int32_t q = l.b_params.dtype() == DType::int8
                             ? static_cast<std::int32_t>(static_cast<std::int8_t>(byte))
                             : static_cast<std::int32_t>(static_cast<std::uint8_t>(byte));
  const auto zps = l.b_params.zero_points();
  const std::int32_t z = zps.size() == 1 ? zps[0] : zps[static_cast<std::size_t>(n)];
  return q - z;
}

// A's codes (M x K, row-major) of one run with the scale and zero point it used.
struct ActivationCodes {
  std::vector<std::int32_t> q;
  float scale = 1;
  std::int32_t zero_point = 0;
};

// a_q / a_x: A's codes from each run; y_q / y_x: the layer's outputs (M x N).
inline LayerDiff compare_layer(const QuantizedLayerInfo& l, const ActivationCodes& a_q,
                               const ActivationCodes& a_x, std::span<const float> y_q,
                               std::span<const float> y_x) {
  const std::span<const std::int32_t> qa_q = a_q.q, qa_x = a_x.q;
  LayerDiff d;
  d.codes = qa_q.size();
  const std::int64_t m_rows = static_cast<std::int64_t>(qa_q.size()) / l.k;
  for (std::size_t i = 0; i < qa_q.size(); ++i)
    if (qa_q[i] != qa_x[i]) {
      ++d.flipped;
      d.max_code_diff = std::max(d.max_code_diff, std::abs(qa_q[i] - qa_x[i]));
    }
  if (a_q.scale != a_x.scale || a_q.zero_point != a_x.zero_point) d.params_moved = true;
  const auto sb = l.b_params.scales();
  for (std::int64_t m = 0; m < m_rows; ++m)
    for (std::int64_t n = 0; n < l.n; ++n) {
      double moved = 0, terms = 0;
      for (std::int64_t k = 0; k < l.k; ++k) {
        const std::size_t a = static_cast<std::size_t>(m * l.k + k);
        const double w = std::abs(weight_term(l, k, n));
        moved += std::abs((qa_x[a] - a_x.zero_point) - (qa_q[a] - a_q.zero_point)) * w;
        terms += std::abs(qa_q[a] - a_q.zero_point) * w;
      }
      const double sbn = sb.size() == 1 ? sb[0] : sb[static_cast<std::size_t>(n)];
      const double step = double(a_x.scale) * sbn;
      const double bias = l.bias.empty() ? 0.0 : std::abs(l.bias[static_cast<std::size_t>(n)]);
      const double bound = step * (1.0 + moved) +
                           std::abs(double(a_x.scale) - a_q.scale) * sbn * terms +
                           std::ldexp(step * terms + bias, -20);
      const std::size_t i = static_cast<std::size_t>(m * l.n + n);
      const double ratio = std::abs(double(y_x[i]) - y_q[i]) / bound;
      if (ratio > d.worst_ratio) {
        d.worst_ratio = ratio;
        d.worst = "[" + std::to_string(m) + ", " + std::to_string(n) +
                  "]: " + std::to_string(y_q[i]) + " vs " + std::to_string(y_x[i]) + ", bound " +
                  std::to_string(bound);
      }
    }
  return d;
}

}  // namespace qforge::model::qtest
