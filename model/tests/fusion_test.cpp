// The executor's fused chains (model/src/fusion.h): BERT's GELU with its bias Add, attention's
// scale, mask and Softmax, and the bias and residual Adds with LayerNormalization give the same
// bits as the nodes run one by one, on 1 and 3 threads, with odd row lengths (vector tails), and
// run node by node when an inner tensor is kept.
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

std::vector<float> values(std::mt19937_64& g, std::int64_t n, float lo, float hi) {
  return test::random_values(g, static_cast<std::size_t>(n), lo, hi);
}

// One layer's tails: y = LayerNorm(GELU(x + b1) + b2 + r), p = Softmax(s / c + mask).
Graph layer_graph(std::mt19937_64& g, std::int64_t b, std::int64_t s, std::int64_t h,
                  std::int64_t heads) {
  OnnxBuilder m(17);
  m.input("x", F, {b, s, h});
  m.input("r", F, {b, s, h});
  m.input("scores", F, {b, heads, s, s});
  m.input("mask", F, {b, 1, 1, s});
  m.initializer("b1", {h}, values(g, h, -1, 1));
  m.initializer("b2", {h}, values(g, h, -1, 1));
  m.initializer("scale", {h}, values(g, h, 0.5f, 1.5f));
  m.initializer("shift", {h}, values(g, h, -1, 1));
  m.initializer("sqrt2", {}, {1.4142135f});
  m.initializer("one", {}, {1.0f});
  m.initializer("half", {}, {0.5f});
  m.initializer("temp", {}, {5.656854f});
  m.node("Add", {"x", "b1"}, {"v"});
  m.node("Div", {"v", "sqrt2"}, {"d"});
  m.node("Erf", {"d"}, {"erf"});
  m.node("Add", {"erf", "one"}, {"e1"});
  m.node("Mul", {"v", "half"}, {"vh"});
  m.node("Mul", {"vh", "e1"}, {"gelu"});
  m.node("Add", {"gelu", "b2"}, {"t"});
  m.node("Add", {"t", "r"}, {"u"});
  auto& ln = m.node("LayerNormalization", {"u", "scale", "shift"}, {"y"});
  OnnxBuilder::attr(ln, "epsilon", 1e-12f);
  m.node("Div", {"scores", "temp"}, {"scaled"});
  m.node("Add", {"scaled", "mask"}, {"masked"});
  m.node("Softmax", {"masked"}, {"p"});
  m.output("y", F, {b, s, h});
  m.output("p", F, {b, heads, s, s});
  return import_onnx_bytes(m.bytes(), "fusion");
}

TensorMap inputs(std::mt19937_64& g, std::int64_t b, std::int64_t s, std::int64_t h,
                 std::int64_t heads) {
  std::vector<float> mask = values(g, b * s, 0, 1);
  for (float& v : mask) v = v < 0.2f ? -3.4e38f : 0.0f;  // masked positions, as BERT writes them
  return {{"x", test::random_tensor(g, {b, s, h}, -5, 5)},
          {"r", test::random_tensor(g, {b, s, h}, -2, 2)},
          {"scores", test::random_tensor(g, {b, heads, s, s}, -30, 30)},
          {"mask", Tensor::from_values<float>({b, 1, 1, s}, mask)}};
}

void expect_same_bits(const Tensor& a, const Tensor& b, const std::string& what) {
  ASSERT_EQ(a.tensor_type(), b.tensor_type()) << what;
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.byte_size()), 0) << what << " differs";
}

TEST(Fusion, SameBitsAsTheNodesOneByOne) {
  SCOPED_TRACE(test::seed_text());
  auto g = test::rng(811);
  for (int round = 0; round < 6; ++round) {
    // Row lengths with and without a tail of eight; one round large enough to split rows.
    const std::int64_t b = pick(g, 1, 3), s = round == 0 ? 70 : pick(g, 1, 23),
                       h = round == 0 ? 389 : pick(g, 1, 45), heads = pick(g, 1, 3);
    SCOPED_TRACE("b " + std::to_string(b) + " s " + std::to_string(s) + " h " + std::to_string(h));
    const Graph graph = layer_graph(g, b, s, h, heads);
    const TensorMap in = inputs(g, b, s, h, heads);
    const TensorMap want =
        Executor(graph, {}, ExecutorOptions{.threads = 1, .fuse = false}).run(in);
    for (const int threads : {1, 3}) {
      const Executor fused(graph, {}, ExecutorOptions{.threads = threads});
      // The hook sees only the nodes outside the chains: all but MatMul-free tails here.
      std::size_t hooked = 0;
      const TensorMap got = fused.run(in, {}, [&](std::size_t, auto, auto) {
        ++hooked;
        return false;
      });
      EXPECT_EQ(hooked, 0u) << "every node of this graph is in a chain";
      for (const char* out : {"y", "p"})
        expect_same_bits(got.at(out), want.at(out),
                         std::string(out) + " on " + std::to_string(threads) + " threads");
    }
  }
}

TEST(Fusion, KeptInnerTensorRunsTheChainNodeByNode) {
  SCOPED_TRACE(test::seed_text());
  auto g = test::rng(812);
  const std::int64_t b = 2, s = 9, h = 21, heads = 2;
  const Graph graph = layer_graph(g, b, s, h, heads);
  const TensorMap in = inputs(g, b, s, h, heads);
  const std::vector<std::string> keep = {"erf", "scaled", "t"};
  const TensorMap want =
      Executor(graph, {}, ExecutorOptions{.threads = 3, .fuse = false}).run(in, keep);
  std::size_t hooked = 0;
  const TensorMap got = Executor(graph, {}, ExecutorOptions{.threads = 3})
                            .run(in, keep, [&](std::size_t, auto, auto) {
                              ++hooked;
                              return false;
                            });
  EXPECT_EQ(hooked, 12u) << "every chain runs node by node";
  for (const char* t : {"y", "p", "erf", "scaled", "t"}) expect_same_bits(got.at(t), want.at(t), t);
}

// A chain whose inner tensor is a graph output, or read outside the chain, is not fused: the
// executor still gives the nodes' results.
TEST(Fusion, InnerTensorReadElsewhereIsNotFused) {
  SCOPED_TRACE(test::seed_text());
  auto g = test::rng(813);
  OnnxBuilder m(17);
  m.input("x", F, {3, 16});
  m.initializer("c", {}, {1.4142135f});
  m.initializer("one", {}, {1.0f});
  m.initializer("half", {}, {0.5f});
  m.node("Div", {"x", "c"}, {"d"});
  m.node("Erf", {"d"}, {"erf"});
  m.node("Add", {"erf", "one"}, {"e1"});
  m.node("Mul", {"x", "half"}, {"xh"});
  m.node("Mul", {"xh", "e1"}, {"gelu"});
  m.output("gelu", F, {3, 16});
  m.output("erf", F, {3, 16});
  const Graph graph = import_onnx_bytes(m.bytes(), "fusion");
  const TensorMap in = {{"x", test::random_tensor(g, {3, 16}, -4, 4)}};
  const TensorMap want = Executor(graph, {}, ExecutorOptions{.fuse = false}).run(in);
  std::size_t hooked = 0;
  const TensorMap got = Executor(graph).run(in, {}, [&](std::size_t, auto, auto) {
    ++hooked;
    return false;
  });
  EXPECT_EQ(hooked, 5u);
  for (const char* t : {"gelu", "erf"}) expect_same_bits(got.at(t), want.at(t), t);
}

}  // namespace
}  // namespace qforge::model
