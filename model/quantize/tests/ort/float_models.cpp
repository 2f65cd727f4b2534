#include "float_models.h"

#include <cmath>

namespace qforge::model::ort {
namespace {

using testing::OnnxBuilder;
constexpr int F = onnx::TensorProto::FLOAT;

std::vector<float> uniform(std::mt19937_64& g, std::int64_t n, float lo, float hi) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(static_cast<std::size_t>(n));
  for (float& x : v) x = d(g);
  return v;
}
std::vector<float> weights(std::mt19937_64& g, std::int64_t fan_in, std::int64_t n) {
  const float b = 1.0f / std::sqrt(static_cast<float>(fan_in));
  return uniform(g, n, -b, b);
}

// BatchNormalization's four parameters for `c` channels, variance away from zero.
void batchnorm(OnnxBuilder& b, std::mt19937_64& g, const std::string& p, std::int64_t c) {
  b.initializer(p + ".gamma", {c}, uniform(g, c, 0.5f, 1.5f));
  b.initializer(p + ".beta", {c}, uniform(g, c, -0.5f, 0.5f));
  b.initializer(p + ".mean", {c}, uniform(g, c, -0.2f, 0.2f));
  b.initializer(p + ".var", {c}, uniform(g, c, 0.5f, 2.0f));
}

}  // namespace

FloatModel mlp_model(std::mt19937_64& g) {
  FloatModel m{"mlp", OnnxBuilder(17)};
  OnnxBuilder& b = m.builder;
  // The logits are an output too: Softmax would hide their differences.
  b.input("x", F, {8, 20}).output("y", F, {8, 10}).output("logits", F, {8, 10});
  b.initializer("W1", {40, 20}, weights(g, 20, 800)).initializer("b1", {40}, weights(g, 4, 40));
  b.initializer("W2", {40, 24}, weights(g, 40, 960)).initializer("b2", {24}, weights(g, 4, 24));
  b.initializer("W3", {24, 10}, weights(g, 24, 240)).initializer("b3", {10}, weights(g, 4, 10));
  OnnxBuilder::attr(b.node("Gemm", {"x", "W1", "b1"}, {"h1"}, "fc1"), "transB", std::int64_t{1});
  b.node("Relu", {"h1"}, {"r1"}, "relu1");
  b.node("MatMul", {"r1", "W2"}, {"m2"}, "mm2");
  b.node("Add", {"m2", "b2"}, {"h2"}, "add2");
  b.node("Sigmoid", {"h2"}, {"s2"}, "sigmoid");
  b.node("Gemm", {"s2", "W3", "b3"}, {"logits"}, "fc3");
  OnnxBuilder::attr(b.node("Softmax", {"logits"}, {"y"}, "softmax"), "axis", std::int64_t{1});
  return m;
}

