// The cpu_scalar plugin, loaded through the registry like users load it: supports() says yes
// exactly when qforge::reference accepts the descriptor, an op it refuses throws unsupported
// with the same reason, and what it computes is the reference's result.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <functional>
#include <optional>
#include <random>
#include <vector>

#include "qforge/error.h"
#include "qforge/reference.h"
#include "qforge/registry.h"
#include "test_support.h"

namespace qforge::test {
namespace {

class ScalarPlugin : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(registry_.load_file(cpu_scalar_file()))
        << (registry_.failures().empty() ? "" : registry_.failures()[0].message);
    ops_ = registry_.find("cpu_scalar");
  }

  // Zeroed host memory large enough for any operand of `elements` elements.
  static std::vector<std::byte> zeros(std::int64_t elements) {
    return std::vector<std::byte>(static_cast<std::size_t>(std::max<std::int64_t>(elements, 1)) *
                                  4);
  }

  // The reference's verdict (throws = rejects) must be supports()'s, and a refused op must
  // throw unsupported with supports()'s reason.
  void expect_agreement(const OpDesc& op, const std::function<void()>& reference_run,
                        const std::function<void()>& plugin_run) {
    SCOPED_TRACE(describe(op));
    std::optional<std::string> reference_error;
    bool reference_overflowed = false;  // about the data (zeros far from the zero point), not
                                        // the descriptor: the plugin must overflow the same way
    try {
      reference_run();
    } catch (const Error& e) {
      if (e.code() == ErrorCode::overflow) reference_overflowed = true;
      else reference_error = e.what();
    }
    const Support s = ops_->supports(op);
    EXPECT_EQ(s.supported, !reference_error.has_value())
        << "reference: " << reference_error.value_or("accepted")
        << "\nsupports(): " << (s.supported ? "yes" : s.reason);
    if (s.supported) {
      EXPECT_THAT(s.kernels, ::testing::ElementsAre("scalar_reference"));
      if (reference_overflowed) {
        try {
          plugin_run();
          ADD_FAILURE() << "the reference overflowed, the plugin did not";
        } catch (const Error& e) {
          EXPECT_EQ(e.code(), ErrorCode::overflow) << e.what();
        }
      } else {
        plugin_run();
      }
      return;
    }
    EXPECT_THAT(s.reason,
                ::testing::StartsWith("cpu_scalar: reference::" + std::string(to_string(op.op))));
    try {
      plugin_run();
      ADD_FAILURE() << "op ran although supports() said: " << s.reason;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::unsupported);
      EXPECT_EQ(std::string(e.what()), s.reason);
    }
  }

  PluginRegistry registry_;
  QuantizationOps* ops_ = nullptr;
};

// Params that the constructor accepts, for every dtype and a spread of schemes. Counts fit
// `shape` (so that the scheme itself is what gets judged) unless `skew` is added to them.
std::vector<QuantizationParams> param_grid(const Shape& shape, std::size_t skew = 0) {
  const auto rank = static_cast<std::int64_t>(shape.size());
  const std::int64_t last = shape.empty() ? 1 : shape.back();
  const std::int64_t rows = last == 0 ? 0 : element_count(shape) / last;
  auto channels = [&](int axis) -> std::size_t {
    const std::int64_t a = axis < 0 ? axis + rank : axis;
    return a >= 0 && a < rank ? static_cast<std::size_t>(shape[static_cast<std::size_t>(a)]) : 3;
  };
  auto blocks = [&](std::int64_t bs) {
    return static_cast<std::size_t>(rows * ((last + bs - 1) / bs));
  };
  std::vector<QuantizationParams> out;
  for (const auto& tr : kDTypeTraits) {
    auto add = [&](Scheme s, std::size_t count) {
      try {
        out.emplace_back(tr.dtype, s, std::vector<float>(count + skew, 0.25f));
      } catch (const Error&) {
        // Not a valid pair on its own (binary with a non-symmetric mapping, no scales at all):
        // no descriptor can carry it.
      }
    };
    add(Scheme::per_tensor_affine(), 1);
    add(Scheme::per_tensor_symmetric(), 1);
    add(Scheme::logarithmic(), 1);
    for (int axis : {0, 1, -1, 2}) {
      add(Scheme::per_channel_symmetric(axis), channels(axis));
      add(Scheme::per_channel_affine(axis), channels(axis));
    }
    add(Scheme::block_symmetric(4), blocks(4));
    add(Scheme::block_affine(32), blocks(32));
  }
  return out;
}

