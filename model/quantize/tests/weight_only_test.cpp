// Weight-only layers (a rule without activations; ONNX Runtime's MatMulNBits): one
// matmul_weight_only plan per MatMul / Gemm on the float input, each layer within the op's
// tolerance of reference::matmul_weight_only on its actual input, close to float end to end, on
// both CPU plugins; reports say "none" for the activations; QDQ export writes a
// DequantizeLinear on the weight only, and refuses block-wise weights with the reason.
#include <gtest/gtest.h>

#include "fixtures.h"
#include "qforge/error.h"
#include "qforge/model/layer_report.h"
#include "qforge/model/qdq_export.h"
#include "qforge/reference.h"

namespace qforge::model {
namespace {

using namespace qtest;

LayerQuantization weight_only(DType t, Granularity g, Mapping m = Mapping::affine) {
  LayerQuantization layer;
  layer.activations.reset();
  layer.weights = WeightQuantization{.dtype = t, .mapping = m, .granularity = g};
  if (g == Granularity::block) layer.weights->block_size = 16;
  return layer;
}

// The same layer with each weight group's range searched (qforge/model/weight_range.h).
LayerQuantization with_mse_observer(LayerQuantization layer) {
  layer.weights->observer = calibration::Method::mse;
  return layer;
}

// NMSE of `got` against `want` (docs/NUMERICS.md's bound for matmul_weight_only is 1e-10).
double nmse(std::span<const float> want, std::span<const float> got) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    num += (static_cast<double>(got[i]) - want[i]) * (static_cast<double>(got[i]) - want[i]);
    den += static_cast<double>(want[i]) * want[i];
  }
  return den > 0 ? num / den : num;
}

void expect_layers_match_reference(const QuantizedModel& q, const TensorMap& batch) {
  std::vector<std::string> keep;
  for (const auto& l : q.layers()) keep.insert(keep.end(), {l.input, l.output});
  const TensorMap got = q.run(batch, keep);
  for (const QuantizedLayerInfo& l : q.layers()) {
    SCOPED_TRACE(l.name);
    EXPECT_TRUE(l.weight_only);
    EXPECT_FALSE(l.a_params);
    const Tensor& x = got.at(l.input);
    const std::int64_t m = x.size() / l.k;
    const MatmulDesc desc{.m = m,
                          .n = l.n,
                          .k = l.k,
                          .a = QuantizationParams::per_tensor_symmetric(DType::int8, 1.0f),
                          .b = l.b_params,
                          .b_layout = l.b_layout,
                          .has_bias = !l.bias.empty()};
    std::vector<float> want(static_cast<std::size_t>(m * l.n));
    reference::matmul_weight_only(desc, x.values<float>().data(), l.b_codes.data(),
                                  l.bias.empty() ? nullptr : l.bias.data(), want.data());
    const auto y = got.at(l.output).values<float>();
    ASSERT_EQ(y.size(), want.size());
    EXPECT_LE(nmse(want, y), 1e-10);
  }
}

class WeightOnlyOnCpuPlugin : public ::testing::TestWithParam<std::string> {};

