// The ranges the fused chains compute while writing their output (ValueRange, executor.h): the
// GELU, bias + residual + LayerNormalization and attention chains give their consumer's hook
// exactly dynamic quantization's range of the tensor (min(0, min), max(0, max) over the non-NaN
// values), on 1 and 3 threads, over random shapes; a Reshape view passes its input's range on,
// and a tensor written by anything else (a chain run node by node, a plain kernel) has none.
// Computing the range changes none of the chains' values.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

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

// dynamic_quantize_linear's range, by the plain loop.
ValueRange plain_range(const Tensor& t) {
  ValueRange r{0.0f, 0.0f, true};
  for (const float v : t.values<float>()) {
    if (std::isnan(v)) continue;
    r.lo = std::min(r.lo, v);
    r.hi = std::max(r.hi, v);
  }
  return r;
}

// Runs `graph` with a hook that records the range of each Neg node's input (by the Neg's
// output name) and lets every node run its kernel; returns the results too.
struct Seen {
  std::map<std::string, ValueRange> ranges;
  TensorMap out;
};
Seen run_seeing(const Executor& e, const TensorMap& in, const std::vector<std::string>& keep = {}) {
  Seen seen;
  const Graph& graph = e.graph();
  seen.out = e.run_with_ranges(in, keep,
                               [&](std::size_t node, std::span<const Tensor* const>,
                                   std::span<const ValueRange> r, std::span<Tensor* const>) {
                                 if (graph.nodes[node].op_type == "Neg")
                                   seen.ranges[graph.nodes[node].outputs[0]] = r[0];
                                 return false;
                               });
  return seen;
}

void expect_range(const Seen& seen, const std::string& neg_output, const Tensor& of) {
  SCOPED_TRACE(neg_output);
  ASSERT_TRUE(seen.ranges.count(neg_output)) << "the hook did not see the Neg";
  const ValueRange got = seen.ranges.at(neg_output), want = plain_range(of);
  ASSERT_TRUE(got.known) << "no range given";
  EXPECT_EQ(got.lo, want.lo);
  EXPECT_EQ(got.hi, want.hi);
}

// gelu = GELU(x + b1); y = LayerNorm(gelu + b2 + r); the two Negs read them.
Graph tails_graph(std::mt19937_64& g, std::int64_t b, std::int64_t s, std::int64_t h) {
  OnnxBuilder m(17);
  m.input("x", F, {b, s, h});
  m.input("r", F, {b, s, h});
  m.initializer("b1", {h}, test::random_values(g, static_cast<std::size_t>(h), -1, 1));
  m.initializer("b2", {h}, test::random_values(g, static_cast<std::size_t>(h), -1, 1));
  m.initializer("scale", {h}, test::random_values(g, static_cast<std::size_t>(h), 0.5f, 1.5f));
  m.initializer("shift", {h}, test::random_values(g, static_cast<std::size_t>(h), -1, 1));
  m.initializer("sqrt2", {}, {1.4142135f});
  m.initializer("one", {}, {1.0f});
  m.initializer("half", {}, {0.5f});
  m.node("Add", {"x", "b1"}, {"v"});
  m.node("Div", {"v", "sqrt2"}, {"d"});
  m.node("Erf", {"d"}, {"erf"});
  m.node("Add", {"erf", "one"}, {"e1"});
  m.node("Mul", {"v", "half"}, {"vh"});
  m.node("Mul", {"vh", "e1"}, {"gelu"});
  m.node("Add", {"gelu", "b2"}, {"t"});
  m.node("Add", {"t", "r"}, {"u"});
  OnnxBuilder::attr(m.node("LayerNormalization", {"u", "scale", "shift"}, {"y"}), "epsilon",
                    1e-12f);
  m.node("Neg", {"gelu"}, {"neg_gelu"});
  m.node("Neg", {"y"}, {"neg_y"});
  m.node("Neg", {"x"}, {"neg_x"});
  m.output("neg_gelu", F, {b, s, h});
  m.output("neg_y", F, {b, s, h});
  m.output("neg_x", F, {b, s, h});
  m.output("gelu", F, {b, s, h});
  m.output("y", F, {b, s, h});
  return import_onnx_bytes(m.bytes(), "ranges");
}