TEST_F(ScalarPlugin, QuantizeAndDequantizeAgreeWithTheReference) {
  for (const Shape& shape : {Shape{6, 9}, Shape{2, 3, 5}, Shape{0, 6}, Shape{7}}) {
    std::vector<QuantizationParams> grid = param_grid(shape);
    for (auto& p : param_grid(shape, 1)) grid.push_back(std::move(p));
    for (const auto& p : grid) {
      for (FloatType ft : {FloatType::f32, FloatType::bf16}) {
        const QuantizeDesc d{shape, p, ft};
        const auto n = element_count(shape);
        auto x = zeros(n), q = zeros(n), q2 = zeros(n);
        expect_agreement(
            {OpKind::quantize, d}, [&] { reference::quantize(d, x.data(), q.data()); },
            [&] { ops_->quantize(d, x.data(), q2.data()); });
        EXPECT_EQ(q, q2);
      }
      const QuantizeDesc d{shape, p};
      const auto n = element_count(shape);
      auto q = zeros(n), x = zeros(n), x2 = zeros(n);
      expect_agreement(
          {OpKind::dequantize, d},
          [&] { reference::dequantize(d, q.data(), reinterpret_cast<float*>(x.data())); },
          [&] { ops_->dequantize(d, q.data(), reinterpret_cast<float*>(x2.data())); });
    }
  }
}

TEST_F(ScalarPlugin, RequantizeAgreesWithTheReference) {
  const Shape shape{3, 4};
  for (DType out : {DType::int8, DType::uint8, DType::int16}) {
    for (const std::vector<float>& m : std::vector<std::vector<float>>{
             {0.5f}, {0.5f, 0.25f, 1.0f, 2.0f}, {0.5f, 0.25f, 1.0f}, {-1.0f}, {}}) {
      for (int axis : {1, -1, 0, 2}) {
        for (std::int32_t zp : {0, 200}) {
          for (RequantMode mode : {RequantMode::float_multiplier, RequantMode::fixed_point}) {
            const RequantizeDesc d{shape, m, axis, out, zp, mode};
            auto c = zeros(12), y = zeros(12), y2 = zeros(12);
            const auto* cp = reinterpret_cast<const std::int32_t*>(c.data());
            expect_agreement(
                {OpKind::requantize, d}, [&] { reference::requantize(d, cp, y.data()); },
                [&] { ops_->requantize(d, cp, y2.data()); });
            EXPECT_EQ(y, y2);
          }
        }
      }
    }
  }
}

