// A dynamic MatMul whose input a fused chain wrote (here BERT's GELU with its bias Add) takes
// that chain's range (executor.h, ValueRange) instead of its own min/max pass: the same params,
// so the same codes and outputs as reference dynamic_quantize_linear + matmul_dequant on the
// input bit for bit, over random shapes and scales; a sibling MatMul on the graph input (no
// range) is checked the same way. Infinite values still reach dynamic_quantize_linear's error.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "fixtures.h"
#include "qforge/error.h"
#include "qforge/reference.h"

namespace qforge::model {
namespace {

using namespace qtest;

std::int64_t pick(std::mt19937_64& g, std::int64_t lo, std::int64_t hi) {
  return std::uniform_int_distribution<std::int64_t>(lo, hi)(g);
}

// x [B, T, K] -> GELU(x + b1) "gelu" -> MatMul "after_gelu" -> y; x -> MatMul "on_input" -> z.
Graph gelu_matmul(std::mt19937_64& g, std::int64_t b, std::int64_t t, std::int64_t k,
                  std::int64_t n) {
  OnnxBuilder m(17);
  m.input("x", F, {b, t, k});
  m.output("y", F, {b, t, n});
  m.output("z", F, {b, t, n});
  m.initializer("b1", {k}, weights(g, 4, k));
  m.initializer("W", {k, n}, weights(g, k, k * n));
  m.initializer("W2", {k, n}, weights(g, k, k * n));
  m.initializer("sqrt2", {}, {1.4142135f});
  m.initializer("one", {}, {1.0f});
  m.initializer("half", {}, {0.5f});
  m.node("Add", {"x", "b1"}, {"v"});
  m.node("Div", {"v", "sqrt2"}, {"d"});
  m.node("Erf", {"d"}, {"erf"});
  m.node("Add", {"erf", "one"}, {"e1"});
  m.node("Mul", {"v", "half"}, {"vh"});
  m.node("Mul", {"vh", "e1"}, {"gelu"});
  m.node("MatMul", {"gelu", "W"}, {"y"}, "after_gelu");
  m.node("MatMul", {"x", "W2"}, {"z"}, "on_input");
  return import_onnx_bytes(m.bytes(), "producer_range");
}

// dynamic_quantize_linear of x, then matmul_dequant.
std::vector<float> reference_layer(const QuantizedLayerInfo& l, const Tensor& x) {
  const std::int64_t m = x.size() / l.k;
  std::vector<std::uint8_t> aq(static_cast<std::size_t>(m * l.k));
  const QuantizationParams a = reference::dynamic_quantize_linear(
      DynamicQuantizeDesc{{m, l.k}}, x.values<float>().data(), aq.data());
  const MatmulDesc desc{
      .m = m, .n = l.n, .k = l.k, .a = a, .b = l.b_params, .b_layout = l.b_layout};
  std::vector<float> y(static_cast<std::size_t>(m * l.n));
  reference::matmul_dequant(desc, aq.data(), l.b_codes.data(), nullptr, y.data());
  return y;
}

void expect_same(std::span<const float> got, const std::vector<float>& want,
                 const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  EXPECT_EQ(0, std::memcmp(got.data(), want.data(), want.size() * sizeof(float)))
      << what << " differs from the reference";
}

class ProducerRange : public ::testing::TestWithParam<std::string> {};

TEST_P(ProducerRange, DynamicMatMulAfterAFusedChainEqualsTheReference) {
  SCOPED_TRACE(test::seed_text());
  auto acc = accelerator(GetParam());
  if (!acc) GTEST_SKIP() << GetParam() << " did not load on this machine";
  auto g = test::rng(1903);
  for (int round = 0; round < 4; ++round) {
    const std::int64_t b = pick(g, 1, 3), t = pick(g, 1, 40), k = pick(g, 1, 70),
                       n = pick(g, 1, 33);
    SCOPED_TRACE("b " + std::to_string(b) + " t " + std::to_string(t) + " k " + std::to_string(k) +
                 " n " + std::to_string(n));
    const Graph graph = gelu_matmul(g, b, t, k, n);
    Prepared p = prepare(graph, matmul_recipe(dynamic_layer()), {});
    QuantizedModel q(*p.float_model, p.recipe, p.resolution, p.calibration, *acc);
    ASSERT_EQ(q.layers().size(), 2u);
    for (const float scale : {0.1f, 1.0f, 30.0f}) {
      // Shifted: some batches have GELU inputs of one sign only (the range's 0 end matters).
      const float shift = static_cast<float>(pick(g, -1, 1)) * 3.0f * scale;
      Tensor x = test::random_tensor(g, {b, t, k}, -scale + shift, scale + shift);
      const TensorMap batch = {{"x", x}};
      // The layers run prepared plans; the one per-call op is the quantize of the GELU's output
      // with the params of its range (the MatMul on x quantizes through its own plan).
      const std::uint64_t before = acc->stats().dispatches;
      const TensorMap got = q.run(batch);
      EXPECT_EQ(acc->stats().dispatches - before, 1u) << "the range path did not run";
      // The GELU's output as the float nodes compute it (kept: the chain runs node by node,
      // with the same bits).
      const Tensor gelu = p.float_model->run(batch, {"gelu"}).at("gelu");
      for (const QuantizedLayerInfo& l : q.layers()) {
        const bool after_gelu = l.name == "after_gelu";
        expect_same(got.at(after_gelu ? "y" : "z").values<float>(),
                    reference_layer(l, after_gelu ? gelu : x), l.name);
      }
    }
  }
}

TEST_P(ProducerRange, AnInfiniteValueStillFailsAsDynamicQuantizationDoes) {
  auto acc = accelerator(GetParam());
  if (!acc) GTEST_SKIP() << GetParam() << " did not load on this machine";
  auto g = test::rng(1904);
  const Graph graph = gelu_matmul(g, 1, 4, 8, 4);
  Prepared p = prepare(graph, matmul_recipe(dynamic_layer()), {});
  QuantizedModel q(*p.float_model, p.recipe, p.resolution, p.calibration, *acc);
  Tensor x = test::random_tensor(g, {1, 4, 8}, -1, 1);
  x.values<float>()[5] = std::numeric_limits<float>::infinity();  // GELU(inf) = inf
  EXPECT_THROW(q.run({{"x", x}}), qforge::Error);
}

INSTANTIATE_TEST_SUITE_P(Plugins, ProducerRange, ::testing::Values("cpu_scalar", "cpu_x86"));

}  // namespace
}  // namespace qforge::model
