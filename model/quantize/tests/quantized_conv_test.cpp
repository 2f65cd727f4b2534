// Quantized Conv layers: a small CNN (padded conv, depthwise conv with SAME_UPPER and stride 2,
// a dilated conv with asymmetric pads, then Gemm) stays close to float; each conv layer equals
// reference::quantize (or dynamic_quantize_linear) + reference::conv_dequant on its actual
// input; per-channel weight codes and params equal the reference's; the QDQ export wraps Conv
// in Q/DQ with per-axis weights; what core's convolution cannot run is refused naming the node.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "fixtures.h"
#include "qforge/error.h"
#include "qforge/model/qdq_export.h"
#include "qforge/reference.h"

namespace qforge::model {
namespace {

using namespace qtest;

// x [2, 3, 9, 9] -> Conv "conv1" (8 x 3x3, pads 1, bias) -> Relu
//   -> Conv "dw" (depthwise, group 8, stride 2, SAME_UPPER, bias) -> Relu       [2, 8, 5, 5]
//   -> Conv "dil" (4 x 2x2, dilations (2, 1), pads (1, 0, 0, 1), no bias)       [2, 4, 4, 5]
//   -> Flatten -> Gemm "fc" -> y [2, 5]
Graph small_cnn(std::mt19937_64& g) {
  OnnxBuilder b(17);
  b.input("x", F, {2, 3, 9, 9}).output("y", F, {2, 5});
  b.initializer("W1", {8, 3, 3, 3}, weights(g, 27, 8 * 27));
  b.initializer("B1", {8}, weights(g, 4, 8));
  b.initializer("W2", {8, 1, 3, 3}, weights(g, 9, 8 * 9));
  b.initializer("B2", {8}, weights(g, 4, 8));
  b.initializer("W3", {4, 8, 2, 2}, weights(g, 32, 4 * 32));
  b.initializer("Wf", {80, 5}, weights(g, 80, 400));
  OnnxBuilder::attr(b.node("Conv", {"x", "W1", "B1"}, {"c1"}, "conv1"), "pads",
                    std::vector<std::int64_t>{1, 1, 1, 1});
  b.node("Relu", {"c1"}, {"r1"}, "relu1");
  auto& dw = b.node("Conv", {"r1", "W2", "B2"}, {"c2"}, "dw");
  OnnxBuilder::attr(dw, "group", std::int64_t{8});
  OnnxBuilder::attr(dw, "strides", std::vector<std::int64_t>{2, 2});
  OnnxBuilder::attr(dw, "auto_pad", std::string("SAME_UPPER"));
  b.node("Relu", {"c2"}, {"r2"}, "relu2");
  auto& dil = b.node("Conv", {"r2", "W3"}, {"c3"}, "dil");
  OnnxBuilder::attr(dil, "dilations", std::vector<std::int64_t>{2, 1});
  OnnxBuilder::attr(dil, "pads", std::vector<std::int64_t>{1, 0, 0, 1});
  b.node("Flatten", {"c3"}, {"f"}, "flatten");
  b.node("Gemm", {"f", "Wf"}, {"y"}, "fc");
  return import_onnx_bytes(b.bytes(), "small_cnn");
}

Recipe conv_recipe(LayerQuantization layer, bool optional = false) {
  Recipe r;
  r.rules.push_back({.label = "layers",
                     .match = {.op_types = {"Conv", "Gemm"}},
                     .quantize = layer,
                     .optional = optional});
  return r;
}

// uint8 weights per tensor (affine) and uint8 activations: the other dtypes core's convolution
// takes.
LayerQuantization uint8_layer() {
  LayerQuantization q = minmax_layer();
  q.weights = WeightQuantization{
      .dtype = DType::uint8, .mapping = Mapping::affine, .granularity = Granularity::per_tensor};
  q.activations->dtype = DType::uint8;
  return q;
}

std::unique_ptr<Accelerator> cpu_accelerator() {
  AcceleratorOptions o;
  o.use_cache = false;
  o.online_tuning = false;
  return std::make_unique<Accelerator>(o);
}

// The conv layers' outputs against the reference on the layer's actual input. `exact`: bit for
// bit (cpu_scalar runs the reference); otherwise within 1e-6 relative to the output's largest
// magnitude (another plugin's summation order of the float epilogue).
void expect_convs_match_reference(const QuantizedModel& q, const TensorMap& batch, bool exact) {
  std::vector<std::string> keep;
  for (const auto& l : q.layers()) keep.insert(keep.end(), {l.input, l.output});
  const TensorMap got = q.run(batch, keep);
  std::size_t convs = 0;
  for (const QuantizedLayerInfo& l : q.layers()) {
    if (!l.conv) continue;
    ++convs;
    SCOPED_TRACE(l.name);
    const Tensor& x = got.at(l.input);
    std::vector<std::byte> xq(x.size());
    ConvDesc desc = *l.conv;
    if (l.a_params) {
      EXPECT_EQ(desc.x_params, *l.a_params);
      reference::quantize(QuantizeDesc{x.shape(), *l.a_params}, x.data(), xq.data());
    } else {
      desc.x_params = reference::dynamic_quantize_linear(
          DynamicQuantizeDesc{x.shape()}, x.values<float>().data(),
          reinterpret_cast<std::uint8_t*>(xq.data()));
    }
    std::vector<float> want(
        static_cast<std::size_t>(desc.n * desc.out_channels * desc.out_h() * desc.out_w()));
    if (l.int8_output) {
      // The int8 path: qlinear_conv at the next layer's input params, the kept output being
      // the values of its codes (int8_path_test.cpp checks the chain).
      desc.y_params = *l.int8_output;
      desc.bias = l.bias.empty() ? ConvBias::none : ConvBias::int32;
      std::vector<std::byte> yq(want.size());
      reference::qlinear_conv(desc, xq.data(), l.b_codes.data(),
                              l.bias.empty() ? nullptr : l.bias_i32.data(), yq.data());
      reference::dequantize(QuantizeDesc{{static_cast<std::int64_t>(yq.size())}, *desc.y_params},
                            yq.data(), want.data());
    } else {
      reference::conv_dequant(desc, xq.data(), l.b_codes.data(),
                              l.bias.empty() ? nullptr : l.bias.data(), want.data());
    }
    const auto y = got.at(l.output).values<float>();
    ASSERT_EQ(y.size(), want.size());
    if (exact || l.int8_output) {
      EXPECT_EQ(std::memcmp(y.data(), want.data(), want.size() * sizeof(float)), 0);
    } else {
      float peak = 0;
      for (float v : want) peak = std::max(peak, std::abs(v));
      for (std::size_t i = 0; i < y.size(); ++i)
        ASSERT_NEAR(y[i], want[i], 1e-6f * peak) << "at " << i;
    }
  }
  EXPECT_EQ(convs, 3u);
}

TEST(QuantizedConv, SmallCnnStaysCloseToFloat) {
  SCOPED_TRACE(test::seed_text());
  auto g = test::rng(21);
  const Graph graph = small_cnn(g);
  const auto data = batches(g, graph, kCalibrationBatches);
  auto acc = accelerator("cpu_scalar");
  ASSERT_TRUE(acc);
  for (const LayerQuantization& layer : {minmax_layer(), dynamic_layer()}) {
    SCOPED_TRACE(to_string(layer.activations->mode));
    Prepared p = prepare(graph, conv_recipe(layer), data);
    QuantizedModel q(*p.float_model, p.recipe, p.resolution, p.calibration, *acc);
    ASSERT_EQ(q.layers().size(), 4u);
    EXPECT_EQ(q.layers()[1].name, "dw");
    EXPECT_EQ(q.layers()[1].op_type, "Conv");
    ASSERT_TRUE(q.layers()[1].conv);
    EXPECT_EQ(q.layers()[1].conv->groups, 8);
    EXPECT_EQ(q.layers()[1].weight_shape, (Shape{8, 1, 3, 3}));
    EXPECT_EQ(q.layers()[2].conv->y_shape(), (Shape{2, 4, 4, 5}));
    // relu1 and relu2 are fused into the convs before them; dil feeds Flatten.
    EXPECT_EQ(q.layers()[0].conv->activation, ConvActivation::relu);
    EXPECT_EQ(q.layers()[0].output, "r1");
    EXPECT_EQ(q.layers()[1].output, "r2");
    EXPECT_EQ(q.layers()[2].conv->activation, ConvActivation::none);
    EXPECT_EQ(q.layers()[2].output, "c3");
    // Each layer's rounding noise is about 40 dB down; three conv layers and the Gemm stack it.
    // The 160 values of c3 give a steadier figure than y's ten.
    const TensorMap batch = batches(g, graph, 1)[0];
    const TensorMap want = p.float_model->run(batch, {"c3"}), got = q.run(batch, {"c3"});
    EXPECT_GT(sqnr_db(want.at("c3"), got.at("c3")), 25.0);
    EXPECT_GT(sqnr_db(want.at("y"), got.at("y")), 20.0);
    // Keeping a fused conv's own output makes the executor run its Relu apart (not in place):
    // the same result, and the kept tensor holds the clamped values.
    const TensorMap apart = q.run(batch, {"c1"});
    EXPECT_EQ(0, std::memcmp(apart.at("y").data(), got.at("y").data(), got.at("y").byte_size()));
    for (float v : apart.at("c1").values<float>()) EXPECT_GE(v, 0.0f);
  }
}

TEST(QuantizedConv, LayersEqualTheReference) {
  SCOPED_TRACE(test::seed_text());
  auto g = test::rng(22);
  const Graph graph = small_cnn(g);
  const auto data = batches(g, graph, 4);
  auto scalar = accelerator("cpu_scalar");
  auto all = cpu_accelerator();
  for (const LayerQuantization& layer : {minmax_layer(), uint8_layer(), dynamic_layer()}) {
    SCOPED_TRACE(describe(std::optional<LayerQuantization>(layer)));
    Prepared p = prepare(graph, conv_recipe(layer), data);
    for (Accelerator* acc : {scalar.get(), all.get()}) {
      QuantizedModel q(*p.float_model, p.recipe, p.resolution, p.calibration, *acc);
      // A wider range than calibration saw: static layers saturate, dynamic ones follow it.
      TensorMap batch = batches(g, graph, 1)[0];
      for (float& v : batch.at("x").values<float>()) v *= 1.5f;
      expect_convs_match_reference(q, batch, acc == scalar.get());
    }
  }
}

TEST(QuantizedConv, PerChannelWeightsEqualTheReference) {
  SCOPED_TRACE(test::seed_text());
  auto g = test::rng(23);
  const Graph graph = small_cnn(g);
  Prepared p = prepare(graph, conv_recipe(dynamic_layer()), {});
  auto acc = accelerator("cpu_scalar");
  QuantizedModel q(*p.float_model, p.recipe, p.resolution, p.calibration, *acc);
  for (const QuantizedLayerInfo& l : q.layers()) {
    if (!l.conv) continue;
    SCOPED_TRACE(l.name);
    const Node& node = q.graph().nodes.at(l.node);
    const Tensor& w = *q.graph().initializer(node.input(1));
    const std::int64_t o = w.shape()[0], k = w.size() / o;
    const auto v = w.values<float>();
    std::vector<float> lo(static_cast<std::size_t>(o)), hi(static_cast<std::size_t>(o));
    for (std::int64_t c = 0; c < o; ++c) {
      const auto row = v.subspan(static_cast<std::size_t>(c * k), static_cast<std::size_t>(k));
      lo[c] = std::min(0.0f, *std::min_element(row.begin(), row.end()));
      hi[c] = std::max(0.0f, *std::max_element(row.begin(), row.end()));
    }
    const Scheme scheme{
        .mapping = Mapping::symmetric, .granularity = Granularity::per_channel, .axis = 0};
    const QuantizationParams params = reference::params_from_ranges(DType::int8, scheme, lo, hi);
    std::vector<std::byte> codes(w.size());
    reference::quantize(QuantizeDesc{{o, k}, params}, v.data(), codes.data());
    EXPECT_EQ(l.b_params, params);
    EXPECT_EQ(l.conv->w_params, params);
    EXPECT_EQ(l.b_codes, codes);
    EXPECT_EQ(l.weight_shape, w.shape());
    EXPECT_EQ(l.float_weight_bytes, w.size() * sizeof(float));
  }
}

TEST(QuantizedConv, QdqExportWrapsConvWithPerAxisWeights) {
  SCOPED_TRACE(test::seed_text());
  auto g = test::rng(24);
  const Graph graph = small_cnn(g);
  const auto data = batches(g, graph, kCalibrationBatches);
  Prepared p = prepare(graph, conv_recipe(minmax_layer()), data);
  auto acc = accelerator("cpu_scalar");
  QuantizedModel q(*p.float_model, p.recipe, p.resolution, p.calibration, *acc);
  const Graph qg = qdq_graph(q);
  const auto conv =
      std::find_if(qg.nodes.begin(), qg.nodes.end(), [](const Node& n) { return n.name == "dw"; });
  ASSERT_NE(conv, qg.nodes.end());
  EXPECT_EQ(conv->input(0), "dw.input_dequantized");
  EXPECT_EQ(conv->input(1), "dw.weight_dequantized");
  // dw hands int8 codes on (the int8 path): its bias is int32 at sx * sw[o], as it runs.
  EXPECT_EQ(conv->input(2), "dw.bias_dequantized");
  const Tensor& bias = qg.initializers.at("dw.bias_quantized");
  EXPECT_EQ(bias.type(), ElementType::int32);
  ASSERT_EQ(bias.size(), 8);
  EXPECT_EQ(0, std::memcmp(bias.data(), q.layers()[1].bias_i32.data(), bias.byte_size()));
  const Tensor& codes = qg.initializers.at("dw.weight_quantized");
  EXPECT_EQ(codes.shape(), (Shape{8, 1, 3, 3}));
  EXPECT_EQ(codes.type(), ElementType::int8);
  EXPECT_EQ(0, std::memcmp(codes.data(), q.layers()[1].b_codes.data(), codes.byte_size()));
  EXPECT_EQ(qg.initializers.at("dw.weight_scale").shape(), Shape{8});
  const auto dq = std::find_if(qg.nodes.begin(), qg.nodes.end(),
                               [](const Node& n) { return n.name == "dw/weight_dequantize"; });
  ASSERT_NE(dq, qg.nodes.end());
  EXPECT_EQ(dq->attr_int_or("axis", -1), 0);
  // The export runs in qforge's float executor and predicts what the quantized model does:
  // every difference is float rounding of the same codes (docs/MODEL.md, "QDQ export").
  const Executor exported(import_onnx_bytes(export_qdq_onnx_bytes(q), "small_cnn_qdq"));
  const TensorMap batch = batches(g, graph, 1)[0];
  EXPECT_GT(sqnr_db(q.run(batch).at("y"), exported.run(batch).at("y")), 60.0);
}

TEST(QuantizedConv, RefusesWhatCoreConvolutionCannotRunNamingTheNode) {
  SCOPED_TRACE(test::seed_text());
  auto g = test::rng(25);
  const Graph graph = small_cnn(g);
  auto acc = accelerator("cpu_scalar");
  auto expect_refused = [&](LayerQuantization layer, const std::string& words) {
    SCOPED_TRACE(words);
    Prepared p = prepare(graph, conv_recipe(layer), batches(g, graph, 1));
    try {
      QuantizedModel q(*p.float_model, p.recipe, p.resolution, p.calibration, *acc);
      ADD_FAILURE() << "accepted; expected: " << words;
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_EQ(e.code(), ErrorCode::unsupported);
      EXPECT_NE(what.find(words), std::string::npos) << what;
      EXPECT_NE(what.find("Conv 'conv1'"), std::string::npos) << what;
      EXPECT_NE(what.find("'layers'"), std::string::npos) << what;
    }
  };
  LayerQuantization int4 = minmax_layer();
  int4.weights->dtype = DType::int4;
  expect_refused(int4, "int8 or uint8 weights");
  LayerQuantization blocks = minmax_layer();
  blocks.weights->granularity = Granularity::block;
  expect_refused(blocks, "block-wise");
  LayerQuantization int16 = minmax_layer();
  int16.activations->dtype = DType::int16;
  int16.activations->mapping = Mapping::symmetric;
  expect_refused(int16, "int8 or uint8 activations");
  LayerQuantization axis1 = minmax_layer();
  axis1.weights->axis = 1;
  expect_refused(axis1, "axis 1");
  LayerQuantization weight_only = minmax_layer();
  weight_only.activations.reset();
  expect_refused(weight_only, "weight-only");

  // A 1-D convolution: core's is 2-D.
  OnnxBuilder b(17);
  b.input("x", F, {1, 2, 7}).output("y", F, {1, 3, 5});
  b.initializer("W", {3, 2, 3}, weights(g, 6, 18));
  b.node("Conv", {"x", "W"}, {"y"}, "conv1");
  Prepared p = prepare(import_onnx_bytes(b.bytes(), "conv1d"), conv_recipe(minmax_layer()),
                       batches(g, import_onnx_bytes(b.bytes(), "conv1d"), 1));
  try {
    QuantizedModel q(*p.float_model, p.recipe, p.resolution, p.calibration, *acc);
    ADD_FAILURE() << "a 1-D Conv was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("2-D"), std::string::npos) << e.what();
  }
}

TEST(QuantizedConv, AnOptionalRuleLeavesWhatItCannotRunInFloat) {
  SCOPED_TRACE(test::seed_text());
  auto g = test::rng(26);
  const Graph graph = small_cnn(g);
  // int16 activations: Gemm takes them, core's convolution does not.
  LayerQuantization int16 = minmax_layer();
  int16.activations->dtype = DType::int16;
  int16.activations->mapping = Mapping::symmetric;
  const auto data = batches(g, graph, kCalibrationBatches);
  Prepared p = prepare(graph, conv_recipe(int16, /*optional=*/true), data);
  auto acc = accelerator("cpu_scalar");
  QuantizedModel q(*p.float_model, p.recipe, p.resolution, p.calibration, *acc);
  ASSERT_EQ(q.skipped().size(), 3u);
  EXPECT_EQ(q.skipped()[0].name, "conv1");
  EXPECT_NE(q.skipped()[0].reason.find("int8 or uint8 activations"), std::string::npos)
      << q.skipped()[0].reason;
  ASSERT_EQ(q.layers().size(), 1u);
  EXPECT_EQ(q.layers()[0].name, "fc");
}

}  // namespace
}  // namespace qforge::model
