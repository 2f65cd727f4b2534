// K past the int32 safe bound (reference::int32_safe_k): beyond it some operand values make
// sum_k (a - za)(b - zb) leave int32. A plugin either computes such a K exactly (and reports a
// true overflow as ErrorCode::overflow) or refuses it in supports(); it never answers wrongly.
// cpu_scalar, like the reference, must compute it.
//
// Three kinds of data per dtype pair: random codes (the sum fits), codes that all push the sum
// the same way (the true result overflows: the plugin must refuse or throw overflow), and codes
// whose partial sums leave int32 halfway but cancel back inside it (exact with 64-bit or
// wrapping 32-bit accumulation, wrong with saturating accumulation).
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <limits>

#include "harness/fixture.h"
#include "harness/random_data.h"
#include "qforge/reference.h"
#include "testers/matmul_tester.h"

namespace qforge::conformance {
namespace {

constexpr std::int64_t kInt32Max = std::numeric_limits<std::int32_t>::max();

MatmulDesc int_desc(DType a, std::int32_t za, DType b, std::int32_t zb, MatrixLayout layout,
                    std::int64_t m, std::int64_t n) {
  return MatmulDesc{.m = m,
                    .n = n,
                    .k = 1,
                    .a = QuantizationParams::per_tensor_affine(a, 0.01f, za),
                    .b = QuantizationParams::per_tensor_affine(b, 0.02f, zb),
                    .b_layout = layout,
                    .has_bias = false,
                    .out_type = FloatType::f32,
                    .y = std::nullopt,
                    .requant_mode = RequantMode::float_multiplier};
}

// Codes for A [M, K] from value(m, k).
std::vector<std::byte> a_codes(
    const MatmulDesc& d, const std::function<std::int32_t(std::int64_t, std::int64_t)>& value) {
  std::vector<std::byte> out(storage_bytes(d.a.dtype(), static_cast<std::size_t>(d.m * d.k)));
  for (std::int64_t i = 0; i < d.m; ++i)
    for (std::int64_t k = 0; k < d.k; ++k)
      store_element(d.a.dtype(), out.data(), static_cast<std::size_t>(i * d.k + k), value(i, k));
  return out;
}

// Codes for B from value(k, n), stored in the descriptor's layout.
std::vector<std::byte> b_codes(
    const MatmulDesc& d, const std::function<std::int32_t(std::int64_t, std::int64_t)>& value) {
  std::vector<std::byte> out(storage_bytes(d.b.dtype(), static_cast<std::size_t>(d.n * d.k)));
  for (std::int64_t k = 0; k < d.k; ++k)
    for (std::int64_t j = 0; j < d.n; ++j) {
      const std::int64_t at = d.b_layout == MatrixLayout::kn ? k * d.n + j : j * d.k + k;
      store_element(d.b.dtype(), out.data(), static_cast<std::size_t>(at), value(k, j));
    }
  return out;
}

std::int64_t max_term(const MatmulDesc& d) {
  const auto& ta = traits(d.a.dtype());
  const auto& tb = traits(d.b.dtype());
  const std::int64_t za = d.a.zero_point(), zb = d.b.zero_point();
  return std::max(std::abs(ta.qmin - za), std::abs(ta.qmax - za)) *
         std::max(std::abs(tb.qmin - zb), std::abs(tb.qmax - zb));
}

struct PluginParam {
  std::string plugin;
  std::string name() const { return plugin; }
  friend void PrintTo(const PluginParam& p, std::ostream* os) { *os << p.name(); }
};

std::vector<PluginParam> all_plugins() {
  std::vector<PluginParam> out;
  for (const auto& p : plugins_under_test()) out.push_back({p});
  return out;
}

class Int32Bound : public PluginTest<PluginParam> {
 protected:
  // Random codes at K = safe + 1: the sum fits, so the answer must be exact (or refused).
  void random_past_bound(MatmulDesc d) {
    d.k = reference::int32_safe_k(d) + 1;
    SCOPED_TRACE("int32_safe_k = " + std::to_string(d.k - 1));
    const auto& ta = traits(d.a.dtype());
    const auto& tb = traits(d.b.dtype());
    auto a = a_codes(d, [&](auto, auto) {
      return static_cast<std::int32_t>(uniform_int(rng_, ta.qmin, ta.qmax));
    });
    auto b = b_codes(d, [&](auto, auto) {
      return static_cast<std::int32_t>(uniform_int(rng_, tb.qmin, tb.qmax));
    });
    run_case(target_, MatmulTester::matmul_integer_case(d, a, b, "random codes, K = safe + 1"));
    MatmulDesc dq = d;
    run_case(target_,
             MatmulTester::matmul_dequant_case(dq, a, b, {}, "random codes, K = safe + 1"));
    dq.y = QuantizationParams::per_tensor_affine(DType::uint8, 50.0f, 128);
    run_case(target_, MatmulTester::qlinear_matmul_case(dq, a, b, "random codes, K = safe + 1"));
  }

