// Weight-only matmul: float activations, quantized weights, float output (ONNX Runtime's
// MatMulNBits). The reference takes every product and the sum in double so that it is the
// most accurate value a float32 kernel can be compared against; backends accumulate in float32
// and are held to the NMSE bound of docs/NUMERICS.md.
#include <string>

#include "qforge/reference.h"
#include "reference/detail.h"

namespace qforge::reference {
namespace detail {

void validate_matmul_weight_only(const std::string& op, const MatmulDesc& desc) {
  require_non_negative(op, "m", desc.m);
  require_non_negative(op, "n", desc.n);
  require_non_negative(op, "k", desc.k);
  // Before anything multiplies them: A and Y within qforge's size limit.
  checked_operand(op, "A [M, K] (float32)", {desc.m, desc.k}, sizeof(float));
  checked_operand(op, "output [M, N] (float32)", {desc.m, desc.n}, sizeof(float));
  if (desc.out_type != FloatType::f32)
    fail(ErrorCode::invalid_argument, op,
         std::string("out_type is ") + name(desc.out_type) + "; expected f32");
  const DType t = desc.b.dtype();
  if (t != DType::int4 && t != DType::uint4 && t != DType::int8 && t != DType::uint8)
    fail(ErrorCode::invalid_argument, op,
         "B (" + desc.b.to_string() + ") has dtype " + std::string(qforge::name(t)) +
             "; expected int4, uint4, int8 or uint8");
  validate_matmul_b(op, desc, /*allow_block_b=*/true);
  validate_matmul_activation(op, desc);
}

}  // namespace detail

void matmul_weight_only(const MatmulDesc& desc, const float* a, const void* b, const float* bias,
                        float* y) {
  const std::string op = "matmul_weight_only";
  // Through check_descriptor, so that messages of the params' own checks get the op's prefix too.
  check_descriptor(OpKind::matmul_weight_only, desc);
  // validate_matmul_weight_only bounded every operand (checked_size.h): these are exact.
  const std::int64_t M = desc.m, N = desc.n, K = desc.k;
  detail::require_data(op, "a", a, M * K);
  detail::require_data(op, "b", b, N * K);
  detail::require_data(op, "y", y, M * N);
  if (desc.has_bias) detail::require_data(op, "bias (has_bias is set)", bias, N);
  // W as [N, K], each weight dequantized exactly as dequantize() does: float(q - z) * s.
  std::vector<float> w(static_cast<std::size_t>(N * K));
  const bool kn = desc.b_layout == MatrixLayout::kn;
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t k = 0; k < K; ++k) {
      const std::size_t pair = detail::b_pair(desc.b, n, k, K);
      const auto src = static_cast<std::size_t>(kn ? k * N + n : n * K + k);
      const std::int32_t q = load_element(desc.b.dtype(), b, src) - desc.b.zero_point(pair);
      w[static_cast<std::size_t>(n * K + k)] = static_cast<float>(q) * desc.b.scale(pair);
    }
  for (std::int64_t m = 0; m < M; ++m) {
    const float* am = a + m * K;
    for (std::int64_t n = 0; n < N; ++n) {
      const float* wn = w.data() + n * K;
      double acc = 0.0;
      for (std::int64_t k = 0; k < K; ++k)
        acc += static_cast<double>(am[k]) * static_cast<double>(wn[k]);
      if (desc.has_bias) acc += static_cast<double>(bias[n]);
      y[m * N + n] = static_cast<float>(acc);
    }
  }
}

}  // namespace qforge::reference
