// The quantized nn.Linear: forward's Xq, params and Y equal the reference bit for bit (for
// both kernels); backward's float32 matmuls meet the NMSE bound of docs/NUMERICS.md.
#include <gtest/gtest.h>

#include <cmath>

#include "qforge/reference.h"
#include "support.h"

namespace qforge::onednn_test {
namespace {

double nmse(const std::vector<float>& got, const std::vector<float>& want) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    const double d = static_cast<double>(got[i]) - want[i];
    num += d * d;
    den += static_cast<double>(want[i]) * want[i];
  }
  return den == 0 ? num : num / den;
}

TEST(Linear, ForwardAndBackwardMatchTheReference) {
  ONEDNN_OR_SKIP(ops);
  Rng rng = test_rng();
  std::normal_distribution<float> g(0.0f, 1.0f);
  struct S {
    std::int64_t m, n, k;
    bool per_channel, bias;
  };
  for (const S s :
       {S{1, 300, 257, true, true}, S{64, 96, 128, false, true}, S{33, 17, 1000, true, false}}) {
    SCOPED_TRACE("m=" + std::to_string(s.m) + " n=" + std::to_string(s.n) +
                 " k=" + std::to_string(s.k));
    std::vector<float> sw(s.per_channel ? static_cast<std::size_t>(s.n) : 1);
    for (auto& v : sw) v = random_scale(rng);
    const LinearDesc d{s.m, s.n, s.k,
                       s.per_channel
                           ? QuantizationParams::per_channel(DType::int8, Mapping::symmetric, 0, sw)
                           : QuantizationParams::per_tensor_symmetric(DType::int8, sw[0]),
                       s.bias};
    std::vector<float> x(static_cast<std::size_t>(s.m * s.k)), bias(static_cast<std::size_t>(s.n)),
        dy(static_cast<std::size_t>(s.m * s.n));
    for (auto& v : x) v = g(rng);
    for (auto& v : bias) v = g(rng);
    for (auto& v : dy) v = g(rng);
    const auto w8 = random_codes(rng, DType::int8, s.n * s.k, -127, 127);
    const auto* w = reinterpret_cast<const std::int8_t*>(w8.data());

    std::vector<std::int8_t> xq_want(x.size()), xq(x.size());
    std::vector<float> y_want(static_cast<std::size_t>(s.m * s.n)), y(y_want.size());
    const QuantizationParams p_want =
        reference::linear_forward(d, x.data(), w, bias.data(), xq_want.data(), y_want.data());
    const Support sup = ops.supports({OpKind::linear_forward, d});
    if (!sup.supported) {
      EXPECT_NE(device_property(ops, "int8_matmul").rfind("exact", 0), 0u) << sup.reason;
      continue;
    }
    // The per-call op (the backend's own kernel), then a plan of every kernel listed.
    std::fill(y.begin(), y.end(), std::nanf(""));
    EXPECT_EQ(ops.linear_forward(d, x.data(), w, bias.data(), xq.data(), y.data()), p_want);
    EXPECT_TRUE(same_bytes(xq.data(), xq_want.data(), xq.size()));
    EXPECT_TRUE(same_bytes(y.data(), y_want.data(), y.size() * 4, 4));
    for (const auto& kernel : sup.kernels) {
      const auto plan = ops.plan({OpKind::linear_forward, d}, PlanRequest{0, kernel, {}});
      std::fill(y.begin(), y.end(), std::nanf(""));
      float x_scale = 0;
      std::vector<const void*> in{x.data(), w};
      if (d.has_bias) in.push_back(bias.data());
      plan->run(in, std::vector<void*>{xq.data(), y.data(), &x_scale});
      EXPECT_EQ(QuantizationParams::per_tensor_symmetric(DType::int8, x_scale), p_want) << kernel;
      EXPECT_TRUE(same_bytes(xq.data(), xq_want.data(), xq.size())) << kernel;
      EXPECT_TRUE(same_bytes(y.data(), y_want.data(), y.size() * 4, 4)) << kernel;
    }

    std::vector<float> dx_w(x.size()), dw_w(static_cast<std::size_t>(s.n * s.k)), db_w(bias.size());
    std::vector<float> dx(dx_w.size()), dw(dw_w.size()), db(db_w.size());
    reference::linear_backward(d, dy.data(), xq_want.data(), p_want, w, dx_w.data(), dw_w.data(),
                               db_w.data());
    ops.linear_backward(d, dy.data(), xq_want.data(), p_want, w, dx.data(), dw.data(), db.data());
    EXPECT_LE(nmse(dx, dx_w), 1e-10);
    EXPECT_LE(nmse(dw, dw_w), 1e-10);
    if (s.bias) {
      EXPECT_LE(nmse(db, db_w), 1e-10);
    }
  }
}

TEST(Linear, NonFiniteInputThrowsNamingTheElement) {
  ONEDNN_OR_SKIP(ops);
  if (device_property(ops, "int8_matmul").rfind("exact", 0) != 0)
    GTEST_SKIP() << "int8 matmul refused here";
  const LinearDesc d{2, 3, 4, QuantizationParams::per_tensor_symmetric(DType::int8, 0.1f), false};
  std::vector<float> x(8, 1.0f), y(6);
  x[5] = std::nanf("");
  std::vector<std::int8_t> w(12, 1), xq(8);
  try {
    ops.linear_forward(d, x.data(), w.data(), nullptr, xq.data(), y.data());
    ADD_FAILURE() << "NaN input accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("x[5]"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace qforge::onednn_test