TEST_P(WeightOnlyOnCpuPlugin, LayersMeetTheReferenceAndStayCloseToFloat) {
  SCOPED_TRACE(test::seed_text());
  auto acc = accelerator(GetParam());
  if (!acc) GTEST_SKIP() << GetParam() << " did not load on this machine";
  auto g = test::rng(21);
  struct Case {
    LayerQuantization layer;
    double min_sqnr_db;  // about 6 dB per bit, less for coarse granularity
  };
  const Case cases[] = {
      {weight_only(DType::int4, Granularity::block), 15.0},
      {weight_only(DType::int8, Granularity::block, Mapping::affine), 30.0},
      {weight_only(DType::int4, Granularity::block, Mapping::symmetric), 12.0},
      {weight_only(DType::int8, Granularity::per_channel, Mapping::symmetric), 30.0},
      {with_mse_observer(weight_only(DType::int4, Granularity::block)), 15.0},
      {with_mse_observer(weight_only(DType::int4, Granularity::block, Mapping::symmetric)), 12.0},
      {with_mse_observer(weight_only(DType::int8, Granularity::per_channel)), 30.0}};
  for (bool gemm : {true, false}) {
    const Graph graph = gemm ? gemm_mlp(g, {}, /*trans_b=*/true) : matmul_mlp(g, {});
    for (const Case& c : cases) {
      SCOPED_TRACE(describe(std::optional<LayerQuantization>(c.layer)));
      // Weight-only rules calibrate nothing.
      Prepared p = prepare(graph, matmul_recipe(c.layer), batches(g, graph, 2));
      EXPECT_TRUE(p.calibration.tensors.empty());
      QuantizedModel q(*p.float_model, p.recipe, p.resolution, p.calibration, *acc);
      ASSERT_EQ(q.layers().size(), 2u);
      EXPECT_EQ(q.layers()[0].backend, GetParam());
      const TensorMap batch = batches(g, graph, 1)[0];
      expect_layers_match_reference(q, batch);
      EXPECT_GT(sqnr_db(p.float_model->run(batch).at("y"), q.run(batch).at("y")), c.min_sqnr_db);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Plugins, WeightOnlyOnCpuPlugin,
                         ::testing::Values("cpu_scalar", "cpu_x86"));

TEST(WeightOnly, ReportNamesNoActivationQuantization) {
  SCOPED_TRACE(test::seed_text());
  auto g = test::rng(22);
  const Graph graph = gemm_mlp(g, {});
  const auto data = batches(g, graph, 2);
  Prepared p = prepare(graph, matmul_recipe(weight_only(DType::int4, Granularity::block)), data);
  auto acc = accelerator("cpu_scalar");
  QuantizedModel q(*p.float_model, p.recipe, p.resolution, p.calibration, *acc);
  const ModelReport report = layer_report(*p.float_model, q, data);
  ASSERT_EQ(report.layers.size(), 2u);
  EXPECT_EQ(report.layers[0].mode, "none");
  // Blocks of 16: half a byte a code plus 8 bytes (scale, zero point) a block.
  EXPECT_LE(report.layers[0].quantized_weight_bytes, report.layers[0].float_weight_bytes / 4);
}

TEST(WeightOnly, QdqExportDequantizesOnlyTheWeight) {
  SCOPED_TRACE(test::seed_text());
  auto g = test::rng(23);
  const Graph graph = gemm_mlp(g, {});
  Prepared p = prepare(
      graph, matmul_recipe(weight_only(DType::int8, Granularity::per_channel, Mapping::symmetric)),
      batches(g, graph, 2));
  auto acc = accelerator("cpu_scalar");
  QuantizedModel q(*p.float_model, p.recipe, p.resolution, p.calibration, *acc);
  const Graph out = qdq_graph(q);
  int quantize = 0, dequantize = 0;
  for (const Node& n : out.nodes) {
    quantize += n.op_type == "QuantizeLinear" || n.op_type == "DynamicQuantizeLinear";
    dequantize += n.op_type == "DequantizeLinear";
  }
  EXPECT_EQ(quantize, 0);
  EXPECT_EQ(dequantize, 2);  // one per layer, on the weight

  Prepared blocked =
      prepare(graph, matmul_recipe(weight_only(DType::int4, Granularity::block)), {});
  QuantizedModel qb(*blocked.float_model, blocked.recipe, blocked.resolution, blocked.calibration,
                    *acc);
  try {
    qdq_graph(qb);
    ADD_FAILURE() << "exported block-wise weight-only layers";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::unsupported);
    EXPECT_NE(std::string(e.what()).find("MatMulNBits"), std::string::npos) << e.what();
  }
}

TEST(WeightOnly, RefusedWhereCoreHasNoWeightOnlyOp) {
  SCOPED_TRACE(test::seed_text());
  auto g = test::rng(24);
  auto acc = accelerator("cpu_scalar");
  const Graph graph = gemm_mlp(g, {});
  Prepared p = prepare(graph, matmul_recipe(weight_only(DType::int16, Granularity::per_channel)),
                       batches(g, graph, 1));
  try {
    QuantizedModel q(*p.float_model, p.recipe, p.resolution, p.calibration, *acc);
    ADD_FAILURE() << "accepted int16 weight-only";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("int4, uint4, int8 or uint8"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("fc1"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace qforge::model
