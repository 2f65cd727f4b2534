// A dynamic MatMul's bias Add (QuantizedLayerInfo::bias_add): the Add that alone reads the
// MatMul's output, with a constant bias broadcasting as [N] over the last axis, goes into
// matmul_dequant's epilogue and the Add node computes nothing. The folded result equals the
// reference (dynamic_quantize_linear, then matmul_dequant with the bias) bit for bit, and the
// unfolded computation (matmul_dequant, then the float Add) within float rounding; every other
// Add stays a node of its own, and the QDQ export still writes MatMul and Add.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "fixtures.h"
#include "qforge/model/qdq_export.h"
#include "qforge/reference.h"

namespace qforge::model {
namespace {

using namespace qtest;

constexpr std::int64_t kBatch = 2, kTokens = 5, kIn = 24, kOut = 16;

enum class Case {
  bias_n,          // Add(m, b[N]): folds
  bias_first_1n,   // Add(b[1, 1, N], m): folds
  read_twice,      // m also read by a second Add: stays
  variable_other,  // Add(m, z) with z a graph input: stays
  bias_mn,         // Add(m, b[T, N]): stays
};

struct Built {
  Graph graph;
  std::vector<float> bias;  // the Add's constant, as stored
};

// x [B, T, K] -> MatMul "mm" (W) -> m -> Add "add" -> y, per `c`.
Built bias_graph(std::mt19937_64& g, Case c) {
  OnnxBuilder b(17);
  b.input("x", F, {kBatch, kTokens, kIn});
  if (c == Case::variable_other) b.input("z", F, {kOut});
  b.output("y", F, {kBatch, kTokens, kOut});
  if (c == Case::read_twice) b.output("y2", F, {kBatch, kTokens, kOut});
  b.initializer("W", {kIn, kOut}, weights(g, kIn, kIn * kOut));
  Built out;
  const std::int64_t rows = c == Case::bias_mn ? kTokens : 1;
  out.bias = weights(g, 4, rows * kOut);
  if (c == Case::bias_first_1n) b.initializer("b", {1, 1, kOut}, out.bias);
  else if (c == Case::bias_mn) b.initializer("b", {kTokens, kOut}, out.bias);
  else b.initializer("b", {kOut}, out.bias);
  b.node("MatMul", {"x", "W"}, {"m"}, "mm");
  if (c == Case::bias_first_1n) b.node("Add", {"b", "m"}, {"y"}, "add");
  else b.node("Add", {"m", c == Case::variable_other ? "z" : "b"}, {"y"}, "add");
  if (c == Case::read_twice) b.node("Add", {"m", "m"}, {"y2"}, "add_twice");
  out.graph = import_onnx_bytes(b.bytes(), "bias_fold");
  return out;
}

TensorMap batch_for(std::mt19937_64& g, const Graph& graph, float scale) {
  TensorMap m;
  for (const ValueInfo& in : graph.inputs) {
    Tensor t = test::random_tensor(g, in.shape());
    for (float& v : t.values<float>()) v *= scale;
    m.emplace(in.name, std::move(t));
  }
  return m;
}

// dynamic_quantize_linear of x, then matmul_dequant with `bias` (nullptr: none).
std::vector<float> reference_layer(const QuantizedLayerInfo& l, const Tensor& x,
                                   const float* bias) {
  const std::int64_t m = x.size() / l.k;
  std::vector<std::uint8_t> aq(static_cast<std::size_t>(m * l.k));
  const QuantizationParams a = reference::dynamic_quantize_linear(
      DynamicQuantizeDesc{{m, l.k}}, x.values<float>().data(), aq.data());
  const MatmulDesc desc{.m = m,
                        .n = l.n,
                        .k = l.k,
                        .a = a,
                        .b = l.b_params,
                        .b_layout = l.b_layout,
                        .has_bias = bias != nullptr};
  std::vector<float> y(static_cast<std::size_t>(m * l.n));
  reference::matmul_dequant(desc, aq.data(), l.b_codes.data(), bias, y.data());
  return y;
}

class BiasFold : public ::testing::TestWithParam<std::string> {};

TEST_P(BiasFold, AConstantBiasOverTheLastAxisGoesIntoTheEpilogue) {
  SCOPED_TRACE(test::seed_text());
  auto acc = accelerator(GetParam());
  if (!acc) GTEST_SKIP() << GetParam() << " did not load on this machine";
  auto g = test::rng(71);
  for (Case c : {Case::bias_n, Case::bias_first_1n}) {
    SCOPED_TRACE(c == Case::bias_n ? "Add(m, b[N])" : "Add(b[1, 1, N], m)");
    const Built built = bias_graph(g, c);
    Prepared p = prepare(built.graph, matmul_recipe(dynamic_layer()), {});
    QuantizedModel q(*p.float_model, p.recipe, p.resolution, p.calibration, *acc);
    ASSERT_EQ(q.layers().size(), 1u);
    const QuantizedLayerInfo& l = q.layers()[0];
    EXPECT_EQ(l.name, "mm");
    EXPECT_EQ(l.bias_add, 1);
    EXPECT_EQ(l.output, "y");
    EXPECT_EQ(l.bias, built.bias);
    for (float scale : {1.0f, 8.0f}) {
      const TensorMap batch = batch_for(g, built.graph, scale);
      const auto got = q.run(batch).at("y").values<float>();
      const Tensor& x = batch.at("x");
      const std::vector<float> folded = reference_layer(l, x, built.bias.data());
      ASSERT_EQ(got.size(), folded.size());
      EXPECT_EQ(0, std::memcmp(got.data(), folded.data(), folded.size() * sizeof(float)));
      // The unfolded computation: matmul_dequant, then the Add in float32.
      std::vector<float> unfolded = reference_layer(l, x, nullptr);
      for (std::size_t i = 0; i < unfolded.size(); ++i)
        unfolded[i] += built.bias[i % static_cast<std::size_t>(kOut)];
      for (std::size_t i = 0; i < got.size(); ++i)
        EXPECT_NEAR(got[i], unfolded[i], 1e-5f * (1.0f + std::abs(unfolded[i]))) << "at " << i;
      EXPECT_GT(sqnr_db(p.float_model->run(batch).at("y"), q.run(batch).at("y")), 25.0);
    }
    // The QDQ export keeps the graph's MatMul and Add, the Add reading the float bias.
    const Graph qdq = qdq_graph(q);
    std::size_t adds = 0;
    for (const Node& n : qdq.nodes) {
      if (n.op_type == "MatMul") {
        EXPECT_EQ(n.inputs.size(), 2u);
      }
      if (n.op_type != "Add") continue;
      ++adds;
      const Tensor* b = qdq.initializer(n.input(c == Case::bias_first_1n ? 0 : 1));
      ASSERT_TRUE(b);
      const auto v = b->values<float>();
      EXPECT_EQ(std::vector<float>(v.begin(), v.end()), built.bias);
    }
    EXPECT_EQ(adds, 1u);
  }
}

TEST_P(BiasFold, OtherAddsStayNodesOfTheirOwn) {
  SCOPED_TRACE(test::seed_text());
  auto acc = accelerator(GetParam());
  if (!acc) GTEST_SKIP() << GetParam() << " did not load on this machine";
  auto g = test::rng(72);
  for (Case c : {Case::read_twice, Case::variable_other, Case::bias_mn}) {
    SCOPED_TRACE(c == Case::read_twice       ? "MatMul output read twice"
                 : c == Case::variable_other ? "non-constant Add input"
                                             : "bias [T, N]");
    const Built built = bias_graph(g, c);
    Prepared p = prepare(built.graph, matmul_recipe(dynamic_layer()), {});
    QuantizedModel q(*p.float_model, p.recipe, p.resolution, p.calibration, *acc);
    ASSERT_EQ(q.layers().size(), 1u);
    const QuantizedLayerInfo& l = q.layers()[0];
    EXPECT_EQ(l.bias_add, -1);
    EXPECT_TRUE(l.bias.empty());
    EXPECT_EQ(l.output, "m");
    const TensorMap batch = batch_for(g, built.graph, 1.0f);
    const TensorMap got = q.run(batch, {"m"});
    // The layer without bias, bit for bit, and the Add run by the float executor.
    const std::vector<float> layer = reference_layer(l, batch.at("x"), nullptr);
    const auto m = got.at("m").values<float>();
    ASSERT_EQ(m.size(), layer.size());
    EXPECT_EQ(0, std::memcmp(m.data(), layer.data(), layer.size() * sizeof(float)));
    const auto y = got.at("y").values<float>();
    const auto other = c == Case::variable_other ? batch.at("z").values<float>()
                                                 : std::span<const float>(built.bias);
    for (std::size_t i = 0; i < y.size(); ++i)
      EXPECT_EQ(y[i], layer[i] + other[i % other.size()]) << "at " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Plugins, BiasFold, ::testing::Values("cpu_scalar", "cpu_x86"));

TEST(BiasFoldStatic, StaticLayersKeepTheirAdd) {
  SCOPED_TRACE(test::seed_text());
  auto g = test::rng(73);
  const Built built = bias_graph(g, Case::bias_n);
  const auto data = batches(g, built.graph, kCalibrationBatches);
  auto acc = accelerator("cpu_scalar");
  Prepared p = prepare(built.graph, matmul_recipe(minmax_layer()), data);
  QuantizedModel q(*p.float_model, p.recipe, p.resolution, p.calibration, *acc);
  ASSERT_EQ(q.layers().size(), 1u);
  EXPECT_EQ(q.layers()[0].bias_add, -1);
  EXPECT_EQ(q.layers()[0].output, "m");
  const TensorMap batch = batches(g, built.graph, 1)[0];
  EXPECT_GT(sqnr_db(p.float_model->run(batch).at("y"), q.run(batch).at("y")), 20.0);
}

}  // namespace
}  // namespace qforge::model