FloatModel cnn_model(std::mt19937_64& g) {
  FloatModel m{"cnn", OnnxBuilder(17)};
  OnnxBuilder& b = m.builder;
  b.input("x", F, {4, 3, 12, 12}).output("y", F, {4, 10}).output("logits", F, {4, 10});
  b.initializer("c1.w", {8, 3, 3, 3}, weights(g, 27, 8 * 27));
  b.initializer("c1.b", {8}, weights(g, 4, 8));
  batchnorm(b, g, "bn1", 8);
  b.initializer("c2.w", {8, 1, 3, 3}, weights(g, 9, 8 * 9));
  batchnorm(b, g, "bn2", 8);
  b.initializer("fc.w", {10, 32}, weights(g, 32, 320)).initializer("fc.b", {10}, weights(g, 4, 10));
  auto& c1 = b.node("Conv", {"x", "c1.w", "c1.b"}, {"c1"}, "conv1");
  OnnxBuilder::attr(c1, "pads", std::vector<std::int64_t>{1, 1, 1, 1});
  b.node("BatchNormalization", {"c1", "bn1.gamma", "bn1.beta", "bn1.mean", "bn1.var"}, {"n1"},
         "bn1");
  b.node("Relu", {"n1"}, {"r1"}, "relu1");
  auto& pool = b.node("MaxPool", {"r1"}, {"p1"}, "pool1");
  OnnxBuilder::attr(pool, "kernel_shape", std::vector<std::int64_t>{2, 2});
  OnnxBuilder::attr(pool, "strides", std::vector<std::int64_t>{2, 2});
  auto& c2 = b.node("Conv", {"p1", "c2.w"}, {"c2"}, "conv2_depthwise");
  OnnxBuilder::attr(c2, "group", std::int64_t{8});
  OnnxBuilder::attr(c2, "strides", std::vector<std::int64_t>{2, 2});
  OnnxBuilder::attr(c2, "pads", std::vector<std::int64_t>{1, 1, 1, 1});
  b.node("BatchNormalization", {"c2", "bn2.gamma", "bn2.beta", "bn2.mean", "bn2.var"}, {"n2"},
         "bn2");
  b.node("Relu", {"n2"}, {"r2"}, "relu2");
  auto& avg = b.node("AveragePool", {"r2"}, {"p2"}, "pool2");  // 3x3 -> 2x2
  OnnxBuilder::attr(avg, "kernel_shape", std::vector<std::int64_t>{2, 2});
  b.node("Flatten", {"p2"}, {"f"}, "flatten");
  OnnxBuilder::attr(b.node("Gemm", {"f", "fc.w", "fc.b"}, {"logits"}, "fc"), "transB",
                    std::int64_t{1});
  b.node("Softmax", {"logits"}, {"y"}, "softmax");
  return m;
}

FloatModel misc_model(std::mt19937_64& g) {
  FloatModel m{"misc", OnnxBuilder(17)};
  OnnxBuilder& b = m.builder;
  b.input("x", F, {2, 4, 6}).output("y", F, {2, 3, 5}).output("z", F, {2, 6});
  b.initializer("scale", {4}, uniform(g, 4, 0.5f, 2.0f));
  b.initializer("lo", {}, {-0.5f}).initializer("hi", {}, {0.75f});
  b.initializer_i64("shape", {3}, {2, 3, -1});
  b.initializer_i64("starts", {1}, {1}).initializer_i64("ends", {1}, {6});
  b.initializer_i64("axes", {1}, {2}).initializer_i64("idx", {2}, {2, 0});
  OnnxBuilder::attr(b.node("Transpose", {"x"}, {"t"}, "transpose"), "perm",
                    std::vector<std::int64_t>{0, 2, 1});  // [2, 6, 4]
  OnnxBuilder::attr(b.node("LeakyRelu", {"t"}, {"l"}, "leaky"), "alpha", 0.1f);
  b.node("Mul", {"l", "scale"}, {"ms"}, "mul");
  b.node("Tanh", {"ms"}, {"th"}, "tanh");
  b.node("Erf", {"t"}, {"er"}, "erf");
  b.node("Clip", {"ms", "lo", "hi"}, {"cl"}, "clip");
  OnnxBuilder::attr(b.node("Concat", {"th", "er", "cl"}, {"cat"}, "concat"), "axis",
                    std::int64_t{2});                                  // [2, 6, 12]
  b.node("Reshape", {"cat", "shape"}, {"rs"}, "reshape");              // [2, 3, 48]
  b.node("Slice", {"rs", "starts", "ends", "axes"}, {"sl"}, "slice");  // [2, 3, 5]
  OnnxBuilder::attr(b.node("LogSoftmax", {"sl"}, {"y"}, "logsoftmax"), "axis", std::int64_t{-1});
  OnnxBuilder::attr(b.node("Gather", {"cat", "idx"}, {"ga"}, "gather"), "axis",
                    std::int64_t{2});  // [2, 6, 2]
  auto& mean = b.node("ReduceMean", {"ga"}, {"z"}, "mean");
  OnnxBuilder::attr(mean, "axes", std::vector<std::int64_t>{2});
  OnnxBuilder::attr(mean, "keepdims", std::int64_t{0});
  return m;
}

}  // namespace qforge::model::ort