TEST(ValueRanges, GeluAndLayerNormChainsGiveTheExactRange) {
  SCOPED_TRACE(test::seed_text());
  auto g = test::rng(1901);
  for (int round = 0; round < 6; ++round) {
    // One round large enough to split rows across threads; odd widths leave vector tails.
    const std::int64_t b = pick(g, 1, 3), s = round == 0 ? 70 : pick(g, 1, 23),
                       h = round == 0 ? 389 : pick(g, 1, 45);
    SCOPED_TRACE("b " + std::to_string(b) + " s " + std::to_string(s) + " h " + std::to_string(h));
    const Graph graph = tails_graph(g, b, s, h);
    // Shifted so that some rounds have no negative (or no positive) GELU input at all.
    const float shift = static_cast<float>(pick(g, -2, 2)) * 4.0f;
    Tensor x = test::random_tensor(g, {b, s, h}, -5 + shift, 5 + shift);
    if (round == 1) x.values<float>()[static_cast<std::size_t>(pick(g, 0, x.size() - 1))] = NAN;
    const TensorMap in = {{"x", x}, {"r", test::random_tensor(g, {b, s, h}, -2, 2)}};
    const TensorMap want =
        Executor(graph, {}, ExecutorOptions{.threads = 1, .fuse = false}).run(in);
    for (const int threads : {1, 3}) {
      SCOPED_TRACE(std::to_string(threads) + " threads");
      const Seen seen = run_seeing(Executor(graph, {}, ExecutorOptions{.threads = threads}), in);
      expect_range(seen, "neg_gelu", seen.out.at("gelu"));
      expect_range(seen, "neg_y", seen.out.at("y"));
      // Computing the range changes no value: the nodes' own bits.
      for (const char* t : {"gelu", "y"}) {
        const Tensor &got = seen.out.at(t), &expected = want.at(t);
        ASSERT_EQ(got.byte_size(), expected.byte_size()) << t;
        EXPECT_EQ(std::memcmp(got.data(), expected.data(), got.byte_size()), 0) << t << " differs";
      }
      EXPECT_FALSE(seen.ranges.at("neg_x").known) << "a graph input has no range";
    }
    // Unfused (or run node by node because an inner tensor is kept): no range.
    const Seen unfused =
        run_seeing(Executor(graph, {}, ExecutorOptions{.threads = 3, .fuse = false}), in);
    EXPECT_FALSE(unfused.ranges.at("neg_gelu").known);
    EXPECT_FALSE(unfused.ranges.at("neg_y").known);
    const Seen kept =
        run_seeing(Executor(graph, {}, ExecutorOptions{.threads = 3}), in, {"erf", "t"});
    EXPECT_FALSE(kept.ranges.at("neg_gelu").known);
    EXPECT_FALSE(kept.ranges.at("neg_y").known);
  }
}