  // Every term at its largest magnitude with one sign: the true sum leaves int32.
  void overflowing(MatmulDesc d) {
    const auto& ta = traits(d.a.dtype());
    const auto& tb = traits(d.b.dtype());
    const std::int32_t za = d.a.zero_point(), zb = d.b.zero_point();
    const std::int32_t a_end = std::abs(ta.qmax - za) >= std::abs(ta.qmin - za) ? ta.qmax : ta.qmin;
    const std::int32_t b_end = std::abs(tb.qmax - zb) >= std::abs(tb.qmin - zb) ? tb.qmax : tb.qmin;
    d.k = std::max(reference::int32_safe_k(d) + 1, kInt32Max / max_term(d) + 1);
    auto a = a_codes(d, [&](auto, auto) { return a_end; });
    auto b = b_codes(d, [&](auto, auto) { return b_end; });
    run_case(target_, MatmulTester::matmul_integer_case(
                          d, a, b, "one-signed extreme codes, true sum past int32"));
  }

  // Partial sums leave int32 halfway and cancel back: B's first half pushes up, its second
  // half down (column 1 the other way round).
  void cancelling(MatmulDesc d) {
    const auto& ta = traits(d.a.dtype());
    const auto& tb = traits(d.b.dtype());
    const std::int32_t za = d.a.zero_point(), zb = d.b.zero_point();
    const std::int64_t up = static_cast<std::int64_t>(ta.qmax - za) * (tb.qmax - zb);
    const std::int64_t half = kInt32Max / std::max<std::int64_t>(up, 1) + 1;
    d.k = std::max(2 * half, reference::int32_safe_k(d) + 1);
    auto a = a_codes(d, [&](auto, auto) { return ta.qmax; });
    auto b = b_codes(d, [&](std::int64_t k, std::int64_t j) {
      const bool first = k < d.k / 2;
      return (first != (j % 2 == 1)) ? tb.qmax : tb.qmin;
    });
    run_case(target_,
             MatmulTester::matmul_integer_case(d, a, b, "partial sums leave int32 and cancel"));
  }
};

TEST_P(Int32Bound, MatmulInteger_u8xs8_kn_m2_n3_k_past_safe) {
  const auto d = int_desc(DType::uint8, 0, DType::int8, -128, MatrixLayout::kn, 2, 3);
  random_past_bound(d);
  overflowing(d);
  cancelling(int_desc(DType::uint8, 0, DType::int8, 0, MatrixLayout::kn, 2, 3));
  expect_checked();
}

TEST_P(Int32Bound, MatmulInteger_s8xs8_nk_m3_n2_k_past_safe) {
  const auto d = int_desc(DType::int8, -128, DType::int8, 127, MatrixLayout::nk, 3, 2);
  random_past_bound(d);
  overflowing(d);
  cancelling(int_desc(DType::int8, 0, DType::int8, 0, MatrixLayout::nk, 3, 2));
  expect_checked();
}

TEST_P(Int32Bound, MatmulInteger_s16xs16_kn_m4_n5_k_past_safe) {
  random_past_bound(int_desc(DType::int16, 0, DType::int16, 0, MatrixLayout::kn, 4, 5));
  overflowing(int_desc(DType::int16, -32768, DType::int16, -32768, MatrixLayout::kn, 4, 5));
  cancelling(int_desc(DType::int16, 0, DType::int16, 0, MatrixLayout::kn, 4, 5));
  expect_checked();
}

INSTANTIATE_TEST_SUITE_P(Conformance, Int32Bound, ::testing::ValuesIn(all_plugins()),
                         param_name<PluginParam>);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(Int32Bound);

}  // namespace
}  // namespace qforge::conformance
