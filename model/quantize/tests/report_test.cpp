// The per-layer report: SQNR against float, weight bytes, the kernel that ran each layer and
// its median time, as text and as JSON.
#include <gtest/gtest.h>

#include <limits>
#include <nlohmann/json.hpp>
#include <string>

#include "fixtures.h"
#include "qforge/error.h"
#include "qforge/model/layer_report.h"

namespace qforge::model {
namespace {

using namespace qtest;

TEST(LayerReport, ComparesEveryQuantizedLayerWithFloat) {
  SCOPED_TRACE(test::seed_text());
  auto g = test::rng(30);
  const MlpShape s;
  const Graph graph = gemm_mlp(g, s);
  Recipe r = matmul_recipe(minmax_layer());
  r.rules.insert(
      r.rules.begin(),
      {.label = "last dynamic", .match = {.name_regex = "^fc2$"}, .quantize = dynamic_layer()});
  Prepared p = prepare(graph, r, batches(g, graph, kCalibrationBatches));
  auto acc = accelerator("cpu_scalar");
  QuantizedModel q(*p.float_model, p.recipe, p.resolution, p.calibration, *acc);
  const auto data = batches(g, graph, 2);
  const ModelReport report = layer_report(*p.float_model, q, data, {.timed_runs = 3});

  ASSERT_EQ(report.layers.size(), 2u);
  EXPECT_EQ(report.batches, 2u);
  const LayerReport& fc1 = report.layers[0];
  EXPECT_EQ(fc1.node, "fc1");
  EXPECT_EQ(fc1.mode, "static");
  EXPECT_EQ(report.layers[1].mode, "dynamic");
  EXPECT_GT(fc1.sqnr_db, 30.0);
  EXPECT_GT(report.layers[1].sqnr_db, 30.0);
  // int8 symmetric per channel: one byte per weight and one float scale per output column.
  EXPECT_EQ(fc1.float_weight_bytes, static_cast<std::size_t>(s.in * s.hidden * 4));
  EXPECT_EQ(fc1.quantized_weight_bytes, static_cast<std::size_t>(s.in * s.hidden + s.hidden * 4));
  for (const LayerReport& l : report.layers) {
    EXPECT_EQ(l.backend, "cpu_scalar");
    EXPECT_GT(l.median_seconds, 0.0);
  }
  // The report's figure for fc1 is the SQNR of its output over both batches.
  double signal = 0, noise = 0;
  for (const TensorMap& b : data) {
    const TensorMap float_out = p.float_model->run(b, {"h"}), quant_out = q.run(b, {"h"});
    const auto want = float_out.at("h").values<float>(), got = quant_out.at("h").values<float>();
    for (std::size_t i = 0; i < want.size(); ++i) {
      signal += double(want[i]) * want[i];
      noise += (double(want[i]) - got[i]) * (double(want[i]) - got[i]);
    }
  }
  EXPECT_NEAR(fc1.sqnr_db, 10 * std::log10(signal / noise), 1e-9);
  ASSERT_EQ(report.outputs.size(), 1u);
  EXPECT_EQ(report.outputs[0].tensor, "y");
  EXPECT_GT(report.outputs[0].sqnr_db, 30.0);

  const std::string text = format_report(report);
  EXPECT_NE(text.find("fc1"), std::string::npos) << text;
  EXPECT_NE(text.find("cpu_scalar"), std::string::npos) << text;
  EXPECT_NE(text.find("output y"), std::string::npos) << text;

  const auto json = nlohmann::json::parse(report_to_json(report));
  ASSERT_EQ(json.at("layers").size(), 2u);
  EXPECT_EQ(json.at("layers")[0].at("node"), "fc1");
  EXPECT_NEAR(json.at("layers")[0].at("sqnr_db").get<double>(), fc1.sqnr_db, 1e-9);
  EXPECT_EQ(json.at("layers")[1].at("mode"), "dynamic");
  EXPECT_EQ(json.at("timed_runs"), 3);
}

TEST(LayerReport, ListsNodesLeftInFloatAndChecksItsArguments) {
  SCOPED_TRACE(test::seed_text());
  auto g = test::rng(31);
  const Graph graph = gemm_mlp(g, {});
  Recipe r;
  r.default_quantize = LayerQuantization{};  // reaches Relu too, which stays float
  Prepared p = prepare(graph, r, batches(g, graph, 2));
  auto acc = accelerator("cpu_scalar");
  QuantizedModel q(*p.float_model, p.recipe, p.resolution, p.calibration, *acc);
  ASSERT_EQ(q.skipped().size(), 1u);
  EXPECT_EQ(q.skipped()[0].name, "relu");
  const auto data = batches(g, graph, 1);
  const ModelReport report = layer_report(*p.float_model, q, data, {.timed_runs = 1});
  EXPECT_EQ(report.skipped.size(), 1u);
  EXPECT_NE(format_report(report).find("relu"), std::string::npos);
  EXPECT_THROW(layer_report(*p.float_model, q, {}), Error);
  EXPECT_THROW(layer_report(*p.float_model, q, data, {.timed_runs = 0}), Error);
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(LayerReport, ChartsTheSqnrOfEachLayerAndOutputWithNamesEscaped) {
  ModelReport report;
  report.batches = 4;
  report.layers.push_back(
      {.node = "fc<1>&\"x\"", .op_type = "Gemm", .mode = "static", .sqnr_db = 37.5});
  report.layers.push_back({.node = "fc2",
                           .op_type = "MatMul",
                           .mode = "dynamic",
                           .sqnr_db = std::numeric_limits<double>::infinity()});
  report.layers.push_back({.node = "bad", .op_type = "Gemm", .mode = "static", .sqnr_db = -3});
  report.outputs.push_back({.tensor = "logits", .sqnr_db = 31.25});
  const std::string svg = report_to_svg(report);

  EXPECT_EQ(svg.rfind("<svg ", 0), 0u);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  EXPECT_NE(svg.find("fc&lt;1&gt;&amp;&quot;x&quot;"), std::string::npos);
  EXPECT_EQ(svg.find("fc<1>"), std::string::npos);
  // A background rectangle, then one bar per layer and per output.
  EXPECT_EQ(count(svg, "<rect "), 1u + 4u);
  EXPECT_NE(svg.find(">37.5 dB<"), std::string::npos);
  EXPECT_NE(svg.find(">exact<"), std::string::npos);
  EXPECT_NE(svg.find(">31.2 dB<"), std::string::npos);
  // The axis ends at the next 10 dB above the largest finite value: ticks 0..40.
  EXPECT_NE(svg.find(">40</text>"), std::string::npos);
  EXPECT_EQ(svg.find(">50</text>"), std::string::npos);
  // An exact layer fills the 440-pixel axis; a negative SQNR draws an empty bar.
  EXPECT_NE(svg.find("width=\"440.0\""), std::string::npos);
  EXPECT_NE(svg.find("width=\"0.0\""), std::string::npos);
}

TEST(LayerReport, ChartsAnEmptyReport) {
  const std::string svg = report_to_svg({});
  EXPECT_NE(svg.find("no quantized layer"), std::string::npos);
  EXPECT_EQ(count(svg, "<rect "), 1u);
}

}  // namespace
}  // namespace qforge::model
