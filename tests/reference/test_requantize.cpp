// requantize on tensors: per-tensor and per-axis multipliers, both modes, both output types,
// saturation, and descriptor errors.
#include <limits>

#include "qforge/reference.h"
#include "test_support.h"

namespace qforge {
namespace {

using reference::requantize;

std::vector<std::int32_t> run(const RequantizeDesc& d, const std::vector<std::int32_t>& c) {
  std::vector<std::uint8_t> y(c.size() + 1, 0xEE);
  requantize(d, c.data(), y.data());
  EXPECT_EQ(y.back(), 0xEE);
  std::vector<std::int32_t> out(c.size());
  for (std::size_t i = 0; i < c.size(); ++i) out[i] = load_element(d.out_dtype, y.data(), i);
  return out;
}

TEST(Requantize, PerTensorBothModes) {
  const std::vector<std::int32_t> c = {0, 5, -5, 7, 1000, -1000, 250, -251};
  RequantizeDesc d{{2, 4}, {0.5f}, -1, DType::int8, 3, RequantMode::float_multiplier};
  // rne(c * 0.5) + 3: 2.5 -> 2, -2.5 -> -2, 3.5 -> 4, 125 + 3 saturates, -125.5 -> -126 + 3.
  EXPECT_EQ(run(d, c), (std::vector<std::int32_t>{3, 5, 1, 7, 127, -128, 127, -123}));
  d.mode = RequantMode::fixed_point;
  // SRDHM breaks ties upward: 2.5 -> 3, -2.5 -> -2, 3.5 -> 4, -125.5 -> -125.
  EXPECT_EQ(run(d, c), (std::vector<std::int32_t>{3, 6, 1, 7, 127, -128, 127, -122}));
  d.out_dtype = DType::uint8;
  d.out_zero_point = 128;
  EXPECT_EQ(run(d, c), (std::vector<std::int32_t>{128, 131, 126, 132, 255, 0, 253, 3}));
}

TEST(Requantize, PerAxisMultipliers) {
  const std::vector<std::int32_t> c = {10, 10, 10, 10, 10, 10};
  // Shape [2, 3], one multiplier per column (axis 1 and its alias -1).
  for (const int axis : {1, -1}) {
    const RequantizeDesc d{{2, 3}, {1.0f, 0.5f, 0.25f},          axis, DType::int8,
                           0,      RequantMode::float_multiplier};
    EXPECT_EQ(run(d, c), (std::vector<std::int32_t>{10, 5, 2, 10, 5, 2}));  // 2.5 -> 2
  }
  // One multiplier per row (axis 0).
  const RequantizeDesc rows{{2, 3}, {2.0f, 0.1f}, 0, DType::uint8, 0, RequantMode::fixed_point};
  EXPECT_EQ(run(rows, c), (std::vector<std::int32_t>{20, 20, 20, 1, 1, 1}));
}

TEST(Requantize, EmptyAndRandomAgainstScalarKernel) {
  const RequantizeDesc empty{{0, 3}, {1.0f, 1.0f, 1.0f}, 1, DType::int8, 0, {}};
  requantize(empty, nullptr, nullptr);

  QFORGE_SEEDED_RNG(rng);
  for (int iter = 0; iter < 100; ++iter) {
    const Shape shape = {test::uniform_int(rng, 1, 6), test::uniform_int(rng, 1, 6),
                         test::uniform_int(rng, 1, 6)};
    const int axis = static_cast<int>(test::uniform_int(rng, 0, 2));
    const bool per_axis = iter % 2;
    const std::size_t count = per_axis ? static_cast<std::size_t>(shape[axis]) : 1;
    RequantizeDesc d{shape, {},
                     axis,  iter % 4 < 2 ? DType::int8 : DType::uint8,
                     0,     iter % 3 ? RequantMode::fixed_point : RequantMode::float_multiplier};
    const auto& tr = traits(d.out_dtype);
    d.out_zero_point = static_cast<std::int32_t>(test::uniform_int(rng, tr.qmin, tr.qmax));
    for (std::size_t i = 0; i < count; ++i)
      d.multipliers.push_back(test::uniform(rng, 1e-4f, 0.1f));
    const auto n = static_cast<std::size_t>(element_count(shape));
    std::vector<std::int32_t> c(n);
    for (auto& v : c) v = static_cast<std::int32_t>(test::uniform_int(rng, -100000, 100000));
    const auto y = run(d, c);
    std::size_t stride = 1;
    for (std::size_t a = static_cast<std::size_t>(axis) + 1; a < 3; ++a)
      stride *= static_cast<std::size_t>(shape[a]);
    for (std::size_t i = 0; i < n; ++i) {
      const float m = per_axis ? d.multipliers[(i / stride) % count] : d.multipliers[0];
      ASSERT_EQ(y[i],
                reference::requantize_value(c[i], m, d.mode, d.out_zero_point, tr.qmin, tr.qmax))
          << "element " << i;
    }
  }
}

TEST(Requantize, Errors) {
  const std::vector<std::int32_t> c(6, 1);
  std::vector<std::uint8_t> y(12);
  RequantizeDesc d{{2, 3}, {1.0f}, -1, DType::int16, 0, {}};
  EXPECT_QFORGE_ERROR(requantize(d, c.data(), y.data()), ErrorCode::invalid_argument,
                      "out_dtype = int16; expected int8 or uint8");
  d.out_dtype = DType::uint8;
  d.out_zero_point = -1;
  EXPECT_QFORGE_ERROR(requantize(d, c.data(), y.data()), ErrorCode::invalid_argument,
                      "out_zero_point = -1");
  d.out_zero_point = 0;
  d.multipliers = {};
  EXPECT_QFORGE_ERROR(requantize(d, c.data(), y.data()), ErrorCode::invalid_argument,
                      "no multipliers");
  d.multipliers = {1.0f, 2.0f};
  EXPECT_QFORGE_ERROR(requantize(d, c.data(), y.data()), ErrorCode::shape_mismatch,
                      "2 multipliers for shape [2, 3] along axis 1; expected 1 or 3");
  d.axis = 2;
  EXPECT_QFORGE_ERROR(requantize(d, c.data(), y.data()), ErrorCode::shape_mismatch,
                      "expected an axis in [-2, 1]");
  d.axis = 0;
  d.multipliers = {1.0f, std::numeric_limits<float>::quiet_NaN()};
  EXPECT_QFORGE_ERROR(requantize(d, c.data(), y.data()), ErrorCode::invalid_argument,
                      "multipliers[1] = nan");
  d.multipliers = {1.0f};
  EXPECT_QFORGE_ERROR(requantize(d, nullptr, y.data()), ErrorCode::invalid_argument, "c is null");
}

}  // namespace
}  // namespace qforge
