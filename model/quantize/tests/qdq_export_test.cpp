// QDQ export: the structure of the exported graph, a round trip through qforge's own importer
// and float executor (outputs within the bound of qdq_bound.h of QuantizedModel::run), atomic
// files, what opset 17 cannot express, and the Q/DQ kernels the round trip relies on.
#include "qforge/model/qdq_export.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "fixtures.h"
#include "qdq_bound.h"
#include "qforge/error.h"
#include "qforge/reference.h"

namespace qforge::model {
namespace {

using namespace qtest;

struct Case {
  const char* name;
  Graph (*graph)(std::mt19937_64&);
  LayerQuantization layer;
};

LayerQuantization uint8_layer() {
  LayerQuantization q = minmax_layer();
  q.weights = WeightQuantization{
      .dtype = DType::uint8, .mapping = Mapping::affine, .granularity = Granularity::per_tensor};
  q.activations->dtype = DType::uint8;
  return q;
}

// Symmetric int8 activations with a scale so small that inputs in [-1, 1] saturate: the
// exported model must give qforge's narrow-range codes (-127, never -128).
LayerQuantization saturating_symmetric_layer() {
  LayerQuantization q;
  q.activations = ActivationQuantization::explicit_symmetric(DType::int8, 0.004f);
  return q;
}

std::vector<Case> cases() {
  return {
      {"gemm transB alpha beta, int8 per-channel, static",
       [](std::mt19937_64& g) { return gemm_mlp(g, {}, true, 0.75f, 1.5f); }, minmax_layer()},
      {"gemm, uint8 per-tensor affine, static", [](std::mt19937_64& g) { return gemm_mlp(g, {}); },
       uint8_layer()},
      {"matmul over tokens, dynamic", [](std::mt19937_64& g) { return matmul_mlp(g, {}); },
       dynamic_layer()},
      {"gemm, int8 symmetric explicit activations that saturate",
       [](std::mt19937_64& g) { return gemm_mlp(g, {}); }, saturating_symmetric_layer()},
  };
}

// A's codes as qforge's layer computed them from its float input (static: the layer's params;
// dynamic: the batch's own, as dynamic_quantize_linear gives them).
ActivationCodes qforge_codes(const QuantizedLayerInfo& l, const Tensor& a) {
  const auto x = a.values<float>();
  ActivationCodes c;
  c.q.resize(x.size());
  if (l.a_params) {
    c.scale = l.a_params->scale();
    c.zero_point = l.a_params->zero_point();
    for (std::size_t i = 0; i < x.size(); ++i)
      c.q[i] = reference::quantize_value(x[i], c.scale, c.zero_point, l.a_params->qmin(),
                                         l.a_params->qmax());
  } else {
    std::vector<std::uint8_t> q(x.size());
    const QuantizationParams p = reference::dynamic_quantize_linear(
        DynamicQuantizeDesc{Shape{a.size()}}, x.data(), q.data());
    c.scale = p.scale();
    c.zero_point = p.zero_point();
    std::copy(q.begin(), q.end(), c.q.begin());
  }
  return c;
}

std::vector<std::int32_t> integers(const Tensor& t) {
  std::vector<std::int32_t> v;
  if (t.type() == ElementType::int8)
    for (auto x : t.values<std::int8_t>()) v.push_back(x);
  else
    for (auto x : t.values<std::uint8_t>()) v.push_back(x);
  return v;
}

// A quantized model on one CPU plugin without tuning (quick and deterministic).
struct Quantized {
  Prepared p;
  std::unique_ptr<Accelerator> acc;
  std::unique_ptr<QuantizedModel> model;
  const QuantizedModel& operator*() const { return *model; }
  const QuantizedModel* operator->() const { return model.get(); }
};

Quantized quantize(const Graph& graph, LayerQuantization layer, std::mt19937_64& g,
                   const std::string& plugin = "cpu_x86") {
  Quantized q;
  q.p = prepare(graph, matmul_recipe(std::move(layer)), batches(g, graph, kCalibrationBatches));
  q.acc = accelerator(plugin);
  if (!q.acc) q.acc = accelerator("cpu_scalar");  // cpu_x86 did not load here
  q.model = std::make_unique<QuantizedModel>(*q.p.float_model, q.p.recipe, q.p.resolution,
                                             q.p.calibration, *q.acc);
  return q;
}

const Node& node_named(const Graph& g, const std::string& name) {
  for (const Node& n : g.nodes)
    if (n.name == name) return n;
  throw std::runtime_error("no node " + name);
}

TEST(QdqExport, GraphWrapsEachLayerInQdq) {
  SCOPED_TRACE(test::seed_text());
  auto g = test::rng(41);
  auto q = quantize(gemm_mlp(g, {}, true, 0.75f, 1.5f), minmax_layer(), g);
  const Graph qg = qdq_graph(*q);
  std::vector<std::string> ops;
  for (const Node& n : qg.nodes) ops.push_back(n.op_type);
  // fc1 is on the int8 path (its Relu feeds fc2): its bias is the int32 one it runs with.
  EXPECT_EQ(ops, (std::vector<std::string>{"QuantizeLinear", "DequantizeLinear", "DequantizeLinear",
                                           "DequantizeLinear", "Gemm", "Relu", "QuantizeLinear",
                                           "DequantizeLinear", "DequantizeLinear", "Gemm"}));
  const QuantizedLayerInfo& fc1 = q->layers()[0];
  ASSERT_TRUE(fc1.int8_output);
  const Node& gemm = node_named(qg, "fc1");
  EXPECT_EQ(gemm.inputs,
            (std::vector<std::string>{"fc1.input_dequantized", "fc1.weight_dequantized",
                                      "fc1.bias_dequantized"}));
  EXPECT_EQ(node_named(qg, "fc2").inputs.at(2), "fc2.bias");  // float output: its float bias
  EXPECT_FALSE(gemm.has_attribute("alpha"));
  EXPECT_FALSE(gemm.has_attribute("beta"));
  EXPECT_EQ(gemm.attr_int("transB"), 1);
  const Tensor& w = qg.initializers.at("fc1.weight_quantized");
  EXPECT_EQ(w.type(), ElementType::int8);
  EXPECT_EQ(w.shape(), (Shape{fc1.n, fc1.k}));  // [N, K] as transB stores it
  EXPECT_EQ(0, std::memcmp(w.data(), fc1.b_codes.data(), w.byte_size()));
  EXPECT_EQ(qg.initializers.at("fc1.weight_scale").shape(), Shape{fc1.n});
  EXPECT_EQ(node_named(qg, "fc1/weight_dequantize").attr_int("axis"), 0);
  const Tensor& bias = qg.initializers.at("fc1.bias_quantized");
  EXPECT_EQ(bias.type(), ElementType::int32);
  EXPECT_TRUE(
      std::equal(fc1.bias_i32.begin(), fc1.bias_i32.end(), bias.values<std::int32_t>().begin()));
  const QuantizedLayerInfo& fc2 = q->layers()[1];
  const Tensor& bias2 = qg.initializers.at("fc2.bias");
  EXPECT_TRUE(std::equal(fc2.bias.begin(), fc2.bias.end(), bias2.values<float>().begin()));
  EXPECT_EQ(qg.initializers.at("fc1.input_scale").values<float>()[0], fc1.a_params->scale());
  // The float weights and biases are gone; nothing else is.
  for (const char* name : {"W1", "W2", "b1", "b2"}) EXPECT_FALSE(qg.initializers.contains(name));
  // The file passes ONNX's checker (inside export) and qforge's importer; the graph also runs
  // as it is, to the same outputs.
  const Graph back = import_onnx_bytes(export_qdq_onnx_bytes(*q), "qdq");
  EXPECT_EQ(back.nodes.size(), qg.nodes.size());
  EXPECT_EQ(back.opset, 17);
  const TensorMap in = batches(g, qg, 1)[0];
  const Tensor direct = Executor(qg).run(in).at("y"), imported = Executor(back).run(in).at("y");
  EXPECT_EQ(0, std::memcmp(direct.data(), imported.data(), direct.byte_size()));
}

TEST(QdqExport, PerChannelAxisFollowsTheWeightLayout) {
  SCOPED_TRACE(test::seed_text());
  auto g = test::rng(42);
  auto q = quantize(matmul_mlp(g, {}), minmax_layer(), g);
  const Graph qg = qdq_graph(*q);
  EXPECT_EQ(node_named(qg, "mm1/weight_dequantize").attr_int("axis"), 1);  // [K, N]
  EXPECT_EQ(qg.initializers.at("mm1.weight_quantized").shape(), (Shape{32, 48}));
  EXPECT_EQ(node_named(qg, "mm1").inputs.size(), 2u);
}

TEST(QdqExport, SymmetricActivationsAreClippedToTheNarrowRange) {
  SCOPED_TRACE(test::seed_text());
  auto g = test::rng(46);
  auto q = quantize(gemm_mlp(g, {}), saturating_symmetric_layer(), g);
  const Graph qg = qdq_graph(*q);
  const Node& clip = node_named(qg, "fc1/input_clip");
  EXPECT_EQ(clip.op_type, "Clip");
  EXPECT_EQ(clip.inputs.at(0), "x");
  EXPECT_EQ(qg.initializers.at(clip.inputs.at(1)).values<float>()[0], -127 * 0.004f);
  EXPECT_EQ(node_named(qg, "fc1/input_quantize").inputs.at(0), clip.outputs.at(0));
  // Affine activations need no Clip.
  auto affine = quantize(gemm_mlp(g, {}), minmax_layer(), g);
  for (const Node& n : qdq_graph(*affine).nodes) EXPECT_NE(n.op_type, "Clip");
}

TEST(QdqExport, DynamicLayersUseDynamicQuantizeLinear) {
  SCOPED_TRACE(test::seed_text());
  auto g = test::rng(43);
  auto q = quantize(matmul_mlp(g, {}), dynamic_layer(), g);
  const Graph qg = qdq_graph(*q);
  const Node& dq = node_named(qg, "mm2/input_quantize");
  EXPECT_EQ(dq.op_type, "DynamicQuantizeLinear");
  EXPECT_EQ(node_named(qg, "mm2/input_dequantize").inputs, dq.outputs);
}

// Importing the exported file and running it in qforge's float executor gives each layer's
// output within qdq_bound.h's bound of QuantizedModel::run, A codes that differ by at most one
// and rarely, and the same graph outputs.
TEST(QdqExport, RoundTripThroughImportMatchesQuantizedModel) {
  SCOPED_TRACE(test::seed_text());
  std::uint64_t salt = 50;
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    auto g = test::rng(++salt);
    auto q = quantize(c.graph(g), c.layer, g);
    const Executor qdq(import_onnx_bytes(export_qdq_onnx_bytes(*q), "qdq"));
    std::vector<std::string> keep_q, keep_x;
    for (const QuantizedLayerInfo& l : q->layers()) {
      keep_q.insert(keep_q.end(), {l.input, l.output});
      keep_x.insert(keep_x.end(), {l.output, l.name + ".input_quantized"});
      if (!l.a_params)
        keep_x.insert(keep_x.end(), {l.name + ".input_scale", l.name + ".input_zero_point"});
    }
    for (const TensorMap& batch : batches(g, q->graph(), 3)) {
      const TensorMap got_q = q->run(batch, keep_q), got_x = qdq.run(batch, keep_x);
      for (const QuantizedLayerInfo& l : q->layers()) {
        SCOPED_TRACE(l.name);
        const ActivationCodes mine = qforge_codes(l, got_q.at(l.input));
        ActivationCodes theirs = mine;
        theirs.q = integers(got_x.at(l.name + ".input_quantized"));
        if (!l.a_params) {
          theirs.scale = got_x.at(l.name + ".input_scale").values<float>()[0];
          theirs.zero_point = got_x.at(l.name + ".input_zero_point").values<std::uint8_t>()[0];
          EXPECT_NEAR(theirs.scale, mine.scale, 1e-5 * mine.scale);
        }
        if (l.int8_output) {
          // The int8 path: qforge's output is already the next layer's codes (its int32 bias
          // rounded to sa * sb[n], then requantized), the export's the float before that
          // layer's QuantizeLinear: they differ by at most one output step.
          const auto a = got_q.at(l.output).values<float>(), b = got_x.at(l.output).values<float>();
          ASSERT_EQ(a.size(), b.size());
          // Codes saturate where the next QuantizeLinear would: compare within that range.
          const QuantizationParams& y = *l.int8_output;
          const float step = y.scale();
          const float lo = reference::dequantize_value(y.qmin(), step, y.zero_point());
          const float hi = reference::dequantize_value(y.qmax(), step, y.zero_point());
          for (std::size_t i = 0; i < a.size(); ++i)
            ASSERT_LE(std::abs(a[i] - std::clamp(b[i], lo, hi)), 1.01f * step) << "at " << i;
          continue;
        }
        const LayerDiff d = compare_layer(l, mine, theirs, got_q.at(l.output).values<float>(),
                                          got_x.at(l.output).values<float>());
        EXPECT_LE(d.max_code_diff, 1);
        EXPECT_LE(d.flipped * 100, d.codes) << d.flipped << " of " << d.codes << " codes differ";
        EXPECT_LE(d.worst_ratio, 1.0) << d.worst;
      }
      for (const ValueInfo& out : q->graph().outputs)
        EXPECT_EQ(got_x.at(out.name).shape(), got_q.at(out.name).shape());
    }
  }
}

// A model built without plans (for export only) exports the same bytes as one with plans, and
// refuses to run.
TEST(QdqExport, WithoutPlansExportsTheSameBytes) {
  SCOPED_TRACE(test::seed_text());
  std::uint64_t salt = 70;
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    auto g = test::rng(++salt);
    auto q = quantize(c.graph(g), c.layer, g);
    const QuantizedModel bare(*q.p.float_model, q.p.recipe, q.p.resolution, q.p.calibration,
                              QuantizedModel::without_plans);
    EXPECT_EQ(export_qdq_onnx_bytes(bare), export_qdq_onnx_bytes(*q));
    ASSERT_EQ(bare.layers().size(), q->layers().size());
    for (const QuantizedLayerInfo& l : bare.layers()) EXPECT_TRUE(l.backend.empty()) << l.name;
    const std::vector<TensorMap> batch = batches(g, q->graph(), 1);
    try {
      (void)bare.run(batch.front());
      ADD_FAILURE() << "run() of a model without plans did not throw";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
      EXPECT_NE(std::string(e.what()).find("without plans"), std::string::npos) << e.what();
    }
  }
}

