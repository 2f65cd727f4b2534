// Executor::run_in_place: a node's output planned on one of its inputs' bytes (a quantized
// MatMul's bias Add, which the layer's epilogue computes). The output then is that input's
// tensor; anything outside a node output that only this node reads, once, of the output's type
// and shape, is refused with the reason.
#include <gtest/gtest.h>

#include <cstring>

#include "onnx_builder.h"
#include "qforge/error.h"
#include "qforge/model/executor.h"
#include "qforge/model/onnx_import.h"
#include "test_support.h"

namespace qforge::model {
namespace {

using testing::OnnxBuilder;
constexpr int F = onnx::TensorProto::FLOAT;

// x [3, 8] -> MatMul (W) -> m -> Add "add" (b [8]) -> y; with `twice`, m is also read by "add2".
Graph add_graph(std::mt19937_64& g, bool twice) {
  OnnxBuilder b(17);
  b.input("x", F, {3, 8}).output("y", F, {3, 8});
  if (twice) b.output("y2", F, {3, 8});
  b.initializer("W", {8, 8}, test::random_values(g, 64, -1.0f, 1.0f));
  b.initializer("b", {8}, test::random_values(g, 8, -1.0f, 1.0f));
  b.node("MatMul", {"x", "W"}, {"m"}, "mm");
  b.node("Add", {"m", "b"}, {"y"}, "add");
  if (twice) b.node("Add", {"m", "m"}, {"y2"}, "add2");
  return import_onnx_bytes(b.bytes(), "run_in_place");
}

TEST(RunInPlace, TheOutputIsTheInputsTensorAndTheFloatRunIsUnchanged) {
  SCOPED_TRACE(test::seed_text());
  auto g = test::rng(81);
  const Graph graph = add_graph(g, false);
  Executor plain(graph);
  Executor in_place(graph);
  EXPECT_FALSE(in_place.in_fused_chain(1));
  in_place.run_in_place(1, 0);
  TensorMap inputs;
  inputs.emplace("x", test::random_tensor(g, {3, 8}));
  // Without a hook the Add's kernel runs in place: the same values.
  const Tensor want = plain.run(inputs).at("y");
  const Tensor got = in_place.run(inputs).at("y");
  ASSERT_EQ(got.size(), want.size());
  EXPECT_EQ(0, std::memcmp(got.data(), want.data(), want.byte_size()));
  // A hook sees the Add's output on the MatMul's bytes.
  bool same = false;
  in_place.run(
      inputs, {},
      [&](std::size_t node, std::span<const Tensor* const> in, std::span<Tensor* const> out) {
        if (node == 1) same = out[0] == in[0];
        return false;
      });
  EXPECT_TRUE(same);
}

TEST(RunInPlace, RefusesWhatItCannotShare) {
  SCOPED_TRACE(test::seed_text());
  auto g = test::rng(82);
  Executor once(add_graph(g, false));
  Executor twice(add_graph(g, true));
  const auto refused = [](Executor& e, std::size_t node, std::size_t input,
                          const std::string& why) {
    try {
      e.run_in_place(node, input);
      ADD_FAILURE() << "accepted node " << node << " input " << input;
    } catch (const Error& err) {
      EXPECT_EQ(err.code(), ErrorCode::invalid_argument);
      EXPECT_NE(std::string(err.what()).find(why), std::string::npos) << err.what();
    }
  };
  refused(once, 1, 1, "not a node output");  // the bias, an initializer
  refused(once, 0, 0, "not a node output");  // the MatMul's x, a graph input
  refused(once, 1, 2, "no input 2");
  refused(once, 7, 0, "out of range");
  refused(twice, 1, 0, "not a node output");  // m is read by two Adds
}

}  // namespace
}  // namespace qforge::model
