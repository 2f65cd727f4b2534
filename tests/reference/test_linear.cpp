// linear_forward / linear_backward: a hand example, the documented forward order bit for bit,
// the backward against a long-double evaluation and a float32 one (the stated tolerance), errors.
#include <cmath>
#include <limits>

#include "qforge/reference.h"
#include "test_support.h"

namespace qforge {
namespace {

using reference::linear_backward;
using reference::linear_forward;

TEST(Linear, HandExample) {
  // X [2, 2], W [2, 2] per tensor with sw = 0.5, bias [1, -1].
  const std::vector<float> x = {1.0f, -3.0f, 0.5f, 4.0f};
  const std::vector<std::int8_t> w = {2, 0, -1, 1};
  const std::vector<float> bias = {1.0f, -1.0f};
  LinearDesc d{2, 2, 2, QuantizationParams::per_tensor_symmetric(DType::int8, 0.5f), true};
  std::vector<std::int8_t> xq(4);
  std::vector<float> y(4);
  const auto xp = linear_forward(d, x.data(), w.data(), bias.data(), xq.data(), y.data());
  const float sx = 4.0f / 127.0f;
  EXPECT_EQ(xp, QuantizationParams::per_tensor_symmetric(DType::int8, sx));
  // x / sx = 31.75, -95.25, 15.875, 127.
  EXPECT_EQ(xq, (std::vector<std::int8_t>{32, -95, 16, 127}));
  // Xq Wq^T = [[64, -127], [32, 111]].
  const std::vector<float> expected = {(64.0f * sx) * 0.5f + 1.0f, (-127.0f * sx) * 0.5f - 1.0f,
                                       (32.0f * sx) * 0.5f + 1.0f, (111.0f * sx) * 0.5f - 1.0f};
  EXPECT_EQ(y, expected);

  // Backward with dY = [[1, 0], [0, 2]].
  const std::vector<float> dy = {1.0f, 0.0f, 0.0f, 2.0f};
  std::vector<float> dx(4), dw(4), db(2);
  linear_backward(d, dy.data(), xq.data(), xp, w.data(), dx.data(), dw.data(), db.data());
  EXPECT_EQ(dx, (std::vector<float>{1.0f, 0.0f, -1.0f, 1.0f}));               // dY deq(W)
  EXPECT_EQ(dw, (std::vector<float>{32 * sx, -95 * sx, 32 * sx, 254 * sx}));  // dY^T deq(Xq)
  EXPECT_EQ(db, (std::vector<float>{1.0f, 2.0f}));
}

TEST(Linear, ZeroInputUsesScaleFloor) {
  const std::vector<float> x(6, 0.0f);
  const std::vector<std::int8_t> w(6, 5);
  LinearDesc d{2, 2, 3,
               QuantizationParams::per_channel(DType::int8, Mapping::symmetric, 0, {1, 2})};
  std::vector<std::int8_t> xq(6, 9);
  std::vector<float> y(4, 9);
  const auto xp = linear_forward(d, x.data(), w.data(), nullptr, xq.data(), y.data());
  EXPECT_EQ(xp.scale(), 1e-8f);
  EXPECT_EQ(xq, std::vector<std::int8_t>(6, 0));
  EXPECT_EQ(y, std::vector<float>(4, 0.0f));
  // K = 0: Y is the bias.
  LinearDesc k0{2, 2, 0, QuantizationParams::per_tensor_symmetric(DType::int8, 1.0f), true};
  const float bias[] = {3.0f, 4.0f};
  linear_forward(k0, nullptr, nullptr, bias, nullptr, y.data());
  EXPECT_EQ(y, (std::vector<float>{3, 4, 3, 4}));
}

TEST(Linear, RandomForwardBitExactBackwardWithinTolerance) {
  QFORGE_SEEDED_RNG(rng);
  for (int iter = 0; iter < 60; ++iter) {
    const std::int64_t M = test::uniform_int(rng, 1, 17), N = test::uniform_int(rng, 1, 17),
                       K = test::uniform_int(rng, 1, 300);
    const bool per_row = iter % 2;
    std::vector<float> sw(per_row ? static_cast<std::size_t>(N) : 1);
    for (auto& s : sw) s = test::uniform(rng, 1e-3f, 1e-1f);
    LinearDesc d{M, N, K,
                 per_row ? QuantizationParams::per_channel(DType::int8, Mapping::symmetric, 0, sw)
                         : QuantizationParams::per_tensor_symmetric(DType::int8, sw[0]),
                 iter % 3 != 0};
    std::vector<float> x(static_cast<std::size_t>(M * K)), bias(static_cast<std::size_t>(N)),
        dy(static_cast<std::size_t>(M * N));
    std::vector<std::int8_t> w(static_cast<std::size_t>(N * K));
    for (auto& v : x) v = test::uniform(rng, -3.0f, 3.0f);
    for (auto& v : bias) v = test::uniform(rng, -1.0f, 1.0f);
    for (auto& v : dy) v = test::uniform(rng, -1.0f, 1.0f);
    for (auto& v : w) v = static_cast<std::int8_t>(test::uniform_int(rng, -127, 127));
    std::vector<std::int8_t> xq(x.size());
    std::vector<float> y(static_cast<std::size_t>(M * N));
    const auto xp = linear_forward(d, x.data(), w.data(), bias.data(), xq.data(), y.data());

    float amax = 0;
    for (const float v : x) amax = std::max(amax, std::fabs(v));
    const float sx = std::max(amax / 127.0f, 1e-8f);
    ASSERT_EQ(xp.scale(), sx);
    const auto swn = [&](std::int64_t n) { return sw[per_row ? static_cast<std::size_t>(n) : 0]; };
    for (std::size_t i = 0; i < x.size(); ++i)
      ASSERT_EQ(xq[i],
                static_cast<std::int8_t>(std::clamp(std::nearbyint(x[i] / sx), -127.0f, 127.0f)));
    for (std::int64_t m = 0; m < M; ++m)
      for (std::int64_t n = 0; n < N; ++n) {
        std::int64_t acc = 0;
        for (std::int64_t k = 0; k < K; ++k) acc += xq[m * K + k] * w[n * K + k];
        float e = (static_cast<float>(acc) * sx) * swn(n);
        if (d.has_bias) e = e + bias[n];
        ASSERT_EQ(y[m * N + n], e) << "(" << m << ", " << n << ")";
      }

    std::vector<float> dx(x.size()), dw(w.size()), db(static_cast<std::size_t>(N));
    linear_backward(d, dy.data(), xq.data(), xp, w.data(), dx.data(), dw.data(), db.data());
    // Long double evaluation (the reference's value up to its final rounding) and a naive
    // float32 one (what a backend accumulating in float32 gets): the stated tolerance is
    // NMSE <= 1e-10 against the reference.
    std::vector<float> dx_ld(dx.size()), dx_f(dx.size()), dw_ld(dw.size()), dw_f(dw.size()),
        db_ld(db.size()), db_f(db.size());
    for (std::int64_t m = 0; m < M; ++m)
      for (std::int64_t k = 0; k < K; ++k) {
        long double a = 0;
        float f = 0;
        for (std::int64_t n = 0; n < N; ++n) {
          const float wv = static_cast<float>(w[n * K + k]) * swn(n);
          a += static_cast<long double>(dy[m * N + n]) * wv;
          f += dy[m * N + n] * wv;
        }
        dx_ld[m * K + k] = static_cast<float>(a);
        dx_f[m * K + k] = f;
      }
    for (std::int64_t n = 0; n < N; ++n) {
      for (std::int64_t k = 0; k < K; ++k) {
        long double a = 0;
        float f = 0;
        for (std::int64_t m = 0; m < M; ++m) {
          const float xv = static_cast<float>(xq[m * K + k]) * sx;
          a += static_cast<long double>(dy[m * N + n]) * xv;
          f += dy[m * N + n] * xv;
        }
        dw_ld[n * K + k] = static_cast<float>(a);
        dw_f[n * K + k] = f;
      }
      long double a = 0;
      float f = 0;
      for (std::int64_t m = 0; m < M; ++m) {
        a += dy[m * N + n];
        f += dy[m * N + n];
      }
      db_ld[n] = static_cast<float>(a);
      db_f[n] = f;
    }
    EXPECT_LE(test::nmse(dx_ld, dx), 1e-14);
    EXPECT_LE(test::nmse(dw_ld, dw), 1e-14);
    EXPECT_LE(test::nmse(dx, dx_f), 1e-10);
    EXPECT_LE(test::nmse(dw, dw_f), 1e-10);
    if (d.has_bias) {
      EXPECT_LE(test::nmse(db_ld, db), 1e-14);
      // db sums only M values of dy, which may cancel (one column: db = 1e-4 from terms near 1),
      // so no NMSE bound holds for a naive float32 sum; its per-element bound does:
      // |sum_f - sum| <= (M - 1) * 2^-24 * sum |dy| (plus the reference's final rounding).
      for (std::int64_t n = 0; n < N; ++n) {
        double abs_sum = 0;
        for (std::int64_t m = 0; m < M; ++m) abs_sum += std::fabs(dy[m * N + n]);
        EXPECT_LE(std::fabs(static_cast<double>(db_f[n]) - db[n]),
                  static_cast<double>(M) * 0x1p-24 * abs_sum + 0x1p-24 * std::fabs(db[n]))
            << "db[" << n << "], M = " << M;
      }
    }
  }
}

TEST(Linear, Errors) {
  std::vector<float> f(16, 1.0f);
  std::vector<std::int8_t> q(16, 1);
  const auto sym = QuantizationParams::per_tensor_symmetric(DType::int8, 1.0f);
  const auto fwd = [&](const LinearDesc& d) {
    linear_forward(d, f.data(), q.data(), f.data(), q.data(), f.data());
  };
  EXPECT_QFORGE_ERROR(
      fwd(LinearDesc{2, 2, 2, QuantizationParams::per_tensor_symmetric(DType::int4, 1.0f)}),
      ErrorCode::invalid_argument, "expected int8 symmetric");
  EXPECT_QFORGE_ERROR(
      fwd(LinearDesc{2, 2, 2, QuantizationParams::per_tensor_affine(DType::int8, 1.0f, 3)}),
      ErrorCode::invalid_argument, "weight params int8 per_tensor_affine");
  EXPECT_QFORGE_ERROR(
      fwd(LinearDesc{2, 2, 2,
                     QuantizationParams::per_channel(DType::int8, Mapping::symmetric, 1, {1, 1})}),
      ErrorCode::invalid_argument, "per_channel(axis 0) of [N, K]");
  EXPECT_QFORGE_ERROR(
      fwd(LinearDesc{2, 3, 2,
                     QuantizationParams::per_channel(DType::int8, Mapping::symmetric, 0, {1, 1})}),
      ErrorCode::shape_mismatch, "expected 3");
  EXPECT_QFORGE_ERROR(fwd(LinearDesc{2, -2, 2, sym}), ErrorCode::invalid_argument, "n = -2");
  LinearDesc with_bias{2, 2, 2, sym, true};
  EXPECT_QFORGE_ERROR(linear_forward(with_bias, f.data(), q.data(), nullptr, q.data(), f.data()),
                      ErrorCode::invalid_argument, "bias (has_bias is set) is null");
  std::vector<float> bad = {1.0f, std::numeric_limits<float>::quiet_NaN(), 0, 0};
  EXPECT_QFORGE_ERROR(
      linear_forward(LinearDesc{2, 2, 2, sym}, bad.data(), q.data(), nullptr, q.data(), f.data()),
      ErrorCode::invalid_argument, "x[1] = nan; expected finite inputs");
  EXPECT_QFORGE_ERROR(linear_backward(LinearDesc{2, 2, 2, sym}, f.data(), q.data(),
                                      QuantizationParams::per_tensor_affine(DType::int8, 1.0f, 1),
                                      q.data(), f.data(), f.data(), nullptr),
                      ErrorCode::invalid_argument, "xq params int8 per_tensor_affine");
  EXPECT_QFORGE_ERROR(
      linear_backward(with_bias, f.data(), q.data(), sym, q.data(), f.data(), f.data(), nullptr),
      ErrorCode::invalid_argument, "db (has_bias is set) is null");
  EXPECT_QFORGE_ERROR(linear_backward(LinearDesc{2, 2, 2, sym}, f.data(), q.data(), sym, q.data(),
                                      nullptr, f.data(), nullptr),
                      ErrorCode::invalid_argument, "dx is null");
}

}  // namespace
}  // namespace qforge