TEST(QdqExport, WritesTheFileAtomically) {
  SCOPED_TRACE(test::seed_text());
  auto g = test::rng(44);
  auto q = quantize(gemm_mlp(g, {}), minmax_layer(), g);
  const auto dir =
      std::filesystem::temp_directory_path() / ("qforge_qdq_" + std::to_string(test::run_seed()));
  std::filesystem::create_directories(dir);
  const auto path = dir / "model.qdq.onnx";
  export_qdq_onnx(*q, path);
  std::ifstream in(path, std::ios::binary);
  const std::string file((std::istreambuf_iterator<char>(in)), {});
  const auto bytes = export_qdq_onnx_bytes(*q);
  EXPECT_EQ(file.size(), bytes.size());
  EXPECT_EQ(0, std::memcmp(file.data(), bytes.data(), bytes.size()));
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir), {}), 1);  // no temporaries
  EXPECT_THROW(export_qdq_onnx(*q, dir / "missing" / "model.onnx"), Error);
  std::filesystem::remove_all(dir);
}

void expect_refused(const LayerQuantization& layer, const std::string& what) {
  SCOPED_TRACE(test::seed_text());
  auto g = test::rng(45);
  auto q = quantize(gemm_mlp(g, {}), layer, g, "cpu_scalar");  // runs int16 and int4 too
  try {
    qdq_graph(*q);
    ADD_FAILURE() << "exported " << what;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::unsupported);
    EXPECT_NE(std::string(e.what()).find("Gemm 'fc1'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
  }
}

TEST(QdqExport, RefusesWhatOpset17CannotExpress) {
  LayerQuantization block = minmax_layer();
  block.weights = WeightQuantization{.dtype = DType::int4,
                                     .mapping = Mapping::affine,
                                     .granularity = Granularity::block,
                                     .block_size = 16};
  expect_refused(block, "int4");
  block.weights->dtype = DType::int8;
  expect_refused(block, "block-wise");
  LayerQuantization wide = minmax_layer();
  wide.activations->dtype = DType::int16;
  expect_refused(wide, "int16");
}

// The kernels the round trip relies on: per-axis DequantizeLinear, QuantizeLinear's rounding
// and saturation, and DESIGN's DynamicQuantizeLinear example.
TEST(QdqKernels, MatchOnnxSemantics) {
  OnnxBuilder b(17);
  b.input("x", F, {2, 3}).input("d", F, {6});
  b.output("y", F, {2, 3}).output("q", onnx::TensorProto::INT8, {2, 3});
  b.output("dq", onnx::TensorProto::UINT8, {6})
      .output("ds", F, {})
      .output("dz", onnx::TensorProto::UINT8, {});
  auto& codes = b.raw_initializer("w");
  codes.set_data_type(onnx::TensorProto::INT8);
  codes.add_dims(2);
  codes.add_dims(3);
  codes.set_raw_data(std::string{1, 2, 3, -1, -2, 127});
  b.initializer("ws", {3}, {0.5f, 1.0f, 2.0f});
  auto& zp = b.raw_initializer("wz");
  zp.set_data_type(onnx::TensorProto::INT8);
  zp.add_dims(3);
  zp.set_raw_data(std::string{0, 1, -1});
  b.initializer("s", {}, {0.5f});
  auto& z = b.raw_initializer("z");
  z.set_data_type(onnx::TensorProto::INT8);
  z.set_raw_data(std::string{1});
  OnnxBuilder::attr(b.node("DequantizeLinear", {"w", "ws", "wz"}, {"y"}), "axis", std::int64_t{1});
  b.node("QuantizeLinear", {"x", "s", "z"}, {"q"});
  b.node("DynamicQuantizeLinear", {"d"}, {"dq", "ds", "dz"});
  const Executor e(import_onnx_bytes(b.bytes(), "qdq kernels"));
  TensorMap in;
  in.emplace("x",
             Tensor::from_values<float>({2, 3}, {0.25f, 0.75f, -0.25f, 100.0f, -100.0f, 1.0f}));
  in.emplace("d", Tensor::from_values<float>({6}, {0, 2, -3, -2.5f, 1.34f, 0.5f}));
  const TensorMap out = e.run(in);
  const auto y = out.at("y").values<float>();
  EXPECT_EQ(std::vector<float>(y.begin(), y.end()),
            (std::vector<float>{0.5f, 1.0f, 8.0f, -0.5f, -3.0f, 256.0f}));
  const auto q = out.at("q").values<std::int8_t>();
  // 0.5 and 1.5 round to even (0, 2), -0.5 to 0; +-200 saturate.
  EXPECT_EQ(std::vector<std::int8_t>(q.begin(), q.end()),
            (std::vector<std::int8_t>{1, 3, 1, 127, -128, 3}));
  const auto dq = out.at("dq").values<std::uint8_t>();
  EXPECT_EQ(std::vector<std::uint8_t>(dq.begin(), dq.end()),
            (std::vector<std::uint8_t>{153, 255, 0, 26, 221, 179}));
  EXPECT_EQ(out.at("ds").values<float>()[0], 0.019607844f);
  EXPECT_EQ(out.at("dz").values<std::uint8_t>()[0], 153);
}

}  // namespace
}  // namespace qforge::model
