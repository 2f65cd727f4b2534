// The input prelude (QuantizedModel::plan_input_preludes): scalar Sub / Div / Mul / Add nodes and
// reshapes between a graph input and a static layer are computed by the layer in one pass per
// step before its quantize (static int8 / uint8 per-tensor params: normalize and quantize in one
// pass, block by block). The codes, and so the outputs, equal those of running the nodes in
// the float executor, which a run that keeps one of their tensors does.
#include <gtest/gtest.h>

#include <cstring>
#include <limits>

#include "fixtures.h"

namespace qforge::model {
namespace {

using namespace qtest;

// x [batch, 1, side, side] -> Sub "sub" (c) -> Div "div" (d) -> Mul "mul" (e) -> Flatten ->
// Gemm "fc" (side^2 -> 5, bias) -> y; with `shared`, the Div's output is also a graph output (so
// the prelude cannot skip the nodes).
Graph normalized_gemm(std::mt19937_64& g, bool shared = false, std::int64_t batch = 4,
                      std::int64_t side = 6) {
  const std::int64_t k = side * side;
  OnnxBuilder b(17);
  b.input("x", F, {batch, 1, side, side}).output("y", F, {batch, 5});
  if (shared) b.output("n", F, {batch, 1, side, side});
  b.initializer("c", {}, {0.2860f});
  b.initializer("d", {1}, {0.3530f});
  b.initializer("e", {1, 1, 1, 1}, {1.25f});
  b.initializer("W", {k, 5}, weights(g, k, k * 5));
  b.initializer("B", {5}, weights(g, 4, 5));
  b.node("Sub", {"x", "c"}, {"s"}, "sub");
  b.node("Div", {"s", "d"}, {"n"}, "div");
  b.node("Mul", {"n", "e"}, {"m"}, "mul");
  b.node("Flatten", {"m"}, {"f"}, "flatten");
  b.node("Gemm", {"f", "W", "B"}, {"y"}, "fc");
  return import_onnx_bytes(b.bytes(), "normalized_gemm");
}

void expect_fused_equals_apart(std::int64_t batch, std::int64_t side) {
  SCOPED_TRACE(test::seed_text());
  SCOPED_TRACE("x [" + std::to_string(batch) + ", 1, " + std::to_string(side) + ", " +
               std::to_string(side) + "]");
  auto g = test::rng(41);
  const Graph graph = normalized_gemm(g, false, batch, side);
  const auto data = batches(g, graph, kCalibrationBatches);
  auto scalar = accelerator("cpu_scalar");
  ASSERT_TRUE(scalar);
  auto x86 = accelerator("cpu_x86");
  Prepared p = prepare(graph, matmul_recipe(minmax_layer()), data);
  for (Accelerator* acc : {scalar.get(), x86.get()}) {
    if (!acc) continue;
    SCOPED_TRACE(acc == scalar.get() ? "cpu_scalar" : "cpu_x86");
    QuantizedModel q(*p.float_model, p.recipe, p.resolution, p.calibration, *acc);
    for (int round = 0; round < 4; ++round) {
      TensorMap batch = batches(g, graph, 1)[0];
      // Past the calibrated range too, so that some codes saturate.
      const auto x = batch.at("x").values<float>();
      for (float& v : x) v *= 1.0f + 0.5f * static_cast<float>(round);
      if (round == 3) {
        // Values that quantize to the zero point (NaN) and to either end of the range.
        x[0] = std::numeric_limits<float>::quiet_NaN();
        x[1] = std::numeric_limits<float>::infinity();
        x[2] = -std::numeric_limits<float>::infinity();
        x[3] = -0.0f;
      }
      const TensorMap fused = q.run(batch);
      // Keeping a tensor of the prelude runs its nodes in the float executor.
      const TensorMap apart = q.run(batch, {"n"});
      const auto a = fused.at("y").values<float>(), b = apart.at("y").values<float>();
      ASSERT_EQ(a.size(), b.size());
      EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(float)));
      // And within the calibrated range both are the float model's within quantization error.
      if (round == 0) {
        EXPECT_GT(sqnr_db(p.float_model->run(batch).at("y"), fused.at("y")), 20.0);
      }
    }
  }
}

TEST(InputPrelude, TheFusedNormalizationGivesTheSameOutputs) { expect_fused_equals_apart(4, 6); }

// Past the fused pass's grain: its blocks split across the executor's threads (where the
// machine has more than one core).
TEST(InputPrelude, TheFusedNormalizationSplitAcrossThreadsGivesTheSameOutputs) {
  expect_fused_equals_apart(16, 96);
}

TEST(InputPrelude, ATensorReadElsewhereKeepsTheNodes) {
  SCOPED_TRACE(test::seed_text());
  auto g = test::rng(42);
  const Graph graph = normalized_gemm(g, /*shared=*/true);
  const auto data = batches(g, graph, kCalibrationBatches);
  auto acc = accelerator("cpu_scalar");
  ASSERT_TRUE(acc);
  Prepared p = prepare(graph, matmul_recipe(minmax_layer()), data);
  QuantizedModel q(*p.float_model, p.recipe, p.resolution, p.calibration, *acc);
  const TensorMap batch = batches(g, graph, 1)[0];
  const TensorMap got = q.run(batch);
  const TensorMap want = p.float_model->run(batch);
  // The graph output "n" is computed, not skipped.
  const auto gn = got.at("n").values<float>(), wn = want.at("n").values<float>();
  ASSERT_EQ(gn.size(), wn.size());
  EXPECT_EQ(0, std::memcmp(gn.data(), wn.data(), gn.size() * sizeof(float)));
  EXPECT_GT(sqnr_db(want.at("y"), got.at("y")), 20.0);
}

}  // namespace
}  // namespace qforge::model