TEST_F(ScalarPlugin, MatmulOpsAgreeWithTheReference) {
  const std::int64_t M = 3, N = 5, K = 9;
  const QuantizationParams y8 = QuantizationParams::per_tensor_affine(DType::uint8, 0.5f, 3);
  const std::vector<std::optional<QuantizationParams>> ys = {
      y8, std::nullopt, QuantizationParams::per_tensor_symmetric(DType::int16, 1.0f),
      QuantizationParams::per_channel(DType::int8, Mapping::affine, 1,
                                      std::vector<float>(N, 1.0f))};
  const auto a_grid = param_grid({M, K});
  for (MatrixLayout layout : {MatrixLayout::kn, MatrixLayout::nk}) {
    // B's params sized for this layout's shape, and for the other one.
    auto b_grid = param_grid(layout == MatrixLayout::kn ? Shape{K, N} : Shape{N, K});
    for (auto& p : param_grid(layout == MatrixLayout::kn ? Shape{N, K} : Shape{K, N}))
      b_grid.push_back(std::move(p));
    for (const auto& a : a_grid) {
      for (const auto& b : b_grid) {
        // Thin the cross product: every A against per-tensor B, every B against per-tensor A.
        if (a.scheme().granularity != Granularity::per_tensor &&
            b.scheme().granularity != Granularity::per_tensor)
          continue;
        MatmulDesc d{.m = M,
                     .n = N,
                     .k = K,
                     .a = a,
                     .b = b,
                     .b_layout = layout,
                     .has_bias = false,
                     .out_type = FloatType::f32,
                     .y = y8,
                     .requant_mode = RequantMode::float_multiplier};
        auto A = zeros(M * K), B = zeros(N * K), C = zeros(M * N), C2 = zeros(M * N);
        auto* c = reinterpret_cast<std::int32_t*>(C.data());
        auto* c2 = reinterpret_cast<std::int32_t*>(C2.data());
        expect_agreement(
            {OpKind::matmul_integer, d},
            [&] { reference::matmul_integer(d, A.data(), B.data(), c); },
            [&] { ops_->matmul_integer(d, A.data(), B.data(), c2); });
        expect_agreement(
            {OpKind::matmul_dequant, d},
            [&] { reference::matmul_dequant(d, A.data(), B.data(), nullptr, c); },
            [&] { ops_->matmul_dequant(d, A.data(), B.data(), nullptr, c2); });
        for (const auto& y : ys) {
          d.y = y;
          expect_agreement(
              {OpKind::qlinear_matmul, d},
              [&] { reference::qlinear_matmul(d, A.data(), B.data(), c); },
              [&] { ops_->qlinear_matmul(d, A.data(), B.data(), c2); });
        }
      }
    }
  }
}

TEST_F(ScalarPlugin, QlinearMultiplierOverflowIsRefused) {
  MatmulDesc d{.m = 2,
               .n = 2,
               .k = 2,
               .a = QuantizationParams::per_tensor_affine(DType::uint8, 1e30f, 0),
               .b = QuantizationParams::per_tensor_affine(DType::uint8, 1e30f, 0),
               .b_layout = MatrixLayout::kn,
               .has_bias = false,
               .out_type = FloatType::f32,
               .y = QuantizationParams::per_tensor_affine(DType::uint8, 1e-3f, 0),
               .requant_mode = RequantMode::float_multiplier};
  auto A = zeros(4), B = zeros(4), Y = zeros(4);
  expect_agreement(
      {OpKind::qlinear_matmul, d},
      [&] { reference::qlinear_matmul(d, A.data(), B.data(), Y.data()); },
      [&] { ops_->qlinear_matmul(d, A.data(), B.data(), Y.data()); });
  EXPECT_FALSE(ops_->supports({OpKind::qlinear_matmul, d}).supported);
}

TEST_F(ScalarPlugin, LinearAgreesWithTheReference) {
  const std::int64_t M = 2, N = 3, K = 5;
  std::vector<QuantizationParams> grid = param_grid({N, K});
  for (auto& p : param_grid({K, N})) grid.push_back(std::move(p));
  for (const auto& w : grid) {
    const LinearDesc d{M, N, K, w, true};
    std::vector<float> x(M * K, 0.5f), bias(N, 1.0f), y(M * N), dy(M * N, 1.0f), dx(M * K),
        dw(N * K), db(N);
    std::vector<std::int8_t> wq(N * K, 1), xq(M * K);
    expect_agreement(
        {OpKind::linear_forward, d},
        [&] {
          reference::linear_forward(d, x.data(), wq.data(), bias.data(), xq.data(), y.data());
        },
        [&] { ops_->linear_forward(d, x.data(), wq.data(), bias.data(), xq.data(), y.data()); });
    const auto xp = QuantizationParams::per_tensor_symmetric(DType::int8, 0.01f);
    expect_agreement(
        {OpKind::linear_backward, d},
        [&] {
          reference::linear_backward(d, dy.data(), xq.data(), xp, wq.data(), dx.data(), dw.data(),
                                     db.data());
        },
        [&] {
          ops_->linear_backward(d, dy.data(), xq.data(), xp, wq.data(), dx.data(), dw.data(),
                                db.data());
        });
  }
}

