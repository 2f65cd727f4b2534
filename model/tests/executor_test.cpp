// The executor's reuse of its arena across runs: every run of one Executor equals a fresh
// Executor's run on the same inputs (no value leaks from an earlier run, zeroed outputs for
// kernels that rely on it), returned and kept tensors are copies that later runs leave alone, a
// Relu runs in place where no other node reads its input (a kept input is copied before), and a
// copied Executor runs on its own arena, Reshape-like nodes are views of a sole input, and retyped
// outputs carry int8 codes through MaxPool, and the profile times every step that runs.
// memory_plan_test.cpp checks the sharing of the arena.
#include "qforge/model/executor.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <string>

#include "onnx_builder.h"
#include "qforge/error.h"
#include "qforge/model/onnx_import.h"
#include "test_support.h"

namespace qforge::model {
namespace {

using testing::OnnxBuilder;
constexpr int F = onnx::TensorProto::FLOAT;

// x [2, 3, 6, 6] -> Conv (pads 1) -> Relu -> MaxPool 2x2 -> Concat with Neg of itself -> Pad
// -> Flatten -> Gemm -> Softmax -> y [2, 5]. Concat and Pad are outside the executor's list of
// kernels known to write every element, so their outputs are zeroed before each run.
Graph small_net(std::mt19937_64& g) {
  OnnxBuilder b(17);
  b.input("x", F, {2, 3, 6, 6}).output("y", F, {2, 5});
  b.initializer("W", {4, 3, 3, 3}, test::random_values(g, 108));
  b.initializer("B", {4}, test::random_values(g, 4));
  b.initializer("Wf", {200, 5}, test::random_values(g, 1000, -0.1f, 0.1f));
  b.initializer_i64("pads", {8}, {0, 0, 1, 1, 0, 0, 1, 1});
  OnnxBuilder::attr(b.node("Conv", {"x", "W", "B"}, {"c"}, "conv"), "pads",
                    std::vector<std::int64_t>{1, 1, 1, 1});
  b.node("Relu", {"c"}, {"r"}, "relu");
  auto& pool = b.node("MaxPool", {"r"}, {"p"}, "pool");
  OnnxBuilder::attr(pool, "kernel_shape", std::vector<std::int64_t>{2, 2});
  OnnxBuilder::attr(pool, "strides", std::vector<std::int64_t>{2, 2});
  b.node("Neg", {"p"}, {"n"}, "neg");
  OnnxBuilder::attr(b.node("Concat", {"p", "n"}, {"cat"}, "concat"), "axis", std::int64_t{1});
  b.node("Pad", {"cat", "pads"}, {"padded"}, "pad");
  b.node("Flatten", {"padded"}, {"f"}, "flatten");
  b.node("Gemm", {"f", "Wf"}, {"logits"}, "fc");
  b.node("Softmax", {"logits"}, {"y"}, "softmax");
  return import_onnx_bytes(b.bytes(), "small_net");
}

bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.tensor_type() == b.tensor_type() && std::memcmp(a.data(), b.data(), a.byte_size()) == 0;
}

TEST(Executor, EveryRunEqualsAFreshExecutor) {
  SCOPED_TRACE(test::seed_text());
  auto g = test::rng(31);
  const Graph graph = small_net(g);
  const Executor reused(graph);
  for (int run = 0; run < 3; ++run) {
    SCOPED_TRACE(run);
    // Wider inputs each run, so stale values of a smaller run would show.
    const TensorMap in = {{"x", test::random_tensor(g, {2, 3, 6, 6}, -1.0f - run, 1.0f + run)}};
    const TensorMap want = Executor(graph).run(in, {"cat", "padded"});
    const TensorMap got = reused.run(in, {"cat", "padded"});
    for (const char* name : {"y", "cat", "padded"})
      EXPECT_TRUE(same_bytes(want.at(name), got.at(name))) << name;
  }
}

TEST(Executor, ReturnedTensorsAreCopiesThatLaterRunsLeaveAlone) {
  SCOPED_TRACE(test::seed_text());
  auto g = test::rng(32);
  const Graph graph = small_net(g);
  const Executor exec(graph);
  const TensorMap in1 = {{"x", test::random_tensor(g, {2, 3, 6, 6})}};
  const TensorMap in2 = {{"x", test::random_tensor(g, {2, 3, 6, 6})}};
  const TensorMap first = exec.run(in1, {"r"});
  const Tensor r1 = first.at("r"), y1 = first.at("y");
  exec.run(in2, {"r"});
  EXPECT_TRUE(same_bytes(first.at("r"), r1));
  EXPECT_TRUE(same_bytes(first.at("y"), y1));
  // A copy keeps its own tensors: running it does not disturb the original's next run.
  const Executor copy = exec;
  EXPECT_TRUE(same_bytes(copy.run(in2).at("y"), exec.run(in2).at("y")));
  EXPECT_TRUE(same_bytes(exec.run(in1).at("y"), y1));
}

// The Relu after the Conv runs in place on the conv's output; a run that keeps that output gets
// it as it was before the Relu.
TEST(Executor, ReluRunsInPlaceAndAKeptInputIsCopiedBefore) {
  SCOPED_TRACE(test::seed_text());
  auto g = test::rng(33);
  const Executor exec(small_net(g));
  const TensorMap in = {{"x", test::random_tensor(g, {2, 3, 6, 6})}};
  const TensorMap plain = exec.run(in, {"r"});
  const TensorMap apart = exec.run(in, {"c", "r"});
  EXPECT_TRUE(same_bytes(plain.at("y"), apart.at("y")));
  EXPECT_TRUE(same_bytes(plain.at("r"), apart.at("r")));
  const auto c = apart.at("c").values<float>(), r = apart.at("r").values<float>();
  std::size_t negative = 0;
  for (std::size_t i = 0; i < c.size(); ++i) {
    negative += c[i] < 0;
    EXPECT_EQ(r[i], c[i] > 0 ? c[i] : 0.0f);
  }
  EXPECT_GT(negative, 0u) << "the kept conv output was overwritten by the Relu";
  // The hook sees the aliasing: the same tensor in and out, kept or not. Fused, Conv-Relu-MaxPool
  // is one chain whose Relu the hook is not offered unless `c` is kept (executor.h).
  std::size_t relu = 0;
  while (exec.graph().nodes[relu].name != "relu") ++relu;
  const Executor unfused(exec.graph(), {}, ExecutorOptions{.fuse = false});
  for (const bool fuse : {false, true}) {
    for (const bool keep_c : {false, true}) {
      bool offered = false, in_place = false;
      (fuse ? exec : unfused)
          .run(in, keep_c ? std::vector<std::string>{"c"} : std::vector<std::string>{},
               [&](std::size_t node, std::span<const Tensor* const> i, std::span<Tensor* const> o) {
                 if (node == relu) offered = true, in_place = i[0] == o[0];
                 return false;
               });
      const bool inner_of_fused_chain = fuse && !keep_c;
      EXPECT_EQ(offered, !inner_of_fused_chain) << "fuse: " << fuse << ", keep c: " << keep_c;
      if (!inner_of_fused_chain)
        EXPECT_TRUE(in_place) << "fuse: " << fuse << ", keep c: " << keep_c;
    }
  }
}

// Relu after Relu: the second runs in place on the tensor the first already shares.
TEST(Executor, ChainedReluRunsInPlaceOnTheSharedTensor) {
  OnnxBuilder b(17);
  b.input("x", F, {5}).output("y", F, {5});
  b.node("Neg", {"x"}, {"n"}, "neg");
  b.node("Relu", {"n"}, {"r"}, "relu1");
  b.node("Relu", {"r"}, {"y"}, "relu2");
  const Executor exec(import_onnx_bytes(b.bytes(), "relus"));
  for (int run = 0; run < 2; ++run) {
    const float s = run ? -1.0f : 1.0f;
    const TensorMap out =
        exec.run({{"x", Tensor::from_values<float>({5}, {-2 * s, -1 * s, 0, 1 * s, 2 * s})}});
    const auto y = out.at("y").values<float>();
    const std::vector<float> want =
        run ? std::vector<float>{0, 0, 0, 1, 2} : std::vector<float>{2, 1, 0, 0, 0};
    EXPECT_EQ(std::vector<float>(y.begin(), y.end()), want);
  }
}

// Reshape-like nodes whose input only they read give a view of its bytes: the values arrive
// through Reshape, Unsqueeze, an in-place Relu on the view and Flatten; a kept input of a view
// is copied; a Reshape whose input has another reader copies.
TEST(Executor, ReshapesOfSoleInputsAreViews) {
  SCOPED_TRACE(test::seed_text());
  auto g = test::rng(91);
  OnnxBuilder b(17);
  b.input("x", F, {2, 6}).output("y", F, {12}).output("z", F, {3, 4});
  b.initializer_i64("shape", {2}, {3, 4});
  b.initializer_i64("axes", {1}, {0});
  b.node("Neg", {"x"}, {"n"}, "neg");
  b.node("Reshape", {"n", "shape"}, {"r"}, "reshape");
  b.node("Unsqueeze", {"r", "axes"}, {"u"}, "unsqueeze");
  b.node("Relu", {"u"}, {"p"}, "relu");
  OnnxBuilder::attr(b.node("Flatten", {"p"}, {"f"}, "flatten"), "axis", std::int64_t{0});
  b.node("Reshape", {"f", "twelve"}, {"y"}, "to_1d");
  b.initializer_i64("twelve", {1}, {12});
  b.node("Reshape", {"x", "shape"}, {"z"}, "of_input");  // a graph input: copied
  const Executor exec(import_onnx_bytes(b.bytes(), "views"));
  for (int run = 0; run < 2; ++run) {
    const std::vector<float> x = test::random_values(g, 12, -1, 1);
    const TensorMap out = exec.run({{"x", Tensor::from_values<float>({2, 6}, x)}}, {"r", "f"});
    for (std::size_t i = 0; i < 12; ++i) {
      EXPECT_EQ(out.at("y").values<float>()[i], std::max(-x[i], 0.0f)) << i;
      EXPECT_EQ(out.at("r").values<float>()[i], -x[i]) << "kept before the Relu, " << i;
      EXPECT_EQ(out.at("z").values<float>()[i], x[i]) << i;
    }
    EXPECT_EQ(out.at("r").shape(), (Shape{3, 4}));
    EXPECT_EQ(out.at("f").shape(), (Shape{1, 12}));
  }
}

// Retyped outputs (the quantized model's int8 path): a hook writes int8 codes into a retyped
// tensor, the executor's MaxPool reads and writes codes (padded windows included), and the
// result equals the float MaxPool of the same values.
TEST(Executor, RetypedOutputsCarryInt8CodesThroughMaxPool) {
  SCOPED_TRACE(test::seed_text());
  auto g = test::rng(71);
  OnnxBuilder b(17);
  b.input("x", F, {2, 3, 7, 7}).output("y", F, {2, 3, 4, 4});
  b.node("Identity", {"x"}, {"codes"}, "to_codes");
  auto& pool = b.node("MaxPool", {"codes"}, {"pooled"}, "pool");
  OnnxBuilder::attr(pool, "kernel_shape", std::vector<std::int64_t>{3, 3});
  OnnxBuilder::attr(pool, "strides", std::vector<std::int64_t>{2, 2});
  OnnxBuilder::attr(pool, "pads", std::vector<std::int64_t>{1, 1, 1, 1});
  b.node("Identity", {"pooled"}, {"y"}, "to_float");
  const Graph graph = import_onnx_bytes(b.bytes(), "codes");
  // Integer values in the int8 range, so that the float MaxPool is the reference.
  std::vector<float> v = test::random_values(g, 2 * 3 * 7 * 7, -128.0f, 127.0f);
  // + 0.0f: nearbyint of a small negative value is -0.0, whose int8 code comes back as +0.0.
  for (float& x : v) x = std::nearbyint(x) + 0.0f;
  TensorMap in;
  in.emplace("x", Tensor::from_values<float>({2, 3, 7, 7}, v));
  const Executor plain(graph);
  const TensorMap want = plain.run(in);

  Executor codes(graph);
  EXPECT_THROW(codes.retype_outputs({{"x", ElementType::int8}}), Error);
  codes.retype_outputs({{"codes", ElementType::int8}, {"pooled", ElementType::int8}});
  const NodeHook hook = [](std::size_t node, std::span<const Tensor* const> i,
                           std::span<Tensor* const> o) {
    if (node == 1) return false;  // MaxPool: the executor's kernel, on int8 tensors
    if (node == 0) {
      EXPECT_EQ(o[0]->type(), ElementType::int8);
      const auto x = i[0]->values<float>();
      const auto q = o[0]->values<std::int8_t>();
      for (std::size_t k = 0; k < x.size(); ++k) q[k] = static_cast<std::int8_t>(x[k]);
    } else {
      EXPECT_EQ(i[0]->type(), ElementType::int8);
      const auto q = i[0]->values<std::int8_t>();
      const auto y = o[0]->values<float>();
      for (std::size_t k = 0; k < q.size(); ++k) y[k] = q[k];
    }
    return true;
  };
  const TensorMap got = codes.run(in, {"pooled"}, hook);
  EXPECT_EQ(got.at("pooled").type(), ElementType::int8);
  const auto y = got.at("y").values<float>(), w = want.at("y").values<float>();
  ASSERT_EQ(y.size(), w.size());
  EXPECT_EQ(0, std::memcmp(y.data(), w.data(), y.size() * sizeof(float)));
}

// ExecutorOptions::profile: every step that runs is timed under its label, once per run (fused
// chains under their kind, nodes a hook computed marked, views and a chain's inner nodes not at
// all); profiling changes no output; reset_profile empties it; without the option it is empty.
std::map<std::string, StepTime> profile_by_label(const Executor& e) {
  std::map<std::string, StepTime> out;
  const std::vector<StepTime> times = e.profile();
  for (std::size_t i = 0; i < times.size(); ++i) {
    EXPECT_GE(times[i].seconds, 0.0) << times[i].label;
    if (i > 0) EXPECT_GE(times[i - 1].seconds, times[i].seconds) << "not longest first";
    out[times[i].label] = times[i];
  }
  return out;
}

TEST(Executor, ProfileTimesEveryStepThatRunsUnderItsLabel) {
  SCOPED_TRACE(test::seed_text());
  auto g = test::rng(41);
  const Graph graph = small_net(g);
  const TensorMap in = {{"x", test::random_tensor(g, {2, 3, 6, 6})}};
  ExecutorOptions on;
  on.profile = true;
  const Executor profiled(graph, {}, on);
  EXPECT_TRUE(profiled.profile().empty());
  EXPECT_TRUE(same_bytes(profiled.run(in).at("y"), Executor(graph).run(in).at("y")));
  // The hook computes the Neg (and only it): its step is labelled as the hook's.
  const NodeHook neg_hook = [&](std::size_t node, std::span<const Tensor* const> ins,
                                std::span<Tensor* const> outs) {
    if (profiled.graph().nodes[node].op_type != "Neg") return false;
    const auto x = ins[0]->values<float>();
    auto y = outs[0]->values<float>();
    for (std::size_t i = 0; i < x.size(); ++i) y[i] = -x[i];
    return true;
  };
  EXPECT_TRUE(same_bytes(profiled.run(in, {}, neg_hook).at("y"), Executor(graph).run(in).at("y")));
  const auto times = profile_by_label(profiled);
  const std::map<std::string, std::int64_t> want = {
      {"fused conv", 2}, {"Neg", 1},  {"Neg (hook)", 1}, {"Concat", 2},
      {"Pad", 2},        {"Gemm", 2}, {"Softmax", 2}};
  EXPECT_EQ(times.size(), want.size());
  for (const auto& [label, calls] : want) {
    ASSERT_TRUE(times.count(label)) << label << " was not timed";
    EXPECT_EQ(times.at(label).calls, calls) << label;
  }
  // Copies share the times.
  const Executor copy = profiled;
  copy.run(in);
  EXPECT_EQ(profile_by_label(profiled).at("Gemm").calls, 3);
  profiled.reset_profile();
  EXPECT_TRUE(profiled.profile().empty());

  // Unfused, the chain's nodes are timed one by one; the Flatten of a sole input is a view.
  on.fuse = false;
  const Executor unfused(graph, {}, on);
  unfused.run(in);
  const auto node_times = profile_by_label(unfused);
  for (const char* op : {"Conv", "Relu", "MaxPool"}) {
    ASSERT_TRUE(node_times.count(op)) << op << " was not timed";
    EXPECT_EQ(node_times.at(op).calls, 1) << op;
  }
  EXPECT_FALSE(node_times.count("Flatten"));
  EXPECT_FALSE(node_times.count("fused conv"));

  const Executor plain(graph);
  plain.run(in);
  EXPECT_TRUE(plain.profile().empty());
}

}  // namespace
}  // namespace qforge::model
