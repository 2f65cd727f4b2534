// The "threads" option: results are identical whatever the count (and equal the reference),
// and the caller's OpenMP thread count is restored after each op.
#include <gtest/gtest.h>
#include <omp.h>

#include "matmul_check.h"
#include "qforge/reference.h"

namespace qforge::onednn_test {
namespace {

TEST(Threads, ResultsDoNotDependOnTheCount) {
  ONEDNN_OR_SKIP(ops);
  Rng rng = test_rng();
  // Per-row za and per-column zb: the compensation runs too.
  MatmulDesc d = matmul_desc(65, 130, 300, random_params(rng, DType::uint8, false, 65, 0),
                             random_params(rng, DType::int8, false, 130, 1));
  d.y = QuantizationParams::per_tensor_affine(DType::int8, 0.3f, -5);
  const MatmulRun run = random_run(rng, OpKind::qlinear_matmul, d);
  const QuantizeDesc qd{{1000, 333},
                        QuantizationParams::per_channel(DType::int4, Mapping::affine, 0,
                                                        std::vector<float>(1000, 0.05f),
                                                        std::vector<std::int32_t>(1000, 2)),
                        FloatType::f32};
  std::vector<float> x(1000 * 333);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (auto& v : x) v = u(rng);
  std::vector<std::uint8_t> q_want(storage_bytes(DType::int4, x.size()));
  reference::quantize(qd, x.data(), q_want.data());

  const int outer = omp_get_max_threads();
  for (const char* t : {"1", "2", "3", "0"}) {
    SCOPED_TRACE(std::string("threads = ") + t);
    ASSERT_TRUE(ops.set_option("threads", t));
    if (device_property(ops, "int8_matmul").rfind("exact", 0) == 0) {
      EXPECT_GT(expect_exact(ops, run), 0);
    }
    std::vector<std::uint8_t> q(q_want.size(), 0xCD);
    ops.quantize(qd, x.data(), q.data());
    EXPECT_TRUE(same_bytes(q.data(), q_want.data(), q.size()));
    EXPECT_EQ(omp_get_max_threads(), outer)
        << "the op left the caller's OpenMP thread count changed";
    if (std::string(t) != "0") {
      EXPECT_EQ(device_property(ops, "threads_used"), t);
    }
  }
}

TEST(Threads, BadValuesThrow) {
  ONEDNN_OR_SKIP(ops);
  for (const char* bad : {"-1", "two", "", "3x"}) {
    try {
      ops.set_option("threads", bad);
      ADD_FAILURE() << "threads = '" << bad << "' accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::invalid_argument) << e.what();
    }
  }
  EXPECT_FALSE(ops.set_option("isa", "avx2"))
      << "onednn has no isa option (DNNL_MAX_CPU_ISA is oneDNN's)";
}

}  // namespace
}  // namespace qforge::onednn_test
