// The executor's conv chains (model/src/fusion.h): a 2-D Conv with the Relu and MaxPool after it,
// finished plane by plane, gives the bits of the nodes run one by one, on every conv path (the
// direct loop for one input channel per group, the per-image pointwise sgemm, im2col), on 1 and
// 3 threads; a hook is asked about the Conv first, and when it computes the Conv the rest of the
// chain runs node by node.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "onnx_builder.h"
#include "qforge/model/executor.h"
#include "qforge/model/onnx_import.h"
#include "test_support.h"

namespace qforge::model {
namespace {

using testing::OnnxBuilder;
constexpr int F = onnx::TensorProto::FLOAT;

std::int64_t pick(std::mt19937_64& g, std::int64_t lo, std::int64_t hi) {
  return std::uniform_int_distribution<std::int64_t>(lo, hi)(g);
}

struct ConvCase {
  std::int64_t n = 2, c = 3, m = 4, group = 1, h = 9, w = 11, k = 3, pad = 1, stride = 1;
  bool bias = true, relu = true, pool = true;
  std::string text() const {
    return "n " + std::to_string(n) + " c " + std::to_string(c) + " m " + std::to_string(m) +
           " group " + std::to_string(group) + " " + std::to_string(h) + "x" + std::to_string(w) +
           " k " + std::to_string(k) + " pad " + std::to_string(pad) + " stride " +
           std::to_string(stride) + (bias ? " bias" : "") + (relu ? " relu" : "") +
           (pool ? " pool" : "");
  }
};

// x -> Conv -> [Relu] -> [MaxPool 2x2/2] -> y; the Conv's output is "conv".
Graph conv_graph(std::mt19937_64& g, const ConvCase& t) {
  OnnxBuilder b(17);
  b.input("x", F, {t.n, t.c, t.h, t.w});
  const std::int64_t cg = t.c / t.group;
  b.initializer("W", {t.m, cg, t.k, t.k},
                test::random_values(g, static_cast<std::size_t>(t.m * cg * t.k * t.k), -1, 1));
  std::vector<std::string> conv_in = {"x", "W"};
  if (t.bias) {
    b.initializer("B", {t.m}, test::random_values(g, static_cast<std::size_t>(t.m), -1, 1));
    conv_in.push_back("B");
  }
  auto& conv = b.node("Conv", conv_in, {"conv"});
  OnnxBuilder::attr(conv, "group", t.group);
  OnnxBuilder::attr(conv, "kernel_shape", std::vector<std::int64_t>{t.k, t.k});
  OnnxBuilder::attr(conv, "pads", std::vector<std::int64_t>{t.pad, t.pad, t.pad, t.pad});
  OnnxBuilder::attr(conv, "strides", std::vector<std::int64_t>{t.stride, t.stride});
  std::string last = "conv";
  if (t.relu) {
    b.node("Relu", {last}, {"relu"});
    last = "relu";
  }
  if (t.pool) {
    auto& pool = b.node("MaxPool", {last}, {"pooled"});
    OnnxBuilder::attr(pool, "kernel_shape", std::vector<std::int64_t>{2, 2});
    OnnxBuilder::attr(pool, "strides", std::vector<std::int64_t>{2, 2});
    last = "pooled";
  }
  b.node("Identity", {last}, {"y"});
  std::int64_t oh = (t.h + 2 * t.pad - t.k) / t.stride + 1,
               ow = (t.w + 2 * t.pad - t.k) / t.stride + 1;
  if (t.pool) {
    oh /= 2;
    ow /= 2;
  }
  b.output("y", F, {t.n, t.m, oh, ow});
  return import_onnx_bytes(b.bytes(), "conv_chain");
}

void expect_same_bits(const Tensor& a, const Tensor& b, const std::string& what) {
  ASSERT_EQ(a.tensor_type(), b.tensor_type()) << what;
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.byte_size()), 0) << what << " differs";
}

