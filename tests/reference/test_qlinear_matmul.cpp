// qlinear_matmul: the ONNX QLinearMatMul example in both requantization modes, per-row and
// per-column scales against an independent requantization (with an int32 bias and a fused
// activation too), and errors.
#include <algorithm>
#include <cmath>
#include <limits>

#include "matmul_support.h"

namespace qforge {
namespace {

using reference::qlinear_matmul;

MatmulDesc onnx_desc() {
  MatmulDesc d =
      test::matmul(2, 3, 4, QuantizationParams::per_tensor_affine(DType::uint8, 0.0066f, 113),
                   QuantizationParams::per_tensor_affine(DType::uint8, 0.00705f, 114));
  d.y = QuantizationParams::per_tensor_affine(DType::uint8, 0.0107f, 118);
  return d;
}

const std::uint8_t kOnnxA[] = {208, 236, 0, 238, 3, 214, 255, 29};
const std::uint8_t kOnnxB[] = {152, 51, 244, 60, 26, 255, 0, 127, 246, 127, 254, 247};

TEST(QLinearMatmul, OnnxExample) {
  MatmulDesc d = onnx_desc();
  std::vector<std::uint8_t> y(6);
  qlinear_matmul(d, kOnnxA, kOnnxB, y.data());
  EXPECT_EQ(y, (std::vector<std::uint8_t>{168, 115, 255, 1, 66, 151}));
  d.requant_mode = RequantMode::fixed_point;
  qlinear_matmul(d, kOnnxA, kOnnxB, y.data());
  EXPECT_EQ(y, (std::vector<std::uint8_t>{168, 115, 255, 1, 66, 151}));
}

TEST(QLinearMatmul, RandomPerRowPerColumnMatchesIndependentRequantization) {
  QFORGE_SEEDED_RNG(rng);
  for (int iter = 0; iter < 400; ++iter) {
    auto r = test::random_matmul(rng, /*allow_block_b=*/false, 7);
    MatmulDesc& d = r.desc;
    const DType yt = iter % 2 ? DType::int8 : DType::uint8;
    const bool sym = iter % 5 == 0;
    d.y = sym ? QuantizationParams::per_tensor_symmetric(yt, test::uniform(rng, 0.01f, 1.0f))
              : QuantizationParams::per_tensor_affine(yt, test::uniform(rng, 0.01f, 1.0f),
                                                      static_cast<std::int32_t>(test::uniform_int(
                                                          rng, traits(yt).qmin, traits(yt).qmax)));
    d.requant_mode = iter % 3 ? RequantMode::float_multiplier : RequantMode::fixed_point;
    SCOPED_TRACE(describe(OpDesc{OpKind::qlinear_matmul, d}));
    std::vector<std::uint8_t> y(static_cast<std::size_t>(d.m * d.n));
    qlinear_matmul(d, r.a.data(), r.b.data(), y.data());
    for (std::int64_t m = 0; m < d.m; ++m)
      for (std::int64_t n = 0; n < d.n; ++n) {
        const float sa = d.a.scale(d.a.param_index(d.a_shape(), m * d.k));
        const std::int64_t bflat = d.b_layout == MatrixLayout::kn ? n : n * d.k;
        const float sb = d.b.scale(d.b.param_index(d.b_shape(), bflat));
        const float mult = (sa * sb) / d.y->scale();
        const auto c =
            static_cast<std::int32_t>(test::naive_dot(d, r.a.data(), r.b.data(), m, n, 0, d.k));
        std::int64_t q;
        if (d.requant_mode == RequantMode::float_multiplier)
          q = static_cast<std::int64_t>(std::nearbyint(static_cast<float>(c) * mult));
        else
          q = reference::multiply_by_quantized_multiplier(c, reference::quantize_multiplier(mult));
        q = std::clamp<std::int64_t>(q + d.y->zero_point(), d.y->qmin(), d.y->qmax());
        ASSERT_EQ(load_element(yt, y.data(), static_cast<std::size_t>(m * d.n + n)), q)
            << "(" << m << ", " << n << ") c=" << c << " mult=" << mult;
      }
  }
}

// The int32 bias enters C before requantization; the activation clamps the codes: against the
// same independent requantization of C + bias, then clamped to the activation's codes.
TEST(QLinearMatmul, BiasAndActivationMatchIndependentRequantization) {
  QFORGE_SEEDED_RNG(rng);
  const ConvActivation acts[] = {ConvActivation::none, ConvActivation::relu, ConvActivation::relu6,
                                 ConvActivation::clamp};
  for (int iter = 0; iter < 400; ++iter) {
    auto r = test::random_matmul(rng, /*allow_block_b=*/false, 7);
    MatmulDesc& d = r.desc;
    const DType yt = iter % 2 ? DType::int8 : DType::uint8;
    d.y = QuantizationParams::per_tensor_affine(
        yt, test::uniform(rng, 0.01f, 1.0f),
        static_cast<std::int32_t>(test::uniform_int(rng, traits(yt).qmin, traits(yt).qmax)));
    d.requant_mode = iter % 3 ? RequantMode::float_multiplier : RequantMode::fixed_point;
    d.has_bias = true;
    d.activation = acts[iter % 4];
    d.clamp_min = test::uniform(rng, -20.0f, 0.0f);
    d.clamp_max = test::uniform(rng, 0.0f, 20.0f);
    std::vector<std::int32_t> bias(static_cast<std::size_t>(d.n));
    for (auto& b : bias) b = static_cast<std::int32_t>(test::uniform_int(rng, -5000, 5000));
    SCOPED_TRACE(describe(OpDesc{OpKind::qlinear_matmul, d}));
    const auto code = [&](float v) {
      return reference::quantize_value(v, d.y->scale(), d.y->zero_point(), d.y->qmin(),
                                       d.y->qmax());
    };
    std::int64_t lo = d.y->qmin(), hi = d.y->qmax();
    if (d.activation == ConvActivation::relu) lo = code(0.0f);
    if (d.activation == ConvActivation::relu6) lo = code(0.0f), hi = code(6.0f);
    if (d.activation == ConvActivation::clamp) lo = code(d.clamp_min), hi = code(d.clamp_max);
    std::vector<std::uint8_t> y(static_cast<std::size_t>(d.m * d.n));
    qlinear_matmul(d, r.a.data(), r.b.data(), bias.data(), y.data());
    for (std::int64_t m = 0; m < d.m; ++m)
      for (std::int64_t n = 0; n < d.n; ++n) {
        const float sa = d.a.scale(d.a.param_index(d.a_shape(), m * d.k));
        const std::int64_t bflat = d.b_layout == MatrixLayout::kn ? n : n * d.k;
        const float sb = d.b.scale(d.b.param_index(d.b_shape(), bflat));
        const float mult = (sa * sb) / d.y->scale();
        const auto c =
            static_cast<std::int32_t>(test::naive_dot(d, r.a.data(), r.b.data(), m, n, 0, d.k) +
                                      bias[static_cast<std::size_t>(n)]);
        std::int64_t q;
        if (d.requant_mode == RequantMode::float_multiplier)
          q = static_cast<std::int64_t>(std::nearbyint(static_cast<float>(c) * mult));
        else
          q = reference::multiply_by_quantized_multiplier(c, reference::quantize_multiplier(mult));
        q = std::clamp<std::int64_t>(q + d.y->zero_point(), d.y->qmin(), d.y->qmax());
        q = std::clamp<std::int64_t>(q, lo, hi);
        ASSERT_EQ(load_element(yt, y.data(), static_cast<std::size_t>(m * d.n + n)), q)
            << "(" << m << ", " << n << ") c=" << c << " mult=" << mult;
      }
  }
}

TEST(QLinearMatmul, BiasAndActivationErrors) {
  MatmulDesc d = onnx_desc();
  std::vector<std::uint8_t> y(6);
  const std::int32_t bias[] = {1, 2, 3};
  d.has_bias = true;
  EXPECT_QFORGE_ERROR(qlinear_matmul(d, kOnnxA, kOnnxB, y.data()), ErrorCode::invalid_argument,
                      "bias (has_bias is set)");
  const std::int32_t huge[] = {std::numeric_limits<std::int32_t>::max(), 0, 0};
  EXPECT_QFORGE_ERROR(qlinear_matmul(d, kOnnxA, kOnnxB, huge, y.data()), ErrorCode::overflow,
                      "C[0, 0] + bias[n] = ");
  d.activation = ConvActivation::clamp;
  d.clamp_min = 1.0f;
  d.clamp_max = 0.0f;
  EXPECT_QFORGE_ERROR(qlinear_matmul(d, kOnnxA, kOnnxB, bias, y.data()),
                      ErrorCode::invalid_argument,
                      "expected finite bounds with clamp_min <= clamp_max");
  MatmulDesc mi = onnx_desc();
  mi.activation = ConvActivation::relu;
  std::vector<std::int32_t> c(6);
  EXPECT_QFORGE_ERROR(reference::matmul_integer(mi, kOnnxA, kOnnxB, c.data()),
                      ErrorCode::invalid_argument, "only qlinear_matmul clamps its output");
}

TEST(QLinearMatmul, Errors) {
  MatmulDesc d = onnx_desc();
  std::vector<std::uint8_t> y(6);
  d.y.reset();
  EXPECT_QFORGE_ERROR(qlinear_matmul(d, kOnnxA, kOnnxB, y.data()), ErrorCode::invalid_argument,
                      "no output params");
  d.y = QuantizationParams::per_tensor_affine(DType::int16, 0.1f, 0);
  EXPECT_QFORGE_ERROR(qlinear_matmul(d, kOnnxA, kOnnxB, y.data()), ErrorCode::invalid_argument,
                      "expected per-tensor affine or symmetric int8 or uint8");
  d.y = QuantizationParams::per_channel(DType::uint8, Mapping::affine, 1, {0.1f, 0.1f, 0.1f});
  EXPECT_QFORGE_ERROR(qlinear_matmul(d, kOnnxA, kOnnxB, y.data()), ErrorCode::invalid_argument,
                      "output params uint8 per_channel");
  d = onnx_desc();
  d.b_layout = MatrixLayout::nk;
  d.b = QuantizationParams::blockwise(DType::uint8, Mapping::affine, 2, {1, 1, 1, 1, 1, 1});
  EXPECT_QFORGE_ERROR(qlinear_matmul(d, kOnnxA, kOnnxB, y.data()), ErrorCode::invalid_argument,
                      "block-wise partial sums cannot be requantized");
  d = onnx_desc();
  d.a = QuantizationParams::per_tensor_affine(DType::uint8, 1e30f, 113);
  d.b = QuantizationParams::per_tensor_affine(DType::uint8, 1e30f, 114);
  EXPECT_QFORGE_ERROR(qlinear_matmul(d, kOnnxA, kOnnxB, y.data()), ErrorCode::invalid_argument,
                      "is not finite at (0, 0)");
}

}  // namespace
}  // namespace qforge
