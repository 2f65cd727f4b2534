// The int8 softmax's fixed-point pieces (the exported kernel, which run_integer also executes)
// against double precision, and the whole op against a double softmax of the quantized input.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include "onnx_builder.h"
#include "qforge/error.h"
#include "qforge/model/integer_program.h"
#include "qforge/model/onnx_import.h"
#include "qforge_nn_int8.h"

namespace qforge::model {
namespace {

std::uint32_t fresh_seed() { return std::random_device{}(); }

constexpr double kQ31 = 2147483648.0;  // 2^31
constexpr double kQ26 = 67108864.0;    // 2^26: Q5.26

// exp on [-32, 0]: Q5.26 in, Q0.31 out, within 2^-21 absolute of exp in double. The fourth-order
// Taylor polynomial on each quarter [-1/4, 0) leaves up to (1/8)^5 / 120 = 2^-21.9 (just below
// 0); the Q0.31 roundings add a few units of 2^-31.
TEST(SoftmaxFixedPoint, ExpOnNegativeValuesIsNearExp) {
  const std::uint32_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  std::uniform_int_distribution<std::int32_t> any(std::numeric_limits<std::int32_t>::min(), 0);
  std::uniform_int_distribution<std::int32_t> near_zero(-(std::int32_t{1} << 28), 0);
  std::vector<std::int32_t> a = {
      0, -1, -(1 << 24), -(1 << 24) - 1, -(1 << 26), std::numeric_limits<std::int32_t>::min()};
  for (int i = 0; i < 100000; ++i) a.push_back(i % 2 ? any(rng) : near_zero(rng));
  double worst = 0.0;
  for (const std::int32_t v : a) {
    const double expected = std::exp(v / kQ26);
    const double actual = qf_exp_on_negative_values(v) / kQ31;
    worst = std::max(worst, std::abs(actual - expected));
    ASSERT_NEAR(actual, expected, std::ldexp(1.0, -21)) << "a = " << v << " (Q5.26)";
  }
  std::cout << "exp_on_negative_values: worst absolute error 2^" << std::log2(worst) << "\n";
  EXPECT_EQ(qf_exp_on_negative_values(0), std::numeric_limits<std::int32_t>::max());
}

// 1 / (1 + x) on [0, 1): Q0.31 in and out, within 2^-27 of double (three Newton-Raphson steps
// converge far below that; the rest is rounding, measured worst about 2^-28.3).
TEST(SoftmaxFixedPoint, OneOverOnePlusXIsNearTheReciprocal) {
  const std::uint32_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  std::uniform_int_distribution<std::int32_t> any(0, std::numeric_limits<std::int32_t>::max());
  std::vector<std::int32_t> a = {0, 1, 1 << 30, std::numeric_limits<std::int32_t>::max()};
  for (int i = 0; i < 100000; ++i) a.push_back(any(rng));
  double worst = 0.0;
  for (const std::int32_t v : a) {
    const double expected = 1.0 / (1.0 + v / kQ31);
    const double actual = qf_one_over_one_plus_x_for_x_in_0_1(v) / kQ31;
    worst = std::max(worst, std::abs(actual - expected));
    ASSERT_NEAR(actual, expected, std::ldexp(1.0, -27)) << "x = " << v << " (Q0.31)";
  }
  std::cout << "one_over_one_plus_x: worst absolute error 2^" << std::log2(worst) << "\n";
}

Graph softmax_graph(std::int64_t depth, std::int64_t opset) {
  testing::OnnxBuilder b(opset);
  b.input("x", onnx::TensorProto::FLOAT, {1, depth});
  b.node("Softmax", {"x"}, {"y"}, "probabilities");
  b.output("y", onnx::TensorProto::FLOAT, {1, depth});
  return import_onnx_bytes(b.bytes(), "test");
}

TensorMap batch_of(std::mt19937& rng, std::int64_t depth, float range) {
  std::uniform_real_distribution<float> d(-range, range);
  std::vector<float> v(static_cast<std::size_t>(depth));
  for (float& x : v) x = d(rng);
  TensorMap m;
  m.emplace("x", Tensor::from_values<float>({1, depth}, v));
  return m;
}

// The whole op (lowering and kernel) against softmax in double of the quantized input: every
// output within one step (1/256) of the correctly rounded probability. The input scales range
// from fine (2^-9) to coarse (a range of 60 over 256 codes).
TEST(SoftmaxFixedPoint, SoftmaxIsWithinOneStepOfDoubleSoftmax) {
  const std::uint32_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  std::uniform_int_distribution<std::int64_t> depths(1, 300);
  std::uniform_real_distribution<float> ranges(0.25f, 30.0f);
  for (int graph = 0; graph < 40; ++graph) {
    const std::int64_t depth = depths(rng);
    const float range = ranges(rng);
    const IntegerProgram p = lower_to_integer(softmax_graph(depth, graph % 2 ? 13 : 11),
                                              std::vector<TensorMap>{batch_of(rng, depth, range)});
    const IntegerTensor& in = p.tensors.at(0);
    ASSERT_EQ(p.output().scale, 1.0f / 256.0f);
    ASSERT_EQ(p.output().zero_point, -128);
    for (int sample = 0; sample < 20; ++sample) {
      const Tensor x = batch_of(rng, depth, range * 1.2f).at("x");
      const auto q = quantize_input(p, x.values<float>());
      const auto y = run_integer_values(p, x.values<float>());
      const std::int32_t max = *std::max_element(q.begin(), q.end());
      double sum = 0.0;
      for (const std::int32_t v : q) sum += std::exp((v - max) * static_cast<double>(in.scale));
      for (std::size_t i = 0; i < q.size(); ++i) {
        const double prob = std::exp((q[i] - max) * static_cast<double>(in.scale)) / sum;
        const double expected = std::clamp(std::round(prob * 256.0) - 128.0, -128.0, 127.0);
        ASSERT_LE(std::abs(y[i] - expected), 1.0)
            << "depth " << depth << ", input scale " << in.scale << ", element " << i
            << ": probability " << prob;
      }
    }
  }
}

// TFLite's PreprocessSoftmaxScaling for a power-of-two scale: 2^-4 * 2^26 = 2^22 is the Q31
// multiplier 2^30 with a left shift of 23, and the radius floor(31 * 2^26 / 2^23) = 248.
TEST(SoftmaxFixedPoint, InputMultiplierAndRadiusAreTfLites) {
  const Graph g = softmax_graph(4, 13);
  TensorMap m;
  // Calibrated to [-8, 7.9375]: int8 affine scale 15.9375 / 255 = 2^-4.
  m.emplace("x", Tensor::from_values<float>({1, 4}, std::vector<float>{-8.0f, 7.9375f, 0, 1}));
  const IntegerProgram p = lower_to_integer(g, std::vector<TensorMap>{m});
  ASSERT_EQ(p.tensors.at(0).scale, 0.0625f);
  const IntegerOp& op = p.ops.back();
  ASSERT_EQ(op.kind, IntegerOpKind::softmax);
  EXPECT_EQ(op.multipliers.at(0).multiplier, 1 << 30);
  EXPECT_EQ(op.multipliers.at(0).shift, 23);
  EXPECT_EQ(op.diff_min, -248);
  EXPECT_EQ(op.rows, 1);
  EXPECT_EQ(op.depth, 4);
}

std::string refusal(const Graph& g, DType activations, std::int64_t depth) {
  LowerOptions o;
  o.activations = activations;
  std::mt19937 rng(1);
  try {
    lower_to_integer(g, std::vector<TensorMap>{batch_of(rng, depth, 1.0f)}, o);
  } catch (const Error& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST(SoftmaxFixedPoint, UnsupportedSoftmaxesAreRefusedByName) {
  EXPECT_NE(refusal(softmax_graph(8, 13), DType::int16, 8)
                .find("Softmax 'probabilities': Softmax is supported in int8 programs only"),
            std::string::npos);
  EXPECT_NE(refusal(softmax_graph(5000, 13), DType::int8, 5000).find("at most 4095"),
            std::string::npos);
  testing::OnnxBuilder b(13);
  b.input("x", onnx::TensorProto::FLOAT, {1, 4});
  b.node("Softmax", {"x"}, {"p"}, "inner");
  b.initializer("w", {4, 3}, std::vector<float>(12, 0.5f));
  b.node("MatMul", {"p", "w"}, {"y"}, "fc");
  b.output("y", onnx::TensorProto::FLOAT, {1, 3});
  EXPECT_NE(refusal(import_onnx_bytes(b.bytes(), "test"), DType::int8, 4)
                .find("Softmax 'inner': Softmax is supported only as the graph's last op"),
            std::string::npos);
}

}  // namespace
}  // namespace qforge::model
