// A recipe with weight "rounding": "gptq" end to end on small MLPs: calibrate() sums each
// layer's input Hessian, QuantizedModel rounds the weights with it (weight-only in blocks and
// per channel, and with static int8 activations), every layer stays within its op's tolerance of
// the reference on its codes, the first layer's output error on the calibration data is no
// larger than round-to-nearest's; refusals: no calibration, a Conv.
#include <gtest/gtest.h>

#include <cstdio>

#include "fixtures.h"
#include "qforge/error.h"
#include "qforge/reference.h"

namespace qforge::model {
namespace {

using namespace qtest;

LayerQuantization gptq_layer(WeightQuantization w, bool weight_only) {
  LayerQuantization layer = weight_only ? LayerQuantization{} : minmax_layer();
  if (weight_only) layer.activations.reset();
  w.rounding = WeightRounding::gptq;
  layer.weights = w;
  return layer;
}

LayerQuantization nearest_of(LayerQuantization layer) {
  layer.weights->rounding = WeightRounding::nearest;
  return layer;
}

// Squared error of layer `name`'s output against the float model's, over `data`.
double layer_error(const Executor& float_model, const QuantizedModel& q, const std::string& output,
                   std::span<const TensorMap> data) {
  double sum = 0;
  for (const TensorMap& batch : data) {
    const TensorMap want_map = float_model.run(batch, {output});
    const TensorMap got_map = q.run(batch, {output});
    const auto want = want_map.at(output).values<float>();
    const auto got = got_map.at(output).values<float>();
    for (std::size_t i = 0; i < want.size(); ++i)
      sum += (double(got[i]) - want[i]) * (double(got[i]) - want[i]);
  }
  return sum;
}

class GptqOnCpuPlugin : public ::testing::TestWithParam<std::string> {};

TEST_P(GptqOnCpuPlugin, RunsEndToEndAndBeatsNearestOnTheFirstLayer) {
  SCOPED_TRACE(test::seed_text());
  auto acc = accelerator(GetParam());
  if (!acc) GTEST_SKIP() << GetParam() << " did not load on this machine";
  auto g = test::rng(31);
  struct Case {
    LayerQuantization layer;
    double min_sqnr_db;
  };
  const Case cases[] = {
      {gptq_layer({.dtype = DType::int4,
                   .mapping = Mapping::affine,
                   .granularity = Granularity::block,
                   .block_size = 16},
                  true),
       15.0},
      {gptq_layer({.dtype = DType::int4,
                   .mapping = Mapping::affine,
                   .granularity = Granularity::block,
                   .block_size = 16,
                   .observer = calibration::Method::mse},
                  true),
       15.0},
      {gptq_layer({.dtype = DType::int8,
                   .mapping = Mapping::symmetric,
                   .granularity = Granularity::per_channel},
                  true),
       30.0},
      {gptq_layer({.dtype = DType::int8,
                   .mapping = Mapping::symmetric,
                   .granularity = Granularity::per_channel},
                  false),
       20.0},
  };
  for (bool gemm : {true, false}) {
    const Graph graph = gemm ? gemm_mlp(g, {}, /*trans_b=*/gemm) : matmul_mlp(g, {});
    const auto data = batches(g, graph, kCalibrationBatches);
    for (const Case& c : cases) {
      SCOPED_TRACE(describe(std::optional<LayerQuantization>(c.layer)) +
                   (gemm ? " on Gemm" : " on MatMul"));
      Prepared p = prepare(graph, matmul_recipe(c.layer), data);
      EXPECT_EQ(p.calibration.gptq.size(), 2u);
      QuantizedModel q(*p.float_model, p.recipe, p.resolution, p.calibration, *acc);
      ASSERT_EQ(q.layers().size(), 2u);
      // Each layer on its codes within its op's tolerance of the reference.
      const TensorMap& batch = data[0];
      std::vector<std::string> keep;
      for (const auto& l : q.layers()) keep.insert(keep.end(), {l.input, l.output});
      const TensorMap got = q.run(batch, keep);
      for (const QuantizedLayerInfo& l : q.layers()) {
        SCOPED_TRACE(l.name);
        if (!l.weight_only) continue;  // static layers: quantized_model_test's checks
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
        double num = 0, den = 0;
        for (std::size_t i = 0; i < want.size(); ++i) {
          num += (double(y[i]) - want[i]) * (double(y[i]) - want[i]);
          den += double(want[i]) * want[i];
        }
        EXPECT_LE(num / den, 1e-10);
      }
      const double sqnr = sqnr_db(p.float_model->run(batch).at("y"), q.run(batch).at("y"));
      EXPECT_GT(sqnr, c.min_sqnr_db);
      // The first layer's input is the graph's: GPTQ minimised exactly this error over `data`.
      Prepared plain = prepare(graph, matmul_recipe(nearest_of(c.layer)), data);
      QuantizedModel nearest(*plain.float_model, plain.recipe, plain.resolution, plain.calibration,
                             *acc);
      const std::string first = q.layers()[0].output;
      const double e_gptq = layer_error(*p.float_model, q, first, data);
      const double e_nearest = layer_error(*p.float_model, nearest, first, data);
      std::printf("  %-8s %-6s %-70s first layer error nearest %.4g, gptq %.4g; SQNR %.1f dB\n",
                  GetParam().c_str(), gemm ? "Gemm" : "MatMul",
                  describe(std::optional<LayerQuantization>(c.layer)).c_str(), e_nearest, e_gptq,
                  sqnr);
      if (c.layer.activations) continue;  // static: A's rounding adds error GPTQ does not see
      EXPECT_LE(e_gptq, e_nearest);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Plugins, GptqOnCpuPlugin, ::testing::Values("cpu_scalar", "cpu_x86"));

TEST(Gptq, RefusedWithoutCalibration) {
  SCOPED_TRACE(test::seed_text());
  auto g = test::rng(32);
  auto acc = accelerator("cpu_scalar");
  const Graph graph = gemm_mlp(g, {});
  const Executor float_model(graph);
  const Recipe recipe = matmul_recipe(gptq_layer(
      {.dtype = DType::int4, .mapping = Mapping::affine, .granularity = Granularity::block}, true));
  const RecipeResolution res = resolve(recipe, node_refs(float_model.graph()));
  try {
    QuantizedModel q(float_model, recipe, res, CalibrationResult{}, *acc);
    ADD_FAILURE() << "quantized a gptq recipe without calibration";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
    const std::string what = e.what();
    EXPECT_NE(what.find("fc1"), std::string::npos) << what;
    EXPECT_NE(what.find("no GPTQ Hessian for tensor 'x'"), std::string::npos) << what;
  }
}

TEST(Gptq, RefusedForConv) {
  SCOPED_TRACE(test::seed_text());
  auto g = test::rng(33);
  OnnxBuilder b(17);
  b.input("x", F, {2, 3, 8, 8}).output("y", F, {2, 4, 6, 6});
  b.initializer("W", {4, 3, 3, 3}, weights(g, 27, 4 * 27));
  b.node("Conv", {"x", "W"}, {"y"}, "conv");
  const Graph graph = import_onnx_bytes(b.bytes(), "conv");
  LayerQuantization layer = minmax_layer();
  layer.weights->rounding = WeightRounding::gptq;
  Recipe recipe;
  recipe.rules.push_back({.label = "convs", .match = {.op_types = {"Conv"}}, .quantize = layer});
  const auto data = batches(g, graph, 2);
  Prepared p = prepare(graph, recipe, data);
  EXPECT_TRUE(p.calibration.gptq.empty());
  auto acc = accelerator("cpu_scalar");
  try {
    QuantizedModel q(*p.float_model, p.recipe, p.resolution, p.calibration, *acc);
    ADD_FAILURE() << "rounded a Conv with gptq";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::unsupported);
    EXPECT_NE(std::string(e.what()).find("gptq is for MatMul and Gemm"), std::string::npos)
        << e.what();
  }
  // An optional rule leaves it float and says why.
  recipe.rules[0].optional = true;
  Prepared lenient = prepare(graph, recipe, data);
  QuantizedModel q(*lenient.float_model, lenient.recipe, lenient.resolution, lenient.calibration,
                   *acc);
  EXPECT_TRUE(q.layers().empty());
  ASSERT_EQ(q.skipped().size(), 1u);
  EXPECT_NE(q.skipped()[0].reason.find("gptq"), std::string::npos) << q.skipped()[0].reason;
}

}  // namespace
}  // namespace qforge::model