ConvCase random_case(std::mt19937_64& g, int round) {
  ConvCase t;
  t.n = pick(g, 1, 4);
  t.h = pick(g, 2, 17);
  t.w = pick(g, 2, 17);
  t.bias = pick(g, 0, 1) == 1;
  t.relu = pick(g, 0, 1) == 1;
  t.pool = !t.relu || pick(g, 0, 1) == 1;  // at least one of the two: a chain
  switch (round % 3) {
    case 0:  // one input channel per group: the direct loop (depthwise, or a first layer)
      t.c = pick(g, 1, 5);
      t.group = t.c;
      t.m = t.c * pick(g, 1, 3);
      t.k = pick(g, 1, 4);
      break;
    case 1:  // pointwise: one sgemm per image (batch > 1) or the single-image path
      t.c = pick(g, 2, 9);
      t.m = pick(g, 1, 9);
      t.k = 1;
      t.pad = 0;
      break;
    default:  // im2col and one sgemm per group over the batch
      t.group = pick(g, 1, 2);
      t.c = t.group * pick(g, 2, 4);
      t.m = t.group * pick(g, 1, 5);
      t.k = pick(g, 2, 3);
      break;
  }
  if (t.k > 1) t.pad = pick(g, 0, 1);
  t.stride = t.k > 1 ? pick(g, 1, 2) : 1;
  // Large enough for a 2x2 pool of the conv's output.
  t.h = std::max(t.h, t.k + 2 * t.stride);
  t.w = std::max(t.w, t.k + 2 * t.stride);
  return t;
}

TEST(ConvChain, SameBitsAsTheNodesOneByOne) {
  SCOPED_TRACE(test::seed_text());
  auto g = test::rng(821);
  for (int round = 0; round < 30; ++round) {
    const ConvCase t = random_case(g, round);
    SCOPED_TRACE(t.text());
    const Graph graph = conv_graph(g, t);
    // Negative zeros, ties and NaN-free values of both signs: Relu's and MaxPool's edge cases.
    Tensor x = test::random_tensor(g, {t.n, t.c, t.h, t.w}, -2, 2);
    auto xv = x.values<float>();
    for (std::size_t i = 0; i < xv.size(); i += 7) xv[i] = i % 2 ? -0.0f : 0.0f;
    const TensorMap in = {{"x", x}};
    const TensorMap want =
        Executor(graph, {}, ExecutorOptions{.threads = 1, .fuse = false}).run(in);
    for (const int threads : {1, 3}) {
      const Executor fused(graph, {}, ExecutorOptions{.threads = threads});
      std::size_t asked = 0;
      const TensorMap got = fused.run(in, {}, [&](std::size_t node, auto, auto) {
        if (fused.graph().nodes[node].op_type != "Identity") ++asked;
        return false;
      });
      EXPECT_EQ(asked, 1u) << "the hook is asked about the Conv alone; the chain runs fused";
      expect_same_bits(got.at("y"), want.at("y"), "y on " + std::to_string(threads) + " threads");
      expect_same_bits(fused.run(in).at("y"), want.at("y"), "y without a hook");
    }
  }
}

// A hook that computes the Conv (as a quantized layer does) gets the rest of the chain node by
// node; keeping the Conv's output runs the chain unfused too.
TEST(ConvChain, HookThatComputesTheConvRunsTheRestNodeByNode) {
  SCOPED_TRACE(test::seed_text());
  auto g = test::rng(822);
  const ConvCase t;  // 2 x 3 x 9 x 11, 3x3 pad 1, bias, Relu and MaxPool
  const Graph graph = conv_graph(g, t);
  const TensorMap in = {{"x", test::random_tensor(g, {t.n, t.c, t.h, t.w}, -2, 2)}};
  const TensorMap want =
      Executor(graph, {}, ExecutorOptions{.fuse = false}).run(in, {"conv", "relu"});
  const Executor fused(graph);
  std::vector<std::string> seen;
  const TensorMap got = fused.run(in, {}, [&](std::size_t node, auto, auto outputs) {
    const Node& n = fused.graph().nodes[node];
    seen.push_back(n.op_type);
    if (n.op_type != "Conv") return false;
    const Tensor& conv = want.at("conv");
    std::memcpy(outputs[0]->data(), conv.data(), conv.byte_size());
    return true;
  });
  EXPECT_EQ(seen, (std::vector<std::string>{"Conv", "Relu", "MaxPool", "Identity"}));
  expect_same_bits(got.at("y"), want.at("y"), "y after a replaced Conv");
  const TensorMap kept = fused.run(in, {"conv", "relu"});
  for (const char* name : {"y", "conv", "relu"})
    expect_same_bits(kept.at(name), want.at(name), std::string(name) + " with Conv kept");
}

}  // namespace
}  // namespace qforge::model