TEST_F(ScalarPlugin, MismatchedDescriptorTypeIsRefused) {
  const Support s = ops_->supports({OpKind::matmul_integer, DynamicQuantizeDesc{{4}}});
  EXPECT_FALSE(s.supported);
  EXPECT_THAT(s.reason, ::testing::HasSubstr("DynamicQuantizeDesc"));
}

TEST_F(ScalarPlugin, ResultsEqualTheReferenceOnRandomData) {
  const auto seed = test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed) + " (replay with QFORGE_TEST_SEED)");
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<std::int64_t> extent(1, 40);
  std::uniform_int_distribution<int> byte(-128, 127);
  std::uniform_real_distribution<float> value(-3.0f, 3.0f);
  for (int round = 0; round < 8; ++round) {
    const std::int64_t M = extent(rng), N = extent(rng), K = extent(rng);
    SCOPED_TRACE("m=" + std::to_string(M) + " n=" + std::to_string(N) + " k=" + std::to_string(K));
    std::vector<float> sb(static_cast<std::size_t>(N));
    for (auto& s : sb) s = 0.01f + std::abs(value(rng));
    MatmulDesc d{.m = M,
                 .n = N,
                 .k = K,
                 .a = QuantizationParams::per_tensor_affine(DType::int8, 0.02f, 3),
                 .b = QuantizationParams::per_channel(DType::int8, Mapping::symmetric, 0, sb),
                 .b_layout = MatrixLayout::nk,
                 .has_bias = false,
                 .out_type = FloatType::f32,
                 .y = QuantizationParams::per_tensor_affine(DType::uint8, 0.7f, 128),
                 .requant_mode = RequantMode::fixed_point};
    std::vector<std::int8_t> a(static_cast<std::size_t>(M * K)), b(static_cast<std::size_t>(N * K));
    for (auto& v : a) v = static_cast<std::int8_t>(byte(rng));
    for (auto& v : b) v = static_cast<std::int8_t>(std::max(byte(rng), -127));
    std::vector<std::int32_t> c(M * N), c_ref(M * N, 1);
    ops_->matmul_integer(d, a.data(), b.data(), c.data());
    reference::matmul_integer(d, a.data(), b.data(), c_ref.data());
    EXPECT_EQ(c, c_ref);
    std::vector<std::uint8_t> y(M * N), y_ref(M * N, 1);
    ops_->qlinear_matmul(d, a.data(), b.data(), y.data());
    reference::qlinear_matmul(d, a.data(), b.data(), y_ref.data());
    EXPECT_EQ(y, y_ref);
  }
}

TEST_F(ScalarPlugin, IdentityDevicesAndKernels) {
  EXPECT_EQ(ops_->name(), "cpu_scalar");
  const Availability av = ops_->availability();
  EXPECT_TRUE(av.usable);
  EXPECT_EQ(av.score, 1);
  const auto devices = ops_->devices();
  ASSERT_EQ(devices.size(), 1u);
  EXPECT_EQ(devices[0].kind, "cpu");
  EXPECT_FALSE(devices[0].name.empty());
  EXPECT_TRUE(ops_->host_memory());
  const OpDesc op{OpKind::quantize,
                  QuantizeDesc{{4}, QuantizationParams::per_tensor_affine(DType::uint8, 0.5f, 3)}};
  EXPECT_EQ(ops_->plan(op, PlanRequest{0, "scalar_reference", {}})->kernel(), "scalar_reference");
  EXPECT_EQ(ops_->plan(op, PlanRequest{0, "", {}})->kernel(), "scalar_reference");
  try {
    ops_->plan(op, PlanRequest{0, "avx2_4x8", {}});
    ADD_FAILURE() << "expected unsupported";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::unsupported);
    EXPECT_THAT(e.what(), ::testing::HasSubstr("avx2_4x8"));
  }
}

}  // namespace
}  // namespace qforge::test
