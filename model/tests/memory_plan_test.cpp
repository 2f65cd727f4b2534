// The executor's liveness plan: offsets never let two buffers that are live at one step share a
// byte, the arena lies between the liveness peak and the sum, and random graphs run bit for bit
// as they do without reuse (a buffer overwritten while still to be read would show there).
#include "qforge/model/memory_plan.h"

#include <gtest/gtest.h>

#include <cstring>
#include <iostream>
#include <random>

#include "onnx_builder.h"
#include "qforge/model/executor.h"
#include "qforge/model/onnx_import.h"
#include "test_support.h"

namespace qforge::model {
namespace {

using testing::OnnxBuilder;
constexpr int F = onnx::TensorProto::FLOAT;

std::size_t aligned(std::size_t n) {
  return (n + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment;
}

TEST(MemoryPlan, LiveBuffersNeverShareBytes) {
  SCOPED_TRACE(test::seed_text());
  auto g = test::rng(61);
  for (int round = 0; round < 200; ++round) {
    SCOPED_TRACE(round);
    const std::size_t n = std::uniform_int_distribution<std::size_t>(1, 40)(g);
    std::vector<BufferLifetime> buffers(n);
    std::size_t sum = 0;
    for (BufferLifetime& b : buffers) {
      b.bytes = std::uniform_int_distribution<std::size_t>(0, 5000)(g);
      b.first = std::uniform_int_distribution<std::size_t>(0, 30)(g);
      b.last = b.first + std::uniform_int_distribution<std::size_t>(0, 10)(g);
      sum += aligned(b.bytes);
    }
    for (const bool reuse : {true, false}) {
      std::size_t arena = 0;
      const std::vector<std::size_t> at = assign_offsets(buffers, reuse, arena);
      ASSERT_EQ(at.size(), n);
      for (std::size_t i = 0; i < n; ++i) {
        EXPECT_EQ(at[i] % kArenaAlignment, 0u);
        EXPECT_LE(at[i] + aligned(buffers[i].bytes), arena);
        for (std::size_t j = i + 1; j < n; ++j) {
          const bool live_together =
              buffers[i].first <= buffers[j].last && buffers[j].first <= buffers[i].last;
          const bool share = at[i] < at[j] + buffers[j].bytes && at[j] < at[i] + buffers[i].bytes;
          EXPECT_FALSE(live_together && share) << "buffers " << i << " and " << j;
        }
      }
      EXPECT_GE(arena, liveness_peak(buffers));
      if (reuse) EXPECT_LE(arena, sum);
      else EXPECT_EQ(arena, sum);
    }
  }
}

TEST(MemoryPlan, LivenessPeakCountsTheBusiestStep) {
  const std::vector<BufferLifetime> buffers = {{100, 0, 1}, {64, 1, 2}, {1000, 3, 3}, {10, 2, 4}};
  // Step 1: 128 + 64; step 3: 1024 + 64.
  EXPECT_EQ(liveness_peak(buffers), 1024u + 64u);
}

// A random graph of float vectors: unary ops (Relu runs in place), binary ops of two earlier
// values of one length, Concat (longer values) and Pad (outputs the executor zero-fills); some
// intermediates are graph outputs, the rest die at their last reader.
struct RandomGraph {
  Graph graph;
  std::vector<std::string> intermediates;
};

RandomGraph random_graph(std::mt19937_64& g) {
  OnnxBuilder b(17);
  struct Value {
    std::string name;
    std::int64_t length;
  };
  std::vector<Value> values;
  const int inputs = std::uniform_int_distribution<int>(1, 3)(g);
  for (int i = 0; i < inputs; ++i) {
    const std::int64_t length = std::uniform_int_distribution<std::int64_t>(1, 300)(g);
    values.push_back({"x" + std::to_string(i), length});
    b.input(values.back().name, F, {length});
  }
  b.initializer_i64("pads", {2}, {3, 5});
  RandomGraph out;
  const int nodes = std::uniform_int_distribution<int>(2, 30)(g);
  auto pick = [&]() -> const Value& {
    // Mostly recent values, so chains form and old values die.
    const std::size_t n = values.size();
    const std::size_t back =
        std::min<std::size_t>(n - 1, std::geometric_distribution<std::size_t>(0.4)(g));
    return values[n - 1 - back];
  };
  for (int i = 0; i < nodes; ++i) {
    const std::string y = "v" + std::to_string(i);
    const std::string name = "n" + std::to_string(i);
    const int kind = std::uniform_int_distribution<int>(0, 9)(g);
    const Value a = pick();
    std::int64_t length = a.length;
    if (kind <= 3) {
      static const char* const unary[] = {"Relu", "Relu", "Neg", "Sigmoid"};
      b.node(unary[kind], {a.name}, {y}, name);
    } else if (kind <= 6) {
      std::vector<const Value*> same;
      for (const Value& v : values)
        if (v.length == a.length) same.push_back(&v);
      const Value& other = *same[std::uniform_int_distribution<std::size_t>(0, same.size() - 1)(g)];
      static const char* const binary[] = {"Add", "Mul", "Sub"};
      b.node(binary[kind - 4], {a.name, other.name}, {y}, name);
    } else if (kind <= 8) {
      const Value c = pick();
      OnnxBuilder::attr(b.node("Concat", {a.name, c.name}, {y}, name), "axis", std::int64_t{0});
      length = a.length + c.length;
    } else {
      b.node("Pad", {a.name, "pads"}, {y}, name);
      length = a.length + 8;
    }
    values.push_back({y, length});
    out.intermediates.push_back(y);
  }
  // The last value and a few random ones are graph outputs.
  std::vector<std::string> outputs = {values.back().name};
  b.output(values.back().name, F, {values.back().length});
  for (auto i = static_cast<std::size_t>(inputs); i + 1 < values.size(); ++i)
    if (std::bernoulli_distribution(0.1)(g)) b.output(values[i].name, F, {values[i].length});
  out.graph = import_onnx_bytes(b.bytes(), "random");
  return out;
}

TEST(MemoryPlan, RandomGraphsRunBitForBitAsWithoutReuse) {
  SCOPED_TRACE(test::seed_text());
  auto g = test::rng(62);
  std::size_t shared = 0;
  for (int round = 0; round < 60; ++round) {
    SCOPED_TRACE(round);
    const RandomGraph r = random_graph(g);
    const Executor reused(r.graph);
    const Executor apart(r.graph, {}, ExecutorOptions{.reuse_memory = false});
    const MemoryPlan& plan = reused.memory_plan();
    EXPECT_GE(plan.arena_bytes, plan.liveness_peak_bytes);
    EXPECT_LE(plan.arena_bytes, plan.total_bytes);
    EXPECT_EQ(apart.memory_plan().arena_bytes, plan.total_bytes);
    shared += plan.arena_bytes < plan.total_bytes;
    // Keep a few intermediates, also ones a Relu overwrites in place (resolve drops the nodes
    // no output depends on).
    std::vector<std::string> keep;
    for (const std::string& v : r.intermediates)
      if (reused.graph().producer_of(v) && std::bernoulli_distribution(0.2)(g)) keep.push_back(v);
    for (int run = 0; run < 2; ++run) {
      SCOPED_TRACE(run);
      TensorMap in;
      for (const ValueInfo& v : reused.graph().inputs)
        in.emplace(v.name, test::random_tensor(g, v.shape(), -2.0f, 2.0f));
      const TensorMap want = apart.run(in, keep);
      const TensorMap got = reused.run(in, keep);
      ASSERT_EQ(want.size(), got.size());
      for (const auto& [name, t] : want) {
        const Tensor& u = got.at(name);
        ASSERT_EQ(t.tensor_type(), u.tensor_type()) << name;
        EXPECT_EQ(std::memcmp(t.data(), u.data(), t.byte_size()), 0) << name;
      }
    }
  }
  // The check means something only where buffers were actually shared.
  EXPECT_GT(shared, 20u);
}

// A chain a -> b -> c -> d of equal sizes needs two buffers, not four; the Relu shares its
// input's buffer.
TEST(MemoryPlan, AChainNeedsTwoBuffers) {
  OnnxBuilder b(17);
  b.input("x", F, {1000}).output("d", F, {1000});
  b.node("Neg", {"x"}, {"a"}, "n1");
  b.node("Sigmoid", {"a"}, {"b"}, "n2");
  b.node("Relu", {"b"}, {"c"}, "n3");
  b.node("Neg", {"c"}, {"d"}, "n4");
  const Executor exec(import_onnx_bytes(b.bytes(), "chain"));
  const MemoryPlan& plan = exec.memory_plan();
  EXPECT_EQ(plan.buffers.size(), 3u);  // a, b (with c in place), d
  EXPECT_EQ(plan.arena_bytes, 2 * aligned(4000));
  EXPECT_EQ(plan.total_bytes, 3 * aligned(4000));
  EXPECT_NE(describe(plan).find("liveness peak"), std::string::npos);
}

// The example models at the batch of the speed target: the plan's arena against the sum.
TEST(MemoryPlan, FashionMnistModels) {
  for (const char* name : {"cnn", "mlp"}) {
    const Graph graph =
        import_onnx_file(std::string(QFORGE_EXAMPLES_DIR) + "/fashion_mnist/" + name + ".onnx");
    ResolveOptions options;
    options.input_shapes["image"] = {256, 1, 28, 28};
    const Executor exec(graph, options);
    const MemoryPlan& plan = exec.memory_plan();
    EXPECT_LT(plan.arena_bytes, plan.total_bytes) << name;
    EXPECT_GE(plan.arena_bytes, plan.liveness_peak_bytes) << name;
    std::cout << name << " [256, 1, 28, 28]: " << describe(plan) << "\n";
  }
}

}  // namespace
}  // namespace qforge::model
