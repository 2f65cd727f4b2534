// The quantized linear layer: forward through the int8 GEMM must equal the reference bit for
// bit (same quantization of X, same exact int32 products, same float epilogue order).
#include <gtest/gtest.h>

#include <cstring>
#include <limits>

#include "qforge/error.h"
#include "qforge/reference.h"
#include "support.h"

namespace qforge::cpu_x86_test {
namespace {

TEST(CpuX86Linear, ForwardMatchesReferenceBitForBit) {
  auto l = load_plugin();
  SKIP_UNLESS_USABLE(l);
  SCOPED_TRACE(seed_text());
  Rng rng = test_rng();
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  for (auto [m, n, k] : {std::tuple<int, int, int>{1, 17, 33}, {5, 64, 100}, {40, 9, 257}}) {
    for (bool per_channel : {false, true})
      for (bool bias : {false, true}) {
        const QuantizationParams w =
            per_channel ? random_params(rng, DType::int8, Granularity::per_channel, true, n, 0)
                        : random_params(rng, DType::int8, Granularity::per_tensor, true, 1);
        const LinearDesc d{m, n, k, w, bias};
        std::vector<float> x(static_cast<std::size_t>(m * k)), b(static_cast<std::size_t>(n));
        for (auto& v : x) v = u(rng);
        for (auto& v : b) v = u(rng);
        const auto wq = random_codes(rng, DType::int8, n * k, -127, 127);
        std::vector<std::int8_t> xq_want(x.size()), xq_got(x.size(), 99);
        std::vector<float> y_want(static_cast<std::size_t>(m * n)), y_got(y_want.size(), -1.0f);
        const auto* wp = reinterpret_cast<const std::int8_t*>(wq.data());
        const QuantizationParams pw =
            reference::linear_forward(d, x.data(), wp, b.data(), xq_want.data(), y_want.data());
        const QuantizationParams pg =
            l.ops->linear_forward(d, x.data(), wp, b.data(), xq_got.data(), y_got.data());
        EXPECT_EQ(pg, pw);
        EXPECT_EQ(xq_got, xq_want);
        EXPECT_EQ(0, std::memcmp(y_got.data(), y_want.data(), y_got.size() * sizeof(float)))
            << m << "x" << n << "x" << k << " per_channel " << per_channel << " bias " << bias;
        const std::string kernel = l.ops->plan({OpKind::linear_forward, d}, {})->kernel();
        EXPECT_NE(kernel.find("q8_gem"), std::string::npos) << kernel;
      }
  }
}

TEST(CpuX86Linear, NonFiniteInputIsAnError) {
  auto l = load_plugin();
  SKIP_UNLESS_USABLE(l);
  const LinearDesc d{2, 3, 4, QuantizationParams::per_tensor_symmetric(DType::int8, 0.1f), false};
  std::vector<float> x(8, 1.0f), y(6);
  x[5] = std::numeric_limits<float>::quiet_NaN();
  std::vector<std::int8_t> w(12, 1), xq(8);
  try {
    l.ops->linear_forward(d, x.data(), w.data(), nullptr, xq.data(), y.data());
    ADD_FAILURE() << "NaN input accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("x[5]"), std::string::npos) << e.what();
  }
}

TEST(CpuX86Linear, BackwardRunsTheReference) {
  auto l = load_plugin();
  SKIP_UNLESS_USABLE(l);
  const LinearDesc d{2, 3, 4, QuantizationParams::per_tensor_symmetric(DType::int8, 0.1f), true};
  std::vector<float> dy = {1, -2, 3, 0.5f, 0.25f, -1}, dx(8), dw(12), db(3), dx2(8), dw2(12),
                     db2(3);
  std::vector<std::int8_t> xq = {1, 2, 3, 4, -5, -6, 7, 8}, w(12, 3);
  const auto xp = QuantizationParams::per_tensor_symmetric(DType::int8, 0.5f);
  reference::linear_backward(d, dy.data(), xq.data(), xp, w.data(), dx.data(), dw.data(),
                             db.data());
  l.ops->linear_backward(d, dy.data(), xq.data(), xp, w.data(), dx2.data(), dw2.data(), db2.data());
  EXPECT_EQ(dx, dx2);
  EXPECT_EQ(dw, dw2);
  EXPECT_EQ(db, db2);
  EXPECT_EQ(l.ops->plan({OpKind::linear_backward, d}, {})->kernel(), "reference");
  const Support s = l.ops->supports({OpKind::linear_backward, d});
  EXPECT_EQ(s.kernels, std::vector<std::string>{"reference"});
}

}  // namespace
}  // namespace qforge::cpu_x86_test
