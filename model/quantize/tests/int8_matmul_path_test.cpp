// The int8 path between quantized MatMul and Gemm layers: a Gemm whose output a Relu or Clip
// alone reads, followed by another static layer, runs qlinear_matmul with an int32 bias at
// sa * sb[n] and the activation as the clamp of its codes; its result equals, bit for bit,
// running the layers one at a time with core's reference.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "fixtures.h"
#include "qforge/error.h"
#include "qforge/reference.h"

namespace qforge::model {
namespace {

using namespace qtest;

// x [4, 20] -> Gemm "g1" (transB, bias) -> Relu -> Gemm "g2" (bias, beta 0.5) -> Clip [0, 0.8]
//   -> MatMul "g3" -> y [4, 5]
Graph chain_mlp(std::mt19937_64& g) {
  OnnxBuilder b(17);
  b.input("x", F, {4, 20}).output("y", F, {4, 5});
  b.initializer("W1", {24, 20}, weights(g, 20, 24 * 20));
  b.initializer("B1", {24}, weights(g, 4, 24));
  b.initializer("W2", {24, 16}, weights(g, 24, 24 * 16));
  b.initializer("B2", {16}, weights(g, 4, 16));
  b.initializer("W3", {16, 5}, weights(g, 16, 16 * 5));
  b.initializer("clip_lo", {}, {0.0f});
  b.initializer("clip_hi", {}, {0.8f});
  OnnxBuilder::attr(b.node("Gemm", {"x", "W1", "B1"}, {"h1"}, "g1"), "transB", std::int64_t{1});
  b.node("Relu", {"h1"}, {"r1"}, "relu1");
  OnnxBuilder::attr(b.node("Gemm", {"r1", "W2", "B2"}, {"h2"}, "g2"), "beta", 0.5f);
  b.node("Clip", {"h2", "clip_lo", "clip_hi"}, {"r2"}, "clip2");
  b.node("MatMul", {"r2", "W3"}, {"y"}, "g3");
  return import_onnx_bytes(b.bytes(), "chain_mlp");
}

Recipe all_matmuls(LayerQuantization layer) {
  Recipe r;
  r.rules.push_back(
      {.label = "layers", .match = {.op_types = {"Gemm", "MatMul"}}, .quantize = layer});
  return r;
}

std::vector<std::byte> quantize(std::span<const float> x, const QuantizationParams& p) {
  std::vector<std::byte> q(x.size());
  reference::quantize(QuantizeDesc{{static_cast<std::int64_t>(x.size())}, p}, x.data(), q.data());
  return q;
}

std::vector<float> dequantize(std::span<const std::byte> q, const QuantizationParams& p) {
  std::vector<float> x(q.size());
  reference::dequantize(QuantizeDesc{{static_cast<std::int64_t>(q.size())}, p}, q.data(), x.data());
  return x;
}

const QuantizedLayerInfo& layer(const QuantizedModel& q, const std::string& name) {
  for (const QuantizedLayerInfo& l : q.layers())
    if (l.name == name) return l;
  throw Error(ErrorCode::invalid_argument, "no layer " + name);
}

// One Gemm of the path as its own node: its int32 bias recomputed from the float bias, then
// qlinear_matmul of the codes at the layer's input params with the next layer's input params.
std::vector<std::byte> qlinear_layer(const QuantizedLayerInfo& l, std::span<const std::byte> aq,
                                     std::int64_t m, ConvActivation act) {
  MatmulDesc d{.m = m,
               .n = l.n,
               .k = l.k,
               .a = *l.a_params,
               .b = l.b_params,
               .b_layout = l.b_layout,
               .has_bias = true,
               .y = *l.int8_output};
  d.activation = act;
  if (act == ConvActivation::clamp) d.clamp_min = 0.0f, d.clamp_max = 0.8f;
  std::vector<std::int32_t> bias;
  for (std::int64_t n = 0; n < l.n; ++n)
    bias.push_back(static_cast<std::int32_t>(
        std::nearbyint(static_cast<double>(l.bias.at(static_cast<std::size_t>(n))) /
                       (static_cast<double>(d.a.scale()) *
                        static_cast<double>(d.b.scale(d.b.count() == 1 ? 0 : n))))));
  EXPECT_EQ(bias, l.bias_i32) << l.name;
  EXPECT_EQ(l.matmul->activation, act) << l.name;
  std::vector<std::byte> y(static_cast<std::size_t>(m * l.n));
  reference::qlinear_matmul(d, aq.data(), l.b_codes.data(), bias.data(), y.data());
  return y;
}

TEST(Int8MatmulPath, ChainEqualsTheLayersOneByOneBitForBit) {
  SCOPED_TRACE(test::seed_text());
  auto g = test::rng(41);
  auto scalar = accelerator("cpu_scalar");
  ASSERT_TRUE(scalar);
  auto x86 = accelerator("cpu_x86");
  const Graph graph = chain_mlp(g);
  const auto data = batches(g, graph, kCalibrationBatches);
  LayerQuantization u8 = minmax_layer();
  u8.activations->dtype = DType::uint8;
  for (const LayerQuantization& lq : {minmax_layer(), u8}) {
    SCOPED_TRACE(describe(std::optional<LayerQuantization>(lq)));
    Prepared p = prepare(graph, all_matmuls(lq), data);
    for (Accelerator* acc : {scalar.get(), x86.get()}) {
      if (!acc) continue;
      SCOPED_TRACE(acc == scalar.get() ? "cpu_scalar" : "cpu_x86");
      QuantizedModel q(*p.float_model, p.recipe, p.resolution, p.calibration, *acc);
      const QuantizedLayerInfo &g1 = layer(q, "g1"), &g2 = layer(q, "g2"), &g3 = layer(q, "g3");
      ASSERT_TRUE(g1.int8_output && g2.int8_output);
      EXPECT_FALSE(g3.int8_output);
      EXPECT_FALSE(g1.int8_input);
      EXPECT_TRUE(g2.int8_input && g3.int8_input);
      EXPECT_EQ(*g1.int8_output, *g2.a_params);
      EXPECT_EQ(*g2.int8_output, *g3.a_params);
      EXPECT_EQ(g1.output, "r1");
      EXPECT_EQ(g2.output, "r2");

      // A wider range than calibration saw: every layer saturates somewhere.
      TensorMap batch = batches(g, graph, 1)[0];
      for (float& v : batch.at("x").values<float>()) v *= 1.5f;
      const TensorMap got = q.run(batch, {"r1", "r2"});

      const auto x = batch.at("x").values<float>();
      const auto r1 = qlinear_layer(g1, quantize(x, *g1.a_params), 4, ConvActivation::relu);
      const auto r2 = qlinear_layer(g2, r1, 4, ConvActivation::clamp);
      MatmulDesc md{.m = 4, .n = 5, .k = 16, .a = *g3.a_params, .b = g3.b_params};
      std::vector<float> y(20);
      reference::matmul_dequant(md, r2.data(), g3.b_codes.data(), nullptr, y.data());

      for (const auto& [name, want] :
           {std::pair{std::string("r1"), dequantize(r1, *g2.a_params)},
            std::pair{std::string("r2"), dequantize(r2, *g3.a_params)}}) {
        SCOPED_TRACE(name);
        const auto v = got.at(name).values<float>();
        ASSERT_EQ(v.size(), want.size());
        EXPECT_EQ(0, std::memcmp(v.data(), want.data(), v.size() * sizeof(float)));
      }
      const auto gy = got.at("y").values<float>();
      ASSERT_EQ(gy.size(), y.size());
      if (acc == scalar.get()) {
        EXPECT_EQ(0, std::memcmp(gy.data(), y.data(), y.size() * sizeof(float)));
      } else {
        // Another plugin's float epilogue may sum in another order.
        for (std::size_t i = 0; i < y.size(); ++i)
          EXPECT_NEAR(gy[i], y[i], 1e-5f * (1.0f + std::abs(y[i]))) << "at " << i;
      }
      // Close to the float model on data in the calibrated range (the batch above saturates
      // on purpose, and its 20 outputs are too few for a stable figure).
      TensorMap within = batches(g, graph, 1)[0];
      EXPECT_GT(sqnr_db(p.float_model->run(within).at("y"), q.run(within).at("y")), 10.0);
    }
  }
}

TEST(Int8MatmulPath, AGemmFeedingFloatOrAGraphOutputKeepsFloat) {
  SCOPED_TRACE(test::seed_text());
  auto g = test::rng(42);
  const Graph graph = chain_mlp(g);
  const auto data = batches(g, graph, 4);
  auto acc = accelerator("cpu_scalar");
  // g3 float: g2 dequantizes, its Clip runs in float.
  Recipe two;
  two.rules.push_back(
      {.label = "g1g2", .match = {.name_regex = "^g[12]$"}, .quantize = minmax_layer()});
  Prepared p = prepare(graph, two, data);
  QuantizedModel q(*p.float_model, p.recipe, p.resolution, p.calibration, *acc);
  EXPECT_TRUE(layer(q, "g1").int8_output);
  EXPECT_FALSE(layer(q, "g2").int8_output);
  EXPECT_EQ(layer(q, "g2").matmul->activation, ConvActivation::none);
  EXPECT_EQ(layer(q, "g2").output, "h2");
  const TensorMap batch = batches(g, graph, 1)[0];
  EXPECT_GT(sqnr_db(p.float_model->run(batch).at("y"), q.run(batch).at("y")), 15.0);
}

}  // namespace
}  // namespace qforge::model
