// Primitive reuse: a dnnl::matmul is made once per (shape, dtypes, attributes, threads) and
// reused whatever the data, zero points and scales of later calls; packed weights are reordered
// once and serve every M. Read through devices()[0].properties["matmul_primitives"]
// ("entries=E hits=H misses=M"), which the plugin reports for exactly this purpose.
#include <gtest/gtest.h>

#include <algorithm>

#include "matmul_check.h"
#include "qforge/reference.h"

namespace qforge::onednn_test {
namespace {

std::map<std::string, std::uint64_t> stats(const QuantizationOps& ops) {
  return counters(device_property(ops, "matmul_primitives"));
}

#define SKIP_UNLESS_MATMULS(ops)                                                                \
  do {                                                                                          \
    const std::string why = device_property(ops, "int8_matmul");                                \
    if (why.rfind("exact", 0) != 0) GTEST_SKIP() << "onednn refuses int8 matmul here: " << why; \
  } while (0)

MatmulDesc desc_with(Rng& rng, std::int64_t m, std::int32_t za, std::int32_t zb) {
  return matmul_desc(
      m, 48, 200, QuantizationParams::per_tensor_affine(DType::uint8, random_scale(rng), za),
      QuantizationParams::per_tensor_affine(DType::int8, random_scale(rng), zb), MatrixLayout::nk);
}

TEST(PrimitiveCache, SameShapeReusesThePrimitive) {
  ONEDNN_OR_SKIP(ops);
  SKIP_UNLESS_MATMULS(ops);
  Rng rng = test_rng();
  // The per-call op runs the backend's choice for an int32 result: this kernel's primitive,
  // kept in the instance's cache (plans keep theirs in their workers).
  ASSERT_EQ(ops.plan({OpKind::matmul_integer, desc_with(rng, 7, 3, 5)}, PlanRequest{})->kernel(),
            "dnnl_matmul_u8s8_s32");
  ASSERT_EQ(expect_exact(ops, random_run(rng, OpKind::matmul_integer, desc_with(rng, 7, 3, 5))), 2);
  const auto first = stats(ops);
  ASSERT_GE(first.at("entries"), 1u);
  // New data, new (non-zero) zero points and scales: runtime arguments, same primitives.
  for (int i = 0; i < 3; ++i) {
    const std::int32_t za = 1 + static_cast<std::int32_t>(rng() % 254),
                       zb = 1 + static_cast<std::int32_t>(rng() % 100);
    expect_exact(ops, random_run(rng, OpKind::matmul_integer, desc_with(rng, 7, za, zb)));
  }
  const auto later = stats(ops);
  EXPECT_EQ(later.at("entries"), first.at("entries"));
  EXPECT_EQ(later.at("misses"), first.at("misses"));
  EXPECT_GE(later.at("hits"), first.at("hits") + 6);  // 3 rounds x (direct, packed)

  // Another M is another primitive.
  ops.matmul_integer(desc_with(rng, 9, 3, 5), std::vector<std::uint8_t>(9 * 200).data(),
                     std::vector<std::uint8_t>(48 * 200).data(),
                     std::vector<std::int32_t>(9 * 48).data());
  EXPECT_EQ(stats(ops).at("entries"), later.at("entries") + 1);
}

// Every M runs on the same packed B. oneDNN may want another blocked format for some M (on a
// 16-core AMX machine M = 1 picks a different brgemm than M = 16): the packed weights then keep
// one more reordered copy, made on the first call at that M and reused after.
TEST(PackedWeights, ReorderedOncePerFormatServeEveryM) {
  ONEDNN_OR_SKIP(ops);
  SKIP_UNLESS_MATMULS(ops);
  Rng rng = test_rng();
  MatmulDesc d = desc_with(rng, 16, 131, 0);
  d.n = 256;
  d.k = 512;
  d.b = QuantizationParams::per_channel(DType::int8, Mapping::symmetric, 0,
                                        std::vector<float>(256, 0.01f));
  d.has_bias = true;
  const auto b = random_codes(rng, DType::int8, d.n * d.k);
  // The per-call ops' packed weights (the backend's own kernel); every kernel on B packed by a
  // plan for each M.
  {
    const auto w = ops.pack_weights(d, b.data());
    EXPECT_GT(w->bytes(),
              static_cast<std::size_t>(d.n * d.k));  // the plain copy and oneDNN's format
    for (const std::int64_t m : {1, 16, 128, 3}) {
      SCOPED_TRACE("m = " + std::to_string(m));
      std::size_t bytes_after_first = 0;
      for (int repeat = 0; repeat < 2; ++repeat) {
        MatmulRun run = random_run(rng, OpKind::matmul_dequant, d);
        run.desc.m = m;
        run.a = random_codes(rng, DType::uint8, m * d.k);
        run.b = b;
        const auto want = reference_output(run);
        std::vector<std::uint8_t> got(want.size(), 0xCD);
        ops.matmul_dequant_packed(run.desc, run.a.data(), *w, run.bias.data(), got.data());
        EXPECT_TRUE(same_bytes(got.data(), want.data(), want.size(), 4));
        if (repeat == 0) bytes_after_first = w->bytes();
        else EXPECT_EQ(w->bytes(), bytes_after_first) << "the same M reordered the weights again";
        for (const std::string kernel : {"dnnl_matmul_u8s8_s32", "dnnl_matmul_u8s8_f32"}) {
          const auto plan = ops.plan({OpKind::matmul_dequant, run.desc},
                                     PlanRequest{0, kernel, {nullptr, b.data(), nullptr}});
          std::fill(got.begin(), got.end(), 0xCD);
          plan->run({run.a.data(), nullptr, run.bias.data()}, {got.data()});
          EXPECT_TRUE(same_bytes(got.data(), want.data(), want.size(), 4)) << kernel;
        }
      }
    }
  }
}

// A plan of the reorder kernel creates its primitive once, when it is made, and reuses it.
TEST(PrimitiveCache, ReorderDequantizePlanRunsRepeatedly) {
  ONEDNN_OR_SKIP(ops);
  Rng rng = test_rng();
  const QuantizeDesc d{
      {64, 33}, QuantizationParams::per_tensor_affine(DType::uint8, 0.1f, 7), FloatType::f32};
  const auto q = random_codes(rng, DType::uint8, 64 * 33);
  std::vector<float> want(64 * 33), x(64 * 33);
  reference::dequantize(d, q.data(), want.data());
  const auto plan =
      ops.plan({OpKind::dequantize, d}, PlanRequest{0, "dnnl_reorder_dequantize", {}});
  for (int i = 0; i < 3; ++i) {
    std::fill(x.begin(), x.end(), -1.0f);
    plan->run({q.data()}, {x.data()});
    EXPECT_TRUE(same_bytes(x.data(), want.data(), x.size() * 4, 4));
  }
}

}  // namespace
}  // namespace qforge::onednn_test
