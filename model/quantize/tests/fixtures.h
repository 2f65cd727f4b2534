// Shared helpers of the quantize tests: small MLPs built as ONNX models, recipes, accelerators
// restricted to one CPU plugin, and random batches.
#pragma once

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "onnx_builder.h"
#include "qforge/accelerator.h"
#include "qforge/model/calibrate.h"
#include "qforge/model/onnx_import.h"
#include "qforge/model/quantized_model.h"
#include "qforge/registry.h"
#include "test_support.h"

namespace qforge::model::qtest {

using testing::OnnxBuilder;
constexpr int F = onnx::TensorProto::FLOAT;

struct MlpShape {
  std::int64_t batch = 8, in = 32, hidden = 48, out = 16;
};

inline std::vector<float> weights(std::mt19937_64& g, std::int64_t fan_in, std::int64_t count) {
  const float bound = 1.0f / std::sqrt(static_cast<float>(fan_in));
  return test::random_values(g, static_cast<std::size_t>(count), -bound, bound);
}

// x -> Gemm "fc1" (W1, b1) -> Relu -> Gemm "fc2" (W2, b2) -> y. With trans_b the weights are
// stored [N, K] (the nn.Linear layout); alpha and beta apply to both Gemms.
inline Graph gemm_mlp(std::mt19937_64& g, const MlpShape& s, bool trans_b = false,
                      float alpha = 1.0f, float beta = 1.0f) {
  OnnxBuilder b(17);
  b.input("x", F, {s.batch, s.in}).output("y", F, {s.batch, s.out});
  auto w = [&](std::int64_t k, std::int64_t n) {
    return trans_b ? std::vector<std::int64_t>{n, k} : std::vector<std::int64_t>{k, n};
  };
  b.initializer("W1", w(s.in, s.hidden), weights(g, s.in, s.in * s.hidden));
  b.initializer("b1", {s.hidden}, weights(g, 4, s.hidden));
  b.initializer("W2", w(s.hidden, s.out), weights(g, s.hidden, s.hidden * s.out));
  b.initializer("b2", {s.out}, weights(g, 4, s.out));
  for (auto* n : {&b.node("Gemm", {"x", "W1", "b1"}, {"h"}, "fc1"),
                  &b.node("Gemm", {"r", "W2", "b2"}, {"y"}, "fc2")}) {
    OnnxBuilder::attr(*n, "transB", std::int64_t{trans_b ? 1 : 0});
    OnnxBuilder::attr(*n, "alpha", alpha);
    OnnxBuilder::attr(*n, "beta", beta);
  }
  b.node("Relu", {"h"}, {"r"}, "relu");
  // Nodes must be in topological order: move Relu between the Gemms.
  auto* nodes = b.proto().mutable_graph()->mutable_node();
  nodes->SwapElements(1, 2);
  return import_onnx_bytes(b.bytes(), "gemm_mlp");
}

// x [batch, tokens, in] -> MatMul "mm1" -> Add -> Relu -> MatMul "mm2" -> Add -> y.
inline Graph matmul_mlp(std::mt19937_64& g, const MlpShape& s, std::int64_t tokens = 3) {
  OnnxBuilder b(17);
  b.input("x", F, {s.batch, tokens, s.in}).output("y", F, {s.batch, tokens, s.out});
  b.initializer("W1", {s.in, s.hidden}, weights(g, s.in, s.in * s.hidden));
  b.initializer("b1", {s.hidden}, weights(g, 4, s.hidden));
  b.initializer("W2", {s.hidden, s.out}, weights(g, s.hidden, s.hidden * s.out));
  b.initializer("b2", {s.out}, weights(g, 4, s.out));
  b.node("MatMul", {"x", "W1"}, {"m1"}, "mm1");
  b.node("Add", {"m1", "b1"}, {"a1"}, "add1");
  b.node("Relu", {"a1"}, {"r"}, "relu");
  b.node("MatMul", {"r", "W2"}, {"m2"}, "mm2");
  b.node("Add", {"m2", "b2"}, {"y"}, "add2");
  return import_onnx_bytes(b.bytes(), "matmul_mlp");
}

// Random batches for the graph's single input, values in [-1, 1].
inline std::vector<TensorMap> batches(std::mt19937_64& g, const Graph& graph, std::size_t count) {
  std::vector<TensorMap> out;
  for (std::size_t i = 0; i < count; ++i) {
    TensorMap m;
    m.emplace(graph.inputs.at(0).name, test::random_tensor(g, graph.inputs.at(0).shape()));
    out.push_back(std::move(m));
  }
  return out;
}

// Quantize MatMul and Gemm with `layer` (the recipe's defaults when not given).
inline Recipe matmul_recipe(LayerQuantization layer = {}) {
  Recipe r;
  r.rules.push_back(
      {.label = "linear", .match = {.op_types = {"Gemm", "MatMul"}}, .quantize = layer});
  return r;
}

// Static int8 activations calibrated with minmax: on the tests' uniform data, entropy (the
// default, made for bell-shaped distributions) clips the tails and its worst case over seeds
// is a few dB lower. Enough calibration batches (kCalibrationBatches) cover the tails of the
// hidden layer that later batches reach.
inline LayerQuantization minmax_layer() {
  LayerQuantization q;
  q.activations =
      ActivationQuantization::static_calibrated(DType::int8, calibration::Method::minmax);
  return q;
}
inline constexpr std::size_t kCalibrationBatches = 32;

inline LayerQuantization dynamic_layer() {
  LayerQuantization q;
  q.activations = ActivationQuantization::dynamic_per_batch();
  return q;
}

// An accelerator restricted to one plugin, without tuning cache or online tuning (deterministic
// and fast); nullptr when that plugin did not load.
inline std::unique_ptr<Accelerator> accelerator(const std::string& plugin) {
  AcceleratorOptions o;
  o.policy.plugins = {plugin};
  o.use_cache = false;
  o.online_tuning = false;
  if (!PluginRegistry::global().find(plugin)) return nullptr;
  return std::make_unique<Accelerator>(o);
}

// The float model, the recipe's resolution on it and the calibration, ready for QuantizedModel.
struct Prepared {
  std::unique_ptr<Executor> float_model;
  Recipe recipe;
  RecipeResolution resolution;
  CalibrationResult calibration;
};

inline Prepared prepare(const Graph& graph, Recipe recipe, std::span<const TensorMap> data) {
  Prepared p;
  p.float_model = std::make_unique<Executor>(graph);
  p.recipe = std::move(recipe);
  const auto refs = node_refs(p.float_model->graph());
  p.resolution = resolve(p.recipe, refs);
  p.calibration = calibrate(*p.float_model, p.resolution, data);
  return p;
}

// 10 log10(sum a^2 / sum (a - b)^2) over two float tensors.
inline double sqnr_db(const Tensor& a, const Tensor& b) {
  double s = 0, n = 0;
  const auto x = a.values<float>(), y = b.values<float>();
  for (std::size_t i = 0; i < x.size(); ++i) {
    s += double(x[i]) * x[i];
    n += (double(x[i]) - y[i]) * (double(x[i]) - y[i]);
  }
  return n == 0 ? 1e9 : 10 * std::log10(s / n);
}

}  // namespace qforge::model::qtest
