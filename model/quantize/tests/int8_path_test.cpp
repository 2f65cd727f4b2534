// The int8 path between static layers (QuantizedLayerInfo::int8_output): a chain of convs with
// a fused Relu and Clip, MaxPools (one padded) and a Flatten before a Gemm keeps its activations as
// codes, and its result equals, bit for bit, running the layers one at a time the QDQ way: quantize
// the float input, the layer's qlinear_conv at the next layer's input params, dequantize, the
// float MaxPool / Flatten, quantize again. What the path does not cover keeps float.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "fixtures.h"
#include "qforge/error.h"
#include "qforge/model/layer_report.h"
#include "qforge/model/qdq_export.h"
#include "qforge/reference.h"

namespace qforge::model {
namespace {

using namespace qtest;

// x [2, C, 10, 10] -> Conv "c1" (8 x 3x3, pads 1, bias) -> Relu -> MaxPool 2x2/2      [2, 8, 5, 5]
//   -> Conv "dw" (depthwise, group 8, pads 1, bias) -> Clip [0, 0.5]
//   -> Conv "pw" (12 x 1x1, bias, no Relu) -> MaxPool 3x3/2 pads 1                   [2, 12, 3, 3]
//   -> Flatten -> Gemm "fc" (bias) -> y [2, 6]
// With C = 1 the quantized input's NCHW codes are NHWC codes: the chain runs NHWC.
Graph chain_cnn(std::mt19937_64& g, std::int64_t channels = 3) {
  OnnxBuilder b(17);
  b.input("x", F, {2, channels, 10, 10}).output("y", F, {2, 6});
  b.initializer("W1", {8, channels, 3, 3}, weights(g, channels * 9, 8 * channels * 9));
  b.initializer("B1", {8}, weights(g, 4, 8));
  b.initializer("W2", {8, 1, 3, 3}, weights(g, 9, 8 * 9));
  b.initializer("B2", {8}, weights(g, 4, 8));
  b.initializer("W3", {12, 8, 1, 1}, weights(g, 8, 12 * 8));
  b.initializer("B3", {12}, weights(g, 4, 12));
  b.initializer("Wf", {108, 6}, weights(g, 108, 108 * 6));
  b.initializer("Bf", {6}, weights(g, 4, 6));
  OnnxBuilder::attr(b.node("Conv", {"x", "W1", "B1"}, {"c1"}, "c1"), "pads",
                    std::vector<std::int64_t>{1, 1, 1, 1});
  b.node("Relu", {"c1"}, {"r1"}, "relu1");
  auto& p1 = b.node("MaxPool", {"r1"}, {"p1"}, "pool1");
  OnnxBuilder::attr(p1, "kernel_shape", std::vector<std::int64_t>{2, 2});
  OnnxBuilder::attr(p1, "strides", std::vector<std::int64_t>{2, 2});
  auto& dw = b.node("Conv", {"p1", "W2", "B2"}, {"c2"}, "dw");
  OnnxBuilder::attr(dw, "group", std::int64_t{8});
  OnnxBuilder::attr(dw, "pads", std::vector<std::int64_t>{1, 1, 1, 1});
  b.initializer("clip_lo", {}, {0.0f});
  b.initializer("clip_hi", {}, {0.5f});
  b.node("Clip", {"c2", "clip_lo", "clip_hi"}, {"r2"}, "clip2");
  b.node("Conv", {"r2", "W3", "B3"}, {"c3"}, "pw");
  auto& p2 = b.node("MaxPool", {"c3"}, {"p2"}, "pool2");
  OnnxBuilder::attr(p2, "kernel_shape", std::vector<std::int64_t>{3, 3});
  OnnxBuilder::attr(p2, "strides", std::vector<std::int64_t>{2, 2});
  OnnxBuilder::attr(p2, "pads", std::vector<std::int64_t>{1, 1, 1, 1});
  b.node("Flatten", {"p2"}, {"f"}, "flatten");
  b.node("Gemm", {"f", "Wf", "Bf"}, {"y"}, "fc");
  return import_onnx_bytes(b.bytes(), "chain_cnn");
}

Recipe all_layers(LayerQuantization layer) {
  Recipe r;
  r.rules.push_back(
      {.label = "layers", .match = {.op_types = {"Conv", "Gemm"}}, .quantize = layer});
  return r;
}

LayerQuantization uint8_layer() {
  LayerQuantization q = minmax_layer();
  q.activations->dtype = DType::uint8;
  return q;
}

// Float 2-D MaxPool over NCHW, padding never chosen (ONNX's -inf).
std::vector<float> max_pool(std::span<const float> x, std::int64_t planes, std::int64_t h,
                            std::int64_t w, std::int64_t k, std::int64_t stride, std::int64_t pad) {
  const std::int64_t oh_n = (h + 2 * pad - k) / stride + 1, ow_n = (w + 2 * pad - k) / stride + 1;
  std::vector<float> y;
  for (std::int64_t p = 0; p < planes; ++p)
    for (std::int64_t oh = 0; oh < oh_n; ++oh)
      for (std::int64_t ow = 0; ow < ow_n; ++ow) {
        float m = -std::numeric_limits<float>::infinity();
        for (std::int64_t i = 0; i < k; ++i)
          for (std::int64_t j = 0; j < k; ++j) {
            const std::int64_t ih = oh * stride - pad + i, iw = ow * stride - pad + j;
            if (ih >= 0 && ih < h && iw >= 0 && iw < w) m = std::max(m, x[(p * h + ih) * w + iw]);
          }
        y.push_back(m);
      }
  return y;
}

std::vector<std::byte> quantize(std::span<const float> x, const QuantizationParams& p) {
  std::vector<std::byte> q(x.size() * (p.dtype() == DType::int16 ? 2 : 1));
  reference::quantize(QuantizeDesc{{static_cast<std::int64_t>(x.size())}, p}, x.data(), q.data());
  return q;
}

std::vector<float> dequantize(std::span<const std::byte> q, const QuantizationParams& p) {
  std::vector<float> x(q.size());
  reference::dequantize(QuantizeDesc{{static_cast<std::int64_t>(q.size())}, p}, q.data(), x.data());
  return x;
}

// One conv layer as its own QDQ node: qlinear_conv of the codes at the layer's input params,
// with the output params of the layer that reads it, then dequantize.
std::vector<float> conv_layer(const QuantizedLayerInfo& l, std::span<const std::byte> xq) {
  ConvDesc d = *l.conv;
  d.y_params = *l.int8_output;
  d.bias = ConvBias::int32;
  std::vector<std::int32_t> bias;
  for (std::int64_t o = 0; o < d.out_channels; ++o)
    bias.push_back(static_cast<std::int32_t>(
        std::nearbyint(static_cast<double>(l.bias.at(static_cast<std::size_t>(o))) /
                       (static_cast<double>(d.x_params.scale()) *
                        static_cast<double>(d.w_params.scale(static_cast<std::size_t>(o)))))));
  EXPECT_EQ(bias, l.bias_i32);
  std::vector<std::byte> y(static_cast<std::size_t>(element_count(d.y_shape())));
  reference::qlinear_conv(d, xq.data(), l.b_codes.data(), bias.data(), y.data());
  return dequantize(y, d.y_params.value());
}

const QuantizedLayerInfo& layer(const QuantizedModel& q, const std::string& name) {
  for (const QuantizedLayerInfo& l : q.layers())
    if (l.name == name) return l;
  throw Error(ErrorCode::invalid_argument, "no layer " + name);
}

TEST(Int8Path, ChainEqualsTheLayersOneByOneBitForBit) {
  SCOPED_TRACE(test::seed_text());
  auto g = test::rng(31);
  auto scalar = accelerator("cpu_scalar");
  ASSERT_TRUE(scalar);
  auto x86 = accelerator("cpu_x86");
  for (const std::int64_t channels : {3, 1})
    for (const LayerQuantization& lq : {minmax_layer(), uint8_layer()}) {
      SCOPED_TRACE("input channels " + std::to_string(channels));
      const Graph graph = chain_cnn(g, channels);
      const auto data = batches(g, graph, kCalibrationBatches);
      SCOPED_TRACE(describe(std::optional<LayerQuantization>(lq)));
      Prepared p = prepare(graph, all_layers(lq), data);
      for (Accelerator* acc : {scalar.get(), x86.get()}) {
        if (!acc) continue;
        SCOPED_TRACE(acc == scalar.get() ? "cpu_scalar" : "cpu_x86");
        QuantizedModel q(*p.float_model, p.recipe, p.resolution, p.calibration, *acc);
        const QuantizedLayerInfo &c1 = layer(q, "c1"), &dw = layer(q, "dw"), &pw = layer(q, "pw"),
                                 &fc = layer(q, "fc");
        // Every conv hands codes on; the Gemm's output is the graph's, float.
        for (const QuantizedLayerInfo* l : {&c1, &dw, &pw}) ASSERT_TRUE(l->int8_output) << l->name;
        EXPECT_FALSE(c1.int8_input);
        EXPECT_TRUE(dw.int8_input && pw.int8_input && fc.int8_input);
        EXPECT_FALSE(fc.int8_output);
        EXPECT_EQ(dw.conv->activation, ConvActivation::clamp);
        EXPECT_EQ(dw.output, "r2");
        EXPECT_EQ(*c1.int8_output, *dw.a_params);
        EXPECT_EQ(*dw.int8_output, *pw.a_params);
        EXPECT_EQ(*pw.int8_output, *fc.a_params);
        for (const QuantizedLayerInfo* l : {&c1, &dw, &pw, &fc})
          EXPECT_EQ(l->nhwc, channels == 1) << l->name;

        // A wider range than calibration saw: every layer saturates somewhere.
        TensorMap batch = batches(g, graph, 1)[0];
        for (float& v : batch.at("x").values<float>()) v *= 1.5f;
        const TensorMap got = q.run(batch, {"p1", "r2", "f"});

        const auto x = batch.at("x").values<float>();
        const std::vector<float> r1 = conv_layer(c1, quantize(x, *c1.a_params));
        const std::vector<float> p1 = max_pool(r1, 2 * 8, 10, 10, 2, 2, 0);
        const std::vector<float> r2 = conv_layer(dw, quantize(p1, *dw.a_params));
        const std::vector<float> c3 = conv_layer(pw, quantize(r2, *pw.a_params));
        const std::vector<float> f = max_pool(c3, 2 * 12, 5, 5, 3, 2, 1);
        const std::vector<std::byte> fq = quantize(f, *fc.a_params);
        MatmulDesc md{.m = 2,
                      .n = 6,
                      .k = 108,
                      .a = *fc.a_params,
                      .b = fc.b_params,
                      .b_layout = fc.b_layout,
                      .has_bias = true};
        std::vector<float> y(12);
        reference::matmul_dequant(md, fq.data(), fc.b_codes.data(), fc.bias.data(), y.data());

        // The kept tensors of the path come back as the values their codes stand for.
        for (const auto& [name, want] :
             {std::pair<std::string, const std::vector<float>*>{"p1", &p1},
              {"r2", &r2},
              {"f", &f}}) {
          SCOPED_TRACE(name);
          const auto v = got.at(name).values<float>();
          ASSERT_EQ(v.size(), want->size());
          EXPECT_EQ(0, std::memcmp(v.data(), want->data(), v.size() * sizeof(float)));
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
      }
    }
}

TEST(Int8Path, TheReportShowsWhereCodesFlow) {
  SCOPED_TRACE(test::seed_text());
  auto g = test::rng(32);
  const Graph graph = chain_cnn(g);
  const auto data = batches(g, graph, 4);
  auto acc = accelerator("cpu_scalar");
  Prepared p = prepare(graph, all_layers(minmax_layer()), data);
  QuantizedModel q(*p.float_model, p.recipe, p.resolution, p.calibration, *acc);
  const ModelReport report = layer_report(*p.float_model, q, std::span(data).first(1));
  ASSERT_EQ(report.layers.size(), 4u);
  EXPECT_EQ(report.layers[0].path, "float->int8");
  EXPECT_EQ(report.layers[1].path, "int8->int8");
  EXPECT_EQ(report.layers[3].path, "int8->float");
  // One input channel: the chain runs NHWC, and says so.
  const Graph one = chain_cnn(g, 1);
  const auto one_data = batches(g, one, 4);
  Prepared p1 = prepare(one, all_layers(minmax_layer()), one_data);
  QuantizedModel q1(*p1.float_model, p1.recipe, p1.resolution, p1.calibration, *acc);
  const ModelReport r1 = layer_report(*p1.float_model, q1, std::span(one_data).first(1));
  EXPECT_EQ(r1.layers[0].path, "float->int8 nhwc");
  EXPECT_EQ(r1.layers[3].path, "int8->float nhwc");
  EXPECT_NE(format_report(report).find("int8->int8"), std::string::npos);
  EXPECT_NE(report_to_json(report).find("\"path\": \"float->int8\""), std::string::npos);
}

// The int8 path (its int32 biases, NCHW and NHWC chains) needs no plan: a model built without
// plans exports the same QDQ bytes.
TEST(Int8Path, WithoutPlansTheQdqExportIsTheSame) {
  SCOPED_TRACE(test::seed_text());
  auto g = test::rng(33);
  auto acc = accelerator("cpu_scalar");
  ASSERT_TRUE(acc);
  for (const std::int64_t channels : {3, 1}) {
    SCOPED_TRACE("input channels " + std::to_string(channels));
    const Graph graph = chain_cnn(g, channels);
    Prepared p = prepare(graph, all_layers(minmax_layer()), batches(g, graph, 4));
    const QuantizedModel planned(*p.float_model, p.recipe, p.resolution, p.calibration, *acc);
    const QuantizedModel bare(*p.float_model, p.recipe, p.resolution, p.calibration,
                              QuantizedModel::without_plans);
    ASSERT_TRUE(layer(bare, "c1").int8_output);
    EXPECT_EQ(layer(bare, "fc").nhwc, channels == 1);
    EXPECT_EQ(export_qdq_onnx_bytes(bare), export_qdq_onnx_bytes(planned));
  }
}

TEST(Int8Path, FloatConsumersAndDynamicLayersKeepFloat) {
  SCOPED_TRACE(test::seed_text());
  auto g = test::rng(33);
  const Graph graph = chain_cnn(g);
  const auto data = batches(g, graph, 4);
  auto acc = accelerator("cpu_scalar");
  // Only the convs quantized: the last one feeds a float Gemm, so it dequantizes.
  Recipe convs;
  convs.rules.push_back(
      {.label = "convs", .match = {.op_types = {"Conv"}}, .quantize = minmax_layer()});
  Prepared p = prepare(graph, convs, data);
  QuantizedModel q(*p.float_model, p.recipe, p.resolution, p.calibration, *acc);
  EXPECT_TRUE(layer(q, "c1").int8_output);
  EXPECT_FALSE(layer(q, "pw").int8_output);
  EXPECT_TRUE(layer(q, "pw").int8_input);
  const TensorMap batch = batches(g, graph, 1)[0];
  EXPECT_GT(sqnr_db(p.float_model->run(batch).at("y"), q.run(batch).at("y")), 20.0);
  // Dynamic activations have no params to hand codes on with.
  Prepared d = prepare(graph, all_layers(dynamic_layer()), data);
  QuantizedModel qd(*d.float_model, d.recipe, d.resolution, d.calibration, *acc);
  for (const QuantizedLayerInfo& l : qd.layers()) {
    EXPECT_FALSE(l.int8_output) << l.name;
    EXPECT_FALSE(l.int8_input) << l.name;
  }
}

}  // namespace
}  // namespace qforge::model
