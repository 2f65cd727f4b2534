// Quantized linear forward (bit-exact with the reference: the same X quantization and the same
// epilogue order) and backward (float32 sums against the reference's double ones, NMSE <= 1e-10
// as the conformance suite states), on every GEMM kernel the plugin lists for the forward.
#include <cmath>
#include <limits>

#include "qforge/error.h"
#include "qforge/reference.h"
#include "support.h"

namespace qforge::cuda_test {
namespace {

double nmse(const std::vector<float>& got, const std::vector<float>& want) {
  double num = 0.0, den = 0.0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double d = static_cast<double>(got[i]) - want[i];
    num += d * d;
    den += static_cast<double>(want[i]) * want[i];
  }
  return den == 0.0 ? num : num / den;
}

class CudaLinear : public CudaTest {
 protected:
  LinearDesc random_desc(std::int64_t m, std::int64_t n, std::int64_t k, bool per_channel,
                         bool bias) {
    std::vector<float> scales(per_channel ? static_cast<std::size_t>(n) : 1);
    for (auto& s : scales) s = std::exp2(std::uniform_real_distribution<float>(-9.0f, -3.0f)(rng_));
    LinearDesc d{m, n, k,
                 per_channel
                     ? QuantizationParams::per_channel(DType::int8, Mapping::symmetric, 0, scales)
                     : QuantizationParams::per_tensor_symmetric(DType::int8, scales[0]),
                 bias};
    return d;
  }
  std::vector<float> normal(std::size_t n, float sigma) {
    std::normal_distribution<float> d(0.0f, sigma);
    std::vector<float> v(n);
    for (auto& x : v) x = d(rng_);
    return v;
  }
  std::vector<std::int8_t> weights(std::size_t n) {
    std::uniform_int_distribution<int> d(-127, 127);
    std::vector<std::int8_t> v(n);
    for (auto& x : v) x = static_cast<std::int8_t>(d(rng_));
    return v;
  }
};

struct Dims {
  std::int64_t m, n, k;
};
const Dims kDims[] = {{1, 1, 1},     {1, 64, 33},   {7, 13, 5},
                      {32, 96, 128}, {65, 33, 257}, {200, 130, 64}};

TEST_F(CudaLinear, ForwardMatchesTheReferenceOnEveryKernel) {
  for (const auto& dm : kDims)
    for (const bool per_channel : {false, true}) {
      const bool has_bias = std::uniform_int_distribution<int>(0, 1)(rng_);
      const LinearDesc d = random_desc(dm.m, dm.n, dm.k, per_channel, has_bias);
      SCOPED_TRACE(describe({OpKind::linear_forward, d}));
      const auto x = normal(static_cast<std::size_t>(dm.m * dm.k), 2.0f);
      const auto w = weights(static_cast<std::size_t>(dm.n * dm.k));
      const auto bias = normal(static_cast<std::size_t>(dm.n), 1.0f);
      std::vector<std::int8_t> xq_ref(x.size());
      std::vector<float> y_ref(static_cast<std::size_t>(dm.m * dm.n));
      const auto p_ref = reference::linear_forward(d, x.data(), w.data(), bias.data(),
                                                   xq_ref.data(), y_ref.data());

      DeviceArray dx(ops(), x.size() * 4), dw(ops(), w.size()), db(ops(), bias.size() * 4),
          dxq(ops(), x.size()), dy(ops(), y_ref.size() * 4);
      dx.write(x);
      dw.write(w);
      db.write(bias);
      const Support s = ops().supports({OpKind::linear_forward, d});
      ASSERT_TRUE(s.supported) << s.reason;
      // The per-call op (the plugin's own kernel).
      dy.poison(0xFF);
      const auto p = ops().linear_forward(
          d, static_cast<const float*>(dx.data()), static_cast<const std::int8_t*>(dw.data()),
          has_bias ? static_cast<const float*>(db.data()) : nullptr,
          static_cast<std::int8_t*>(dxq.data()), static_cast<float*>(dy.data()));
      EXPECT_EQ(p, p_ref) << p.to_string() << " vs " << p_ref.to_string();
      EXPECT_EQ(dxq.read_as<std::int8_t>(), xq_ref);
      auto y = dy.read_as<float>();
      EXPECT_EQ(0, std::memcmp(y.data(), y_ref.data(), y.size() * 4)) << "NMSE " << nmse(y, y_ref);
      EXPECT_TRUE(dy.guards_intact());
      EXPECT_TRUE(dxq.guards_intact());
      // Every kernel through a plan: the arrays in device memory, x_scale (a params operand,
      // host-resident on every device: plan.h) on the host.
      std::vector<const void*> in{dx.data(), dw.data()};
      if (has_bias) in.push_back(db.data());
      for (const auto& kernel : s.kernels) {
        SCOPED_TRACE("kernel " + kernel);
        dy.poison(0xFF);
        float scale = 0.0f;
        EXPECT_EQ(run_plan(ops(), {OpKind::linear_forward, d}, kernel, in,
                           {dxq.data(), dy.data(), &scale}),
                  kernel);
        EXPECT_EQ(scale, p_ref.scale());
        EXPECT_EQ(dxq.read_as<std::int8_t>(), xq_ref);
        y = dy.read_as<float>();
        EXPECT_EQ(0, std::memcmp(y.data(), y_ref.data(), y.size() * 4))
            << "NMSE " << nmse(y, y_ref);
        EXPECT_TRUE(dy.guards_intact());
        EXPECT_TRUE(dxq.guards_intact());
      }
    }
}

TEST_F(CudaLinear, ForwardRefusesNonFiniteInput) {
  const LinearDesc d = random_desc(4, 8, 16, true, false);
  for (const float bad :
       {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
    auto x = normal(64, 1.0f);
    x[37] = bad;
    DeviceArray dx(ops(), 256), dw(ops(), 128), dxq(ops(), 64), dy(ops(), 128);
    dx.write(x);
    try {
      ops().linear_forward(d, static_cast<const float*>(dx.data()),
                           static_cast<const std::int8_t*>(dw.data()), nullptr,
                           static_cast<std::int8_t*>(dxq.data()), static_cast<float*>(dy.data()));
      ADD_FAILURE() << "non-finite x accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
      EXPECT_NE(std::string(e.what()).find("x[37]"), std::string::npos) << e.what();
    }
  }
}

TEST_F(CudaLinear, BackwardMatchesTheReference) {
  const Dims dims[] = {{1, 1, 1},     {1, 64, 33},   {7, 13, 5},
                       {33, 96, 128}, {300, 70, 40}, {1100, 3, 9}};
  for (const auto& dm : dims)
    for (const bool per_channel : {false, true}) {
      const LinearDesc d = random_desc(dm.m, dm.n, dm.k, per_channel, true);
      SCOPED_TRACE(describe({OpKind::linear_backward, d}));
      const auto dy = normal(static_cast<std::size_t>(dm.m * dm.n), 1.0f);
      const auto xq = weights(static_cast<std::size_t>(dm.m * dm.k));
      const auto w = weights(static_cast<std::size_t>(dm.n * dm.k));
      const auto xp = QuantizationParams::per_tensor_symmetric(DType::int8, 0.013f);
      std::vector<float> dx_ref(static_cast<std::size_t>(dm.m * dm.k)),
          dw_ref(static_cast<std::size_t>(dm.n * dm.k)), db_ref(static_cast<std::size_t>(dm.n));
      reference::linear_backward(d, dy.data(), xq.data(), xp, w.data(), dx_ref.data(),
                                 dw_ref.data(), db_ref.data());

      DeviceArray ddy(ops(), dy.size() * 4), dxq(ops(), xq.size()), dwq(ops(), w.size()),
          ddx(ops(), dx_ref.size() * 4), ddw(ops(), dw_ref.size() * 4),
          ddb(ops(), db_ref.size() * 4);
      ddy.write(dy);
      dxq.write(xq);
      dwq.write(w);
      ops().linear_backward(
          d, static_cast<const float*>(ddy.data()), static_cast<const std::int8_t*>(dxq.data()), xp,
          static_cast<const std::int8_t*>(dwq.data()), static_cast<float*>(ddx.data()),
          static_cast<float*>(ddw.data()), static_cast<float*>(ddb.data()));
      EXPECT_LE(nmse(ddx.read_as<float>(), dx_ref), 1e-10);
      EXPECT_LE(nmse(ddw.read_as<float>(), dw_ref), 1e-10);
      EXPECT_LE(nmse(ddb.read_as<float>(), db_ref), 1e-10);
      EXPECT_TRUE(ddx.guards_intact());
      EXPECT_TRUE(ddw.guards_intact());
      EXPECT_TRUE(ddb.guards_intact());
      EXPECT_EQ(ops().supports({OpKind::linear_backward, d}).kernels,
                std::vector<std::string>{"linear_backward_f32_simt_128x128"});
    }
}

}  // namespace
}  // namespace qforge::cuda_test
