// Quantized MLPs: outputs close to float, each layer equal to a hand computation with
// qforge::reference bit for bit on the CPU plugins, static and dynamic activations, Gemm's
// transB, alpha and beta, and the cases that are refused.
#include <gtest/gtest.h>

#include <cstring>

#include "fixtures.h"
#include "qforge/error.h"
#include "qforge/reference.h"

namespace qforge::model {
namespace {

using namespace qtest;

// int8 per-channel weights and int8 activations on well-conditioned data keep 30 dB easily
// (each layer's rounding noise alone is about 40 dB down).
constexpr double kMinSqnrDb = 30.0;

TEST(QuantizedModel, GemmMlpStaysCloseToFloat) {
  SCOPED_TRACE(test::seed_text());
  auto g = test::rng(1);
  const Graph graph = gemm_mlp(g, {});
  const auto data = batches(g, graph, kCalibrationBatches);
  Prepared p = prepare(graph, matmul_recipe(minmax_layer()), data);
  auto acc = accelerator("cpu_scalar");
  ASSERT_TRUE(acc);
  QuantizedModel q(*p.float_model, p.recipe, p.resolution, p.calibration, *acc);
  ASSERT_EQ(q.layers().size(), 2u);
  EXPECT_EQ(q.layers()[0].name, "fc1");
  EXPECT_EQ(q.layers()[0].backend, "cpu_scalar");
  for (const TensorMap& batch : batches(g, graph, 3)) {
    const TensorMap want = p.float_model->run(batch), got = q.run(batch);
    EXPECT_GT(sqnr_db(want.at("y"), got.at("y")), kMinSqnrDb);
  }
}

TEST(QuantizedModel, MatMulAddMlpStaysCloseToFloat) {
  SCOPED_TRACE(test::seed_text());
  auto g = test::rng(2);
  const Graph graph = matmul_mlp(g, {});
  const auto data = batches(g, graph, kCalibrationBatches);
  Prepared p = prepare(graph, matmul_recipe(minmax_layer()), data);
  auto acc = accelerator("cpu_scalar");
  QuantizedModel q(*p.float_model, p.recipe, p.resolution, p.calibration, *acc);
  ASSERT_EQ(q.layers().size(), 2u);
  EXPECT_EQ(q.layers()[1].name, "mm2");
  const TensorMap batch = batches(g, graph, 1)[0];
  const TensorMap want = p.float_model->run(batch), got = q.run(batch);
  EXPECT_EQ(got.at("y").shape(), want.at("y").shape());
  EXPECT_GT(sqnr_db(want.at("y"), got.at("y")), kMinSqnrDb);
}

TEST(QuantizedModel, GemmTransBAlphaBetaStaysCloseToFloat) {
  SCOPED_TRACE(test::seed_text());
  auto g = test::rng(3);
  const Graph graph = gemm_mlp(g, {}, /*trans_b=*/true, /*alpha=*/0.75f, /*beta=*/1.5f);
  const auto data = batches(g, graph, kCalibrationBatches);
  Prepared p = prepare(graph, matmul_recipe(minmax_layer()), data);
  auto acc = accelerator("cpu_scalar");
  QuantizedModel q(*p.float_model, p.recipe, p.resolution, p.calibration, *acc);
  EXPECT_EQ(q.layers()[0].b_layout, MatrixLayout::nk);
  const TensorMap batch = batches(g, graph, 1)[0];
  EXPECT_GT(sqnr_db(p.float_model->run(batch).at("y"), q.run(batch).at("y")), kMinSqnrDb);
}

// Each layer's output against reference::quantize + reference::matmul_dequant (or
// dynamic_quantize_linear + matmul_dequant, or on the int8 path qlinear_matmul + dequantize) on
// the layer's actual input, bit for bit.
void expect_layers_match_reference(const QuantizedModel& q, const TensorMap& batch) {
  std::vector<std::string> keep;
  for (const auto& l : q.layers()) keep.insert(keep.end(), {l.input, l.output});
  const TensorMap got = q.run(batch, keep);
  for (const QuantizedLayerInfo& l : q.layers()) {
    SCOPED_TRACE(l.name);
    const Tensor& x = got.at(l.input);
    const std::int64_t m = x.size() / l.k;
    std::vector<std::byte> aq(static_cast<std::size_t>(m * l.k) * 2);
    MatmulDesc desc{
        .m = m,
        .n = l.n,
        .k = l.k,
        .a = l.a_params.value_or(QuantizationParams::per_tensor_symmetric(DType::int8, 1.0f)),
        .b = l.b_params,
        .b_layout = l.b_layout,
        .has_bias = !l.bias.empty()};
    if (l.a_params) {
      reference::quantize(QuantizeDesc{{m, l.k}, *l.a_params}, x.data(), aq.data());
    } else {
      desc.a = reference::dynamic_quantize_linear(DynamicQuantizeDesc{{m, l.k}},
                                                  x.values<float>().data(),
                                                  reinterpret_cast<std::uint8_t*>(aq.data()));
    }
    std::vector<float> want(static_cast<std::size_t>(m * l.n));
    if (l.int8_output) {
      // The int8 path (a Gemm whose Relu feeds another static layer): qlinear_matmul with the
      // int32 bias and the fused clamp, its codes read back as the values they stand for.
      ASSERT_TRUE(l.matmul);
      std::vector<std::byte> codes(want.size());
      reference::qlinear_matmul(*l.matmul, aq.data(), l.b_codes.data(),
                                l.bias_i32.empty() ? nullptr : l.bias_i32.data(), codes.data());
      reference::dequantize(QuantizeDesc{{m * l.n}, *l.int8_output}, codes.data(), want.data());
    } else {
      reference::matmul_dequant(desc, aq.data(), l.b_codes.data(),
                                l.bias.empty() ? nullptr : l.bias.data(), want.data());
    }
    const auto y = got.at(l.output).values<float>();
    ASSERT_EQ(y.size(), want.size());
    EXPECT_EQ(std::memcmp(y.data(), want.data(), want.size() * sizeof(float)), 0);
  }
}

class OnCpuPlugin : public ::testing::TestWithParam<std::string> {};

TEST_P(OnCpuPlugin, StaticLayersEqualTheReference) {
  SCOPED_TRACE(test::seed_text());
  auto acc = accelerator(GetParam());
  if (!acc) GTEST_SKIP() << GetParam() << " did not load on this machine";
  auto g = test::rng(4);
  for (bool gemm : {true, false}) {
    const Graph graph = gemm ? gemm_mlp(g, {}) : matmul_mlp(g, {});
    const auto data = batches(g, graph, 2);
    Prepared p = prepare(graph, matmul_recipe(minmax_layer()), data);
    QuantizedModel q(*p.float_model, p.recipe, p.resolution, p.calibration, *acc);
    EXPECT_EQ(q.layers()[0].backend, GetParam());
    expect_layers_match_reference(q, batches(g, graph, 1)[0]);
  }
}

TEST_P(OnCpuPlugin, DynamicLayersEqualTheReference) {
  SCOPED_TRACE(test::seed_text());
  auto acc = accelerator(GetParam());
  if (!acc) GTEST_SKIP() << GetParam() << " did not load on this machine";
  auto g = test::rng(5);
  const Graph graph = gemm_mlp(g, {});
  Prepared p = prepare(graph, matmul_recipe(dynamic_layer()), {});
  QuantizedModel q(*p.float_model, p.recipe, p.resolution, p.calibration, *acc);
  for (const auto& l : q.layers()) {
    EXPECT_EQ(l.mode, ActivationMode::dynamic);
    EXPECT_FALSE(l.a_params);
  }
  // A different range each batch: the per-call path must follow it.
  for (float scale : {1.0f, 8.0f}) {
    TensorMap batch = batches(g, graph, 1)[0];
    for (float& v : batch.at("x").values<float>()) v *= scale;
    expect_layers_match_reference(q, batch);
  }
}

// Three dynamic MatMuls reading one tensor (a transformer's Q, K and V projections) quantize it
// once per run and share the codes: each must still equal the reference on its own input, and a
// later batch with another range must not reuse the earlier batch's codes.
Graph shared_input_graph(std::mt19937_64& g) {
  constexpr std::int64_t batch = 2, tokens = 5, in = 24, hidden = 16, out = 8;
  OnnxBuilder b(17);
  b.input("x", F, {batch, tokens, in}).output("y", F, {batch, tokens, out});
  for (const char* w : {"WQ", "WK", "WV"})
    b.initializer(w, {in, hidden}, weights(g, in, in * hidden));
  b.initializer("W2", {hidden, out}, weights(g, hidden, hidden * out));
  b.node("MatMul", {"x", "WQ"}, {"q"}, "mm_q");
  b.node("MatMul", {"x", "WK"}, {"k"}, "mm_k");
  b.node("MatMul", {"x", "WV"}, {"v"}, "mm_v");
  b.node("Add", {"q", "k"}, {"qk"}, "add_qk");
  b.node("Add", {"qk", "v"}, {"t"}, "add_v");
  b.node("MatMul", {"t", "W2"}, {"y"}, "mm_out");
  return import_onnx_bytes(b.bytes(), "shared_input");
}

TEST_P(OnCpuPlugin, DynamicLayersSharingAnInputEqualTheReference) {
  SCOPED_TRACE(test::seed_text());
  auto acc = accelerator(GetParam());
  if (!acc) GTEST_SKIP() << GetParam() << " did not load on this machine";
  auto g = test::rng(6);
  const Graph graph = shared_input_graph(g);
  Prepared p = prepare(graph, matmul_recipe(dynamic_layer()), {});
  QuantizedModel q(*p.float_model, p.recipe, p.resolution, p.calibration, *acc);
  ASSERT_EQ(q.layers().size(), 4u);
  for (float scale : {1.0f, 8.0f, 0.25f}) {
    TensorMap batch = batches(g, graph, 1)[0];
    for (float& v : batch.at("x").values<float>()) v *= scale;
    expect_layers_match_reference(q, batch);
  }
}

// Layers share buffers for their codes where the codes are never live at once. A group reading
// one tensor (mm_q, mm_k on x) keeps its codes from its first member to its last, so mm_r, which
// runs between them on codes of the same size, must not be given the group's buffer: mm_k would
// then multiply r's codes.
Graph interleaved_codes_graph(std::mt19937_64& g) {
  constexpr std::int64_t batch = 2, tokens = 5, in = 24, hidden = 16;
  OnnxBuilder b(17);
  b.input("x", F, {batch, tokens, in})
      .output("y", F, {batch, tokens, hidden})
      .output("s", F, {batch, tokens, hidden});
  b.initializer("WQ", {in, hidden}, weights(g, in, in * hidden));
  b.initializer("WR", {hidden, in}, weights(g, hidden, hidden * in));
  b.initializer("WK", {in, hidden}, weights(g, in, in * hidden));
  b.initializer("WS", {in, hidden}, weights(g, in, in * hidden));
  b.node("MatMul", {"x", "WQ"}, {"q"}, "mm_q");
  b.node("MatMul", {"q", "WR"}, {"r"}, "mm_r");  // r: as many codes as x
  b.node("MatMul", {"x", "WK"}, {"k"}, "mm_k");
  b.node("Add", {"q", "k"}, {"y"}, "add_qk");
  b.node("MatMul", {"r", "WS"}, {"s"}, "mm_s");
  return import_onnx_bytes(b.bytes(), "interleaved_codes");
}

TEST_P(OnCpuPlugin, DynamicGroupKeepsItsCodesAcrossAnotherLayer) {
  SCOPED_TRACE(test::seed_text());
  auto acc = accelerator(GetParam());
  if (!acc) GTEST_SKIP() << GetParam() << " did not load on this machine";
  auto g = test::rng(14);
  const Graph graph = interleaved_codes_graph(g);
  Prepared p = prepare(graph, matmul_recipe(dynamic_layer()), {});
  QuantizedModel q(*p.float_model, p.recipe, p.resolution, p.calibration, *acc);
  ASSERT_EQ(q.layers().size(), 4u);
  for (float scale : {1.0f, 8.0f}) {
    TensorMap batch = batches(g, graph, 1)[0];
    for (float& v : batch.at("x").values<float>()) v *= scale;
    expect_layers_match_reference(q, batch);
  }
}

INSTANTIATE_TEST_SUITE_P(Plugins, OnCpuPlugin, ::testing::Values("cpu_scalar", "cpu_x86"));

TEST(QuantizedModel, DynamicAndStaticBothStayCloseToFloat) {
  SCOPED_TRACE(test::seed_text());
  auto g = test::rng(6);
  const Graph graph = matmul_mlp(g, {});
  const auto data = batches(g, graph, kCalibrationBatches);
  auto acc = accelerator("cpu_scalar");
  const TensorMap batch = batches(g, graph, 1)[0];
  for (const LayerQuantization& layer : {minmax_layer(), dynamic_layer()}) {
    Prepared p = prepare(graph, matmul_recipe(layer), data);
    EXPECT_EQ(p.calibration.tensors.size(),
              layer.activations->mode == ActivationMode::dynamic ? 0u : 2u);
    QuantizedModel q(*p.float_model, p.recipe, p.resolution, p.calibration, *acc);
    EXPECT_GT(sqnr_db(p.float_model->run(batch).at("y"), q.run(batch).at("y")), kMinSqnrDb)
        << to_string(layer.activations->mode);
  }
}

TEST(QuantizedModel, BlockWiseInt4WeightsRunInTheNkLayout) {
  SCOPED_TRACE(test::seed_text());
  auto g = test::rng(12);
  const Graph graph = matmul_mlp(g, {});  // MatMul stores B as [K, N]: transposed once
  LayerQuantization layer = minmax_layer();
  layer.weights = WeightQuantization{.dtype = DType::int4,
                                     .mapping = Mapping::symmetric,
                                     .granularity = Granularity::block,
                                     .block_size = 16};
  const auto data = batches(g, graph, kCalibrationBatches);
  Prepared p = prepare(graph, matmul_recipe(layer), data);
  auto acc = accelerator("cpu_scalar");
  QuantizedModel q(*p.float_model, p.recipe, p.resolution, p.calibration, *acc);
  EXPECT_EQ(q.layers()[0].b_layout, MatrixLayout::nk);
  EXPECT_EQ(q.layers()[0].b_params.count(), 48u * 2);  // N = 48 rows of K = 32 in 2 blocks
  const TensorMap batch = batches(g, graph, 1)[0];
  expect_layers_match_reference(q, batch);
  // int4 keeps about 6 dB per bit less than int8.
  EXPECT_GT(sqnr_db(p.float_model->run(batch).at("y"), q.run(batch).at("y")), 15.0);
}

TEST(QuantizedModel, ExplicitActivationParamsAreUsedAsWritten) {
  SCOPED_TRACE(test::seed_text());
  auto g = test::rng(7);
  const Graph graph = gemm_mlp(g, {});
  LayerQuantization layer;
  layer.activations = ActivationQuantization::explicit_affine(DType::int8, 0.02f, -3);
  Prepared p = prepare(graph, matmul_recipe(layer), {});
  auto acc = accelerator("cpu_scalar");
  QuantizedModel q(*p.float_model, p.recipe, p.resolution, p.calibration, *acc);
  EXPECT_EQ(*q.layers()[0].a_params, QuantizationParams::per_tensor_affine(DType::int8, 0.02f, -3));
  expect_layers_match_reference(q, batches(g, graph, 1)[0]);
}

// x [1, 2, 5, 5] -> Conv "conv" -> Flatten "flatten" -> Gemm "fc" -> y
Graph conv_then_gemm(std::mt19937_64& g) {
  OnnxBuilder b(17);
  b.input("x", F, {1, 2, 5, 5}).output("y", F, {1, 4});
  b.initializer("Wc", {3, 2, 3, 3}, weights(g, 18, 54));
  b.initializer("Wf", {27, 4}, weights(g, 27, 108));
  b.node("Conv", {"x", "Wc"}, {"c"}, "conv");
  b.node("Flatten", {"c"}, {"f"}, "flatten");
  b.node("Gemm", {"f", "Wf"}, {"y"}, "fc");
  return import_onnx_bytes(b.bytes(), "conv_then_gemm");
}

TEST(QuantizedModel, AnOpWithoutQuantizedFormIsRefusedNamingTheNode) {
  SCOPED_TRACE(test::seed_text());
  auto g = test::rng(8);
  const Graph graph = conv_then_gemm(g);
  Recipe r;
  r.rules.push_back({.label = "all",
                     .match = {.op_types = {"Flatten", "Gemm"}},
                     .quantize = LayerQuantization{}});
  const auto data = batches(g, graph, 2);
  Prepared p = prepare(graph, r, data);
  auto acc = accelerator("cpu_scalar");
  try {
    QuantizedModel q(*p.float_model, p.recipe, p.resolution, p.calibration, *acc);
    FAIL() << "Flatten was accepted";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_EQ(e.code(), ErrorCode::unsupported);
    EXPECT_NE(what.find("Flatten 'flatten'"), std::string::npos) << what;
    EXPECT_NE(what.find("Conv, MatMul and Gemm"), std::string::npos) << what;
    EXPECT_NE(what.find("'all'"), std::string::npos) << what;
  }
}

TEST(QuantizedModel, AnOptionalRuleLeavesUnsupportedNodesInFloat) {
  SCOPED_TRACE(test::seed_text());
  auto g = test::rng(9);
  const Graph graph = conv_then_gemm(g);
  Recipe r;
  r.rules.push_back({.label = "all",
                     .match = {.op_types = {"Flatten", "Gemm"}},
                     .quantize = minmax_layer(),
                     .optional = true});
  const auto data = batches(g, graph, kCalibrationBatches);
  Prepared p = prepare(graph, r, data);
  auto acc = accelerator("cpu_scalar");
  QuantizedModel q(*p.float_model, p.recipe, p.resolution, p.calibration, *acc);
  ASSERT_EQ(q.skipped().size(), 1u);
  EXPECT_EQ(q.skipped()[0].name, "flatten");
  ASSERT_EQ(q.layers().size(), 1u);
  EXPECT_EQ(q.layers()[0].name, "fc");
  const TensorMap& batch = data[0];
  // Four outputs only: their SQNR spreads wider over seeds than a layer's thousands.
  EXPECT_GT(sqnr_db(p.float_model->run(batch).at("y"), q.run(batch).at("y")), 20.0);
}

TEST(QuantizedModel, ARuleThatMatchesNothingIsAnError) {
  SCOPED_TRACE(test::seed_text());
  auto g = test::rng(10);
  const Executor float_model(gemm_mlp(g, {}));
  Recipe r = matmul_recipe();
  r.rules.push_back({.label = "typo", .match = {.name_regex = "^fc3$"}, .quantize = {}});
  const auto refs = node_refs(float_model.graph());
  try {
    resolve(r, refs);
    FAIL() << "a rule that matches nothing was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("typo"), std::string::npos) << e.what();
  }
}

TEST(QuantizedModel, StaticLayersNeedTheirCalibration) {
  SCOPED_TRACE(test::seed_text());
  auto g = test::rng(13);
  const Graph graph = gemm_mlp(g, {});
  Prepared p = prepare(graph, matmul_recipe(), batches(g, graph, 1));
  auto acc = accelerator("cpu_scalar");
  try {
    QuantizedModel q(*p.float_model, p.recipe, p.resolution, CalibrationResult{}, *acc);
    FAIL() << "a static layer without calibration was accepted";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("fc1"), std::string::npos) << what;
    EXPECT_NE(what.find("'x'"), std::string::npos) << what;
  }
}

TEST(QuantizedModel, RefusesWhatCoreCannotRun) {
  SCOPED_TRACE(test::seed_text());
  auto g = test::rng(11);
  auto acc = accelerator("cpu_scalar");
  const Graph graph = gemm_mlp(g, {});
  auto expect_refused = [&](const Graph& gr, LayerQuantization layer, const std::string& words) {
    Prepared p = prepare(gr, matmul_recipe(layer), batches(g, gr, 1));
    try {
      QuantizedModel q(*p.float_model, p.recipe, p.resolution, p.calibration, *acc);
      ADD_FAILURE() << "accepted; expected: " << words;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("fc1"), std::string::npos) << e.what();
    }
  };
  LayerQuantization weight_only;
  weight_only.activations.reset();
  weight_only.weights->dtype = DType::int16;
  expect_refused(graph, weight_only, "weight-only");
  LayerQuantization dynamic_int8 = dynamic_layer();
  dynamic_int8.activations->dtype = DType::int8;
  expect_refused(graph, dynamic_int8, "uint8 affine");
  LayerQuantization other_axis;
  other_axis.weights->axis = 0;
  expect_refused(graph, other_axis, "axis 0");

  OnnxBuilder b(17);
  b.input("x", F, {6, 4}).output("y", F, {4, 3});
  b.initializer("W", {6, 3}, weights(g, 6, 18));
  OnnxBuilder::attr(b.node("Gemm", {"x", "W"}, {"y"}, "fc1"), "transA", std::int64_t{1});
  expect_refused(import_onnx_bytes(b.bytes(), "trans_a"), {}, "transA");
}

}  // namespace
}  // namespace qforge::model
