// "Fastest within an accuracy budget": the recommendation follows the tolerance, with times
// injected per dtype so the choice among accurate-enough options is known in advance.
#include "qforge/calibration/precision.h"

#include <gtest/gtest.h>

#include <random>

#include "support.h"

namespace {

using namespace qforge;
using namespace qforge::calibration;

// Narrower dtypes are cheaper: int4/uint4 1 us, 8-bit 2 us, 16-bit 4 us (per op).
double cost_by_bits(const CandidateId&, const OpDesc& op, CostPhase) {
  DType t = DType::int8;
  if (const auto* q = std::get_if<QuantizeDesc>(&op.desc)) t = q->params.dtype();
  if (const auto* m = std::get_if<MatmulDesc>(&op.desc)) t = m->b.dtype();
  return traits(t).bits <= 4 ? 1e-6 : traits(t).bits <= 8 ? 2e-6 : 4e-6;
}

std::vector<float> data(std::uint64_t seed, std::size_t n) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

TEST(Precision, QuantizationFollowsTheTolerance) {
  const auto seed = acc_test::test_seed();
  SCOPED_TRACE("QFORGE_TEST_SEED=" + std::to_string(seed));
  auto o = acc_test::options(acc_test::scratch_dir("c") / "t.json");
  o.test_hooks = acc_test::cost_hooks(cost_by_bits);
  Accelerator acc(acc_test::plugins({"cpu_scalar"}), o);
  const Shape shape{16, 64};
  const auto x = data(seed, 1024);

  // Loose: a 4-bit choice meets it and is the cheapest.
  auto loose = calibration::recommend_quantization(acc, shape, x, 0.05);
  ASSERT_TRUE(loose.best);
  EXPECT_EQ(loose.tried[*loose.best].label.rfind("int4", 0) == 0 ||
                loose.tried[*loose.best].label.rfind("uint4", 0) == 0,
            true)
      << loose.tried[*loose.best].label;
  EXPECT_DOUBLE_EQ(loose.tried[*loose.best].seconds, 2e-6);  // quantize + dequantize

  // Tight: only int16 is accurate enough (8 bits give ~1e-5 on normal data).
  auto tight = calibration::recommend_quantization(acc, shape, x, 1e-7);
  ASSERT_TRUE(tight.best);
  EXPECT_EQ(tight.tried[*tight.best].label, "int16 per_tensor_symmetric");
  for (const auto& r : tight.tried) {
    EXPECT_EQ(r.meets, r.nmse <= 1e-7) << r.label;
    if (!r.meets) {
      EXPECT_NE(r.message.find("above the tolerance"), std::string::npos);
    }
  }

  // Impossible: nothing.
  auto none = calibration::recommend_quantization(acc, shape, x, 0.0);
  EXPECT_FALSE(none.best);
}

TEST(Precision, MatmulFollowsTheTolerance) {
  const auto seed = acc_test::test_seed();
  SCOPED_TRACE("QFORGE_TEST_SEED=" + std::to_string(seed));
  auto o = acc_test::options(acc_test::scratch_dir("c") / "t.json");
  o.test_hooks = acc_test::cost_hooks(cost_by_bits);
  Accelerator acc(acc_test::plugins({"cpu_scalar"}), o);
  const std::int64_t m = 8, n = 16, k = 64;
  const auto a = data(seed, static_cast<std::size_t>(m * k));
  const auto b = data(seed + 1, static_cast<std::size_t>(k * n));
  auto loose = calibration::recommend_matmul(acc, m, n, k, a, b, 0.05);
  ASSERT_TRUE(loose.best);
  EXPECT_NE(loose.tried[*loose.best].label.find("b=int4"), std::string::npos)
      << loose.tried[*loose.best].label;
  auto tight = calibration::recommend_matmul(acc, m, n, k, a, b, 1e-3);
  ASSERT_TRUE(tight.best);
  EXPECT_NE(tight.tried[*tight.best].label.find("b=int8"), std::string::npos)
      << tight.tried[*tight.best].label;
  for (const auto& r : tight.tried) EXPECT_EQ(r.meets, r.nmse <= 1e-3) << r.label;
  // The recommended path ran through the accelerator: quantize(A) then matmul_dequant.
  EXPECT_EQ(tight.tried[*tight.best].winners.size(), 2u);
}

TEST(Precision, BadDataIsRejectedNamingTheElement) {
  Accelerator acc(acc_test::plugins({"cpu_scalar"}),
                  acc_test::options(acc_test::scratch_dir("c") / "t.json"));
  std::vector<float> x(8, 1.0f);
  x[5] = std::numeric_limits<float>::infinity();
  try {
    calibration::recommend_quantization(acc, {2, 4}, x, 0.1);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("x[5] = inf"), std::string::npos) << e.what();
  }
  EXPECT_THROW(calibration::recommend_quantization(acc, {3, 4}, x, 0.1), Error);
}

}  // namespace