// BERT's self-attention between its Reshapes (as build_onnx.py writes it), the merge Reshape a
// view, and a Neg reading the merged output.
Graph attention_graph(std::int64_t b, std::int64_t s, std::int64_t h, std::int64_t d) {
  OnnxBuilder m(17);
  for (const char* name : {"q", "k", "v"}) {
    m.input(std::string(name) + "_flat", F, {b, s, h * d});
    m.initializer_i64(std::string(name) + "_shape", {4}, {0, 0, h, d});
    m.node("Reshape", {std::string(name) + "_flat", std::string(name) + "_shape"}, {name});
  }
  auto transpose = [&](const std::string& x, const std::string& y,
                       const std::vector<std::int64_t>& perm) {
    OnnxBuilder::attr(m.node("Transpose", {x}, {y}), "perm", perm);
  };
  transpose("q", "qt", {0, 2, 1, 3});
  transpose("k", "kt", {0, 2, 3, 1});
  transpose("v", "vt", {0, 2, 1, 3});
  m.node("MatMul", {"qt", "kt"}, {"scores"});
  m.initializer("c", {}, {std::sqrt(static_cast<float>(d))});
  m.node("Div", {"scores", "c"}, {"scaled"});
  m.input("mask", F, {b, 1, 1, s});
  m.node("Add", {"scaled", "mask"}, {"masked"});
  OnnxBuilder::attr(m.node("Softmax", {"masked"}, {"p"}), "axis", std::int64_t{-1});
  m.node("MatMul", {"p", "vt"}, {"ctx"});
  transpose("ctx", "y4", {0, 2, 1, 3});
  m.initializer_i64("merge_shape", {3}, {0, 0, h * d});
  m.node("Reshape", {"y4", "merge_shape"}, {"y"});
  m.node("Neg", {"y"}, {"neg_y"});
  m.output("neg_y", F, {b, s, h * d});
  return import_onnx_bytes(m.bytes(), "attention_ranges");
}

// Sets QFORGE_ATTENTION_PRODUCTS (ops/fused.h) for a scope, restoring it after.
class ProductsKernel {
 public:
  explicit ProductsKernel(const char* kernel) {
    if (const char* old = std::getenv(kName)) old_ = old;
    setenv(kName, kernel, 1);
  }
  ~ProductsKernel() {
    if (old_.empty()) unsetenv(kName);
    else setenv(kName, old_.c_str(), 1);
  }

 private:
  static constexpr const char* kName = "QFORGE_ATTENTION_PRODUCTS";
  std::string old_;
};

TEST(ValueRanges, AttentionChainGivesTheExactRangeThroughTheMergeReshape) {
  SCOPED_TRACE(test::seed_text());
  auto g = test::rng(1902);
  for (int round = 0; round < 4; ++round) {
    const std::int64_t b = pick(g, 1, 3), s = pick(g, 1, 40), h = pick(g, 1, 4), d = pick(g, 1, 20);
    SCOPED_TRACE("b " + std::to_string(b) + " s " + std::to_string(s) + " h " + std::to_string(h) +
                 " d " + std::to_string(d));
    const Graph graph = attention_graph(b, s, h, d);
    std::vector<float> mask = test::random_values(g, static_cast<std::size_t>(b * s), 0, 1);
    for (float& v : mask) v = v < 0.2f ? -3.4028235e38f : 0.0f;
    // V shifted so that the outputs (convex mixtures of V's rows) may be all of one sign.
    const float shift = static_cast<float>(pick(g, -1, 1)) * 4.0f;
    const TensorMap in = {{"q_flat", test::random_tensor(g, {b, s, h * d}, -2, 2)},
                          {"k_flat", test::random_tensor(g, {b, s, h * d}, -2, 2)},
                          {"v_flat", test::random_tensor(g, {b, s, h * d}, -3 + shift, 3 + shift)},
                          {"mask", Tensor::from_values<float>({b, 1, 1, s}, mask)}};
    // Every product kernel: the vector ones widen the range from their registers, sgemm's
    // output gets a pass of its own.
    std::vector<const char*> kernels = {"vector", "vector-baseline", "blas"};
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    if (__builtin_cpu_supports("avx2")) kernels.push_back("vector-avx2");
#endif
    for (const char* kernel : kernels)
      for (const int threads : {1, 3}) {
        SCOPED_TRACE(std::string(kernel) + ", " + std::to_string(threads) + " threads");
        const ProductsKernel products(kernel);
        const Executor e(graph, {}, ExecutorOptions{.threads = threads});
        const Seen seen = run_seeing(e, in, {"y"});
        expect_range(seen, "neg_y", seen.out.at("y"));
        // The same values as the fused chain without a range (bit for bit).
        const Tensor plain = e.run(in, {"y"}).at("y");
        EXPECT_EQ(std::memcmp(plain.data(), seen.out.at("y").data(), plain.byte_size()), 0);
      }
  }
}

}  // namespace
}  // namespace qforge::model
