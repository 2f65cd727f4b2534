// The float kernels split across the executor's pool give the same bits as one thread: each
// split op on tensors large enough to be split, with shapes that split by rows and within rows.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

#include "onnx_builder.h"
#include "qforge/error.h"
#include "qforge/model/executor.h"
#include "qforge/model/onnx_import.h"
#include "test_support.h"

namespace qforge::model {
namespace {

using testing::OnnxBuilder;
constexpr int F = onnx::TensorProto::FLOAT;

// x [a, b, c, d] -> a chain through every split kernel, each result also a graph output.
Graph every_split_op(std::mt19937_64& g, std::int64_t a, std::int64_t b, std::int64_t c,
                     std::int64_t d) {
  OnnxBuilder m(17);
  m.input("x", F, {a, b, c, d});
  m.input("z", F, {1, b, 1, d});
  m.initializer("scale", {d}, test::random_values(g, static_cast<std::size_t>(d)));
  m.initializer("bias", {d}, test::random_values(g, static_cast<std::size_t>(d)));
  m.initializer("slope", {b, 1, 1}, test::random_values(g, static_cast<std::size_t>(b)));
  m.node("Add", {"x", "z"}, {"add"}, "add");
  m.node("Mul", {"add", "x"}, {"mul"}, "mul");
  m.node("Div", {"mul", "z"}, {"div"}, "div");
  m.node("Erf", {"div"}, {"erf"}, "erf");
  m.node("Tanh", {"x"}, {"tanh"}, "tanh");
  m.node("PRelu", {"x", "slope"}, {"prelu"}, "prelu");
  m.node("Equal", {"x", "z"}, {"eq"}, "eq");
  m.node("Where", {"eq", "x", "tanh"}, {"where"}, "where");
  OnnxBuilder::attr(m.node("Softmax", {"erf"}, {"softmax"}, "softmax"), "axis", std::int64_t{-1});
  OnnxBuilder::attr(m.node("Softmax", {"erf"}, {"softmax1"}, "softmax1"), "axis", std::int64_t{1});
  OnnxBuilder::attr(m.node("LayerNormalization", {"prelu", "scale", "bias"}, {"ln"}, "ln"), "axis",
                    std::int64_t{-1});
  OnnxBuilder::attr(m.node("Transpose", {"ln"}, {"tr"}, "tr"), "perm",
                    std::vector<std::int64_t>{0, 2, 3, 1});
  auto& mp = m.node("MaxPool", {"x"}, {"mp"}, "mp");
  OnnxBuilder::attr(mp, "kernel_shape", std::vector<std::int64_t>{2, 2});
  OnnxBuilder::attr(mp, "strides", std::vector<std::int64_t>{2, 2});
  auto& ap = m.node("AveragePool", {"x"}, {"ap"}, "ap");
  OnnxBuilder::attr(ap, "kernel_shape", std::vector<std::int64_t>{3, 3});
  OnnxBuilder::attr(ap, "pads", std::vector<std::int64_t>{1, 1, 1, 1});
  m.node("GlobalAveragePool", {"x"}, {"gap"}, "gap");
  m.output("softmax", F, {a, b, c, d}).output("softmax1", F, {a, b, c, d});
  m.output("tr", F, {a, c, d, b}).output("mp", F, {a, b, c / 2, d / 2});
  m.output("ap", F, {a, b, c, d}).output("gap", F, {a, b, 1, 1});
  m.output("where", F, {a, b, c, d}).output("mul", F, {a, b, c, d});
  return import_onnx_bytes(m.bytes(), "split_ops");
}

TEST(Threads, SplitKernelsAreBitIdenticalToOneThread) {
  SCOPED_TRACE(test::seed_text());
  auto g = test::rng(71);
  // Many short rows; few long rows (split within a row); odd sizes.
  const std::vector<std::array<std::int64_t, 4>> shapes = {
      {4, 8, 64, 64}, {1, 2, 2, 160000}, {3, 5, 37, 41}, {1, 1, 2, 7}};
  for (const auto& [a, b, c, d] : shapes) {
    SCOPED_TRACE(std::to_string(a) + "x" + std::to_string(b) + "x" + std::to_string(c) + "x" +
                 std::to_string(d));
    const Graph graph = every_split_op(g, a, b, c, d);
    const Executor one(graph, {}, ExecutorOptions{.threads = 1});
    TensorMap in = {{"x", test::random_tensor(g, {a, b, c, d}, -3.0f, 3.0f)},
                    {"z", test::random_tensor(g, {1, b, 1, d}, 0.5f, 2.0f)}};
    // Some equal elements, so Where takes both branches.
    auto x = in.at("x").values<float>();
    const auto z = in.at("z").values<float>();
    for (std::size_t i = 0; i < x.size(); i += 5) {
      const auto at = static_cast<std::int64_t>(i);
      x[i] = z[static_cast<std::size_t>((at / (c * d)) % b * d + at % d)];
    }
    const TensorMap want = one.run(in);
    for (const int threads : {2, 3, 4}) {
      SCOPED_TRACE(threads);
      const Executor many(graph, {}, ExecutorOptions{.threads = threads});
      const TensorMap got = many.run(in);
      for (const auto& [name, t] : want) {
        const Tensor& u = got.at(name);
        ASSERT_EQ(t.tensor_type(), u.tensor_type()) << name;
        EXPECT_EQ(std::memcmp(t.data(), u.data(), t.byte_size()), 0) << name;
      }
    }
  }
}

// Executor::parallel_for from a hook: every index once per call, split across the run's pool
// (whose workers then sleep), call after call and run after run; outside a run, on the
// calling thread alone.
TEST(Threads, ParallelForInAHookCoversEveryIndexOnce) {
  OnnxBuilder m(17);
  m.input("x", F, {4}).output("y", F, {4});
  m.node("Relu", {"x"}, {"y"}, "relu");
  const Graph graph = import_onnx_bytes(m.bytes(), "relu");
  constexpr std::int64_t kN = 100003;
  std::vector<std::atomic<int>> seen(kN);
  auto count = [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t i = begin; i < end; ++i) seen[static_cast<std::size_t>(i)].fetch_add(1);
  };
  const std::thread::id caller = std::this_thread::get_id();
  Executor::parallel_for(kN, 1000, [&](std::int64_t begin, std::int64_t end) {
    EXPECT_EQ(std::this_thread::get_id(), caller);  // no run: inline
    count(begin, end);
  });
  const Executor many(graph, {}, ExecutorOptions{.threads = 3});
  TensorMap in = {{"x", Tensor(ElementType::float32, Shape{4})}};
  in.at("x").values<float>()[1] = -2.0f;
  in.at("x").values<float>()[2] = 5.0f;
  int runs = 0;
  for (int round = 0; round < 4; ++round) {
    const TensorMap out = many.run(
        in, {}, [&](std::size_t, std::span<const Tensor* const>, std::span<Tensor* const>) {
          for (int call = 0; call < 3; ++call) {
            Executor::parallel_for(kN, 1000, count);
            ++runs;
          }
          return false;  // the Relu still runs as a float kernel
        });
    const auto y = out.at("y").values<float>();
    EXPECT_EQ(y[1], 0.0f);
    EXPECT_EQ(y[2], 5.0f);
  }
  ASSERT_EQ(runs, 12);
  for (std::int64_t i = 0; i < kN; ++i) {
    ASSERT_EQ(seen[static_cast<std::size_t>(i)].load(), 13) << "index " << i;
  }
}

TEST(Threads, NegativeCountIsRefused) {
  OnnxBuilder m(17);
  m.input("x", F, {4}).output("y", F, {4});
  m.node("Relu", {"x"}, {"y"}, "relu");
  const Graph graph = import_onnx_bytes(m.bytes(), "relu");
  try {
    Executor(graph, {}, ExecutorOptions{.threads = -1});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("threads is -1"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace qforge::model
