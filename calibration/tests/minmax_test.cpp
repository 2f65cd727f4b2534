// MinMax and MovingAverageMinMax observers: PyTorch's published observer example, hand-computed
// per-channel cases, randomised per-channel ranges against a naive loop, and bad input.
#include "qforge/calibration/minmax.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "qforge/error.h"
#include "qforge/reference.h"
#include "test_support.h"

namespace qforge::calibration {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

// PyTorch, test/quantization/core/test_workflow_module.py test_per_tensor_observers: batches
// [1, 2, 2, 3, 4, 5, 6] then [4, 5, 5, 6, 7, 8].
const std::vector<float> kX = {1, 2, 2, 3, 4, 5, 6};
const std::vector<float> kY = {4, 5, 5, 6, 7, 8};

TEST(MinMaxObserver, PyTorchObserverExample) {
  MinMaxObserver obs;
  obs.observe(kX);
  obs.observe(kY);
  ASSERT_EQ(obs.ranges().size(), 1u);
  EXPECT_EQ(obs.ranges()[0], (Range{1.0f, 8.0f}));
  EXPECT_EQ(obs.stats(), (ObserverStats{2, 0, 13, 0}));

  // Affine: PyTorch's ref_scale 0.0313725, zero points -128 (qint8) and 0 (quint8); qforge's
  // convention agrees for affine.
  for (Convention conv : {Convention::qforge, Convention::pytorch}) {
    const auto i8 = obs.params({DType::int8, Mapping::affine, conv});
    EXPECT_NEAR(i8.scale(), 0.0313725, 1e-7);
    EXPECT_EQ(i8.scale(), 8.0f / 255.0f);
    EXPECT_EQ(i8.zero_point(), -128);
    const auto u8 = obs.params({DType::uint8, Mapping::affine, conv});
    EXPECT_EQ(u8.scale(), 8.0f / 255.0f);
    EXPECT_EQ(u8.zero_point(), 0);
    EXPECT_EQ(u8.scheme().mapping, Mapping::affine);
  }

  // Symmetric in PyTorch's convention: 8 / 127.5 = 0.062745, zero point 0 (qint8), 128 (quint8),
  // full range, so the params are affine with that fixed zero point.
  const auto pi8 = obs.params({DType::int8, Mapping::symmetric, Convention::pytorch});
  EXPECT_NEAR(pi8.scale(), 0.062745, 1e-6);
  EXPECT_EQ(pi8.scale(), 8.0f / 127.5f);
  EXPECT_EQ(pi8.zero_point(), 0);
  EXPECT_EQ(pi8.scheme().mapping, Mapping::affine);
  EXPECT_EQ(pi8.qmin(), -128);
  const auto pu8 = obs.params({DType::uint8, Mapping::symmetric, Convention::pytorch});
  EXPECT_EQ(pu8.scale(), 8.0f / 127.5f);
  EXPECT_EQ(pu8.zero_point(), 128);

  // Symmetric in qforge's convention: 8 / 127 with the narrow range, zero point 0 and 128.
  const auto qi8 = obs.params({DType::int8, Mapping::symmetric});
  EXPECT_EQ(qi8.scale(), 8.0f / 127.0f);
  EXPECT_EQ(qi8.zero_point(), 0);
  EXPECT_EQ(qi8.scheme().mapping, Mapping::symmetric);
  EXPECT_EQ(qi8.qmin(), -127);
  const auto qu8 = obs.params({DType::uint8, Mapping::symmetric});
  EXPECT_EQ(qu8.scale(), 8.0f / 127.0f);
  EXPECT_EQ(qu8.zero_point(), 128);
}

TEST(MinMaxObserver, QforgeConventionIsCoreParamsFromRange) {
  MinMaxObserver obs;
  obs.observe(std::vector<float>{-3.25f, 0.5f, 7.75f});
  for (DType d :
       {DType::int8, DType::uint8, DType::int16, DType::uint16, DType::int4, DType::uint4}) {
    for (Mapping m : {Mapping::affine, Mapping::symmetric, Mapping::logarithmic}) {
      SCOPED_TRACE(std::string(name(d)) + " " + std::string(to_string(m)));
      EXPECT_EQ(obs.params({d, m}), reference::params_from_range(d, m, -3.25f, 7.75f));
    }
  }
  EXPECT_EQ(obs.params({DType::binary, Mapping::symmetric}),
            reference::params_from_range(DType::binary, Mapping::symmetric, -3.25f, 7.75f));
  EXPECT_THROW(obs.params({DType::binary, Mapping::affine}), Error);
}

TEST(MinMaxObserver, PyTorchConventionGeneralisesToOtherDtypes) {
  MinMaxObserver obs;
  obs.observe(std::vector<float>{-1.0f, 3.0f});
  // int4: full range [-8, 7]: symmetric s = 3 / 7.5; uint4 midpoint 8; int16 s = 3 / 32767.5.
  const auto i4 = obs.params({DType::int4, Mapping::symmetric, Convention::pytorch});
  EXPECT_EQ(i4.scale(), 3.0f / 7.5f);
  EXPECT_EQ(i4.zero_point(), 0);
  const auto u4 = obs.params({DType::uint4, Mapping::symmetric, Convention::pytorch});
  EXPECT_EQ(u4.zero_point(), 8);
  const auto i16 = obs.params({DType::int16, Mapping::symmetric, Convention::pytorch});
  EXPECT_EQ(i16.scale(), 3.0f / 32767.5f);
  const auto u16 = obs.params({DType::uint16, Mapping::symmetric, Convention::pytorch});
  EXPECT_EQ(u16.zero_point(), 32768);
  // Affine int4: s = 4 / 15, z = -8 - round(-1 / s) = -8 + 4 = -4.
  const auto a4 = obs.params({DType::int4, Mapping::affine, Convention::pytorch});
  EXPECT_EQ(a4.scale(), 4.0f / 15.0f);
  EXPECT_EQ(a4.zero_point(), -4);
  EXPECT_THROW(obs.params({DType::binary, Mapping::symmetric, Convention::pytorch}), Error);
  EXPECT_THROW(obs.params({DType::int8, Mapping::logarithmic, Convention::pytorch}), Error);
}

TEST(MovingAverageMinMaxObserver, FirstBatchSetsRangeThenAverages) {
  // Averaging constant 0.5 (PyTorch's test): [1, 6], then min 1 + 0.5 * (4 - 1) = 2.5 and
  // max 6 + 0.5 * (8 - 6) = 7.
  MovingAverageMinMaxObserver half(0.5f);
  half.observe(kX);
  EXPECT_EQ(half.ranges()[0], (Range{1.0f, 6.0f}));
  half.observe(kY);
  EXPECT_EQ(half.ranges()[0], (Range{2.5f, 7.0f}));
  const auto p = half.params({DType::uint8, Mapping::affine});
  EXPECT_EQ(p.scale(), 7.0f / 255.0f);
  EXPECT_EQ(p.zero_point(), 0);

  // Default 0.01, in float32 as PyTorch computes it.
  MovingAverageMinMaxObserver obs;
  EXPECT_EQ(obs.averaging_constant(), 0.01f);
  obs.observe(kX);
  obs.observe(kY);
  const float lo = 1.0f + 0.01f * (4.0f - 1.0f);
  const float hi = 6.0f + 0.01f * (8.0f - 6.0f);
  EXPECT_EQ(obs.ranges()[0], (Range{lo, hi}));
  EXPECT_NEAR(lo, 1.03, 1e-6);
  EXPECT_NEAR(hi, 6.02, 1e-6);
}

TEST(MovingAverageMinMaxObserver, RejectsBadAveragingConstant) {
  EXPECT_THROW((void)MovingAverageMinMaxObserver(0.0f), Error);
  EXPECT_THROW((void)MovingAverageMinMaxObserver(1.5f), Error);
  EXPECT_THROW((void)MovingAverageMinMaxObserver(kNaN), Error);
  EXPECT_NO_THROW((void)MovingAverageMinMaxObserver(1.0f));
}

TEST(MinMaxObserver, PerChannelHandComputed) {
  // [[1, -2, 3], [4, 5, -6]]
  const std::vector<float> x = {1, -2, 3, 4, 5, -6};
  auto rows = MinMaxObserver::per_channel(0);
  rows.observe(x, {2, 3});
  EXPECT_EQ(rows.ranges(), (std::vector<Range>{{-2, 3}, {-6, 5}}));
  auto cols = MinMaxObserver::per_channel(-1);
  cols.observe(x, {2, 3});
  EXPECT_EQ(cols.ranges(), (std::vector<Range>{{1, 4}, {-2, 5}, {-6, 3}}));

  // Affine int8 for [-2, 3]: s = 5 / 255, z = rne(-128 + 2 / s) = rne(-128 + 102) = -26.
  const auto p = rows.params({DType::int8, Mapping::affine});
  EXPECT_EQ(p.scheme(), Scheme::per_channel_affine(0));
  ASSERT_EQ(p.count(), 2u);
  EXPECT_EQ(p.scale(0), 5.0f / 255.0f);
  EXPECT_EQ(p.zero_point(0), -26);
  EXPECT_EQ(p.scale(1), 11.0f / 255.0f);
  const auto s = cols.params({DType::int8, Mapping::symmetric});
  EXPECT_EQ(s.scheme(), Scheme::per_channel_symmetric(-1));
  EXPECT_EQ(s.scale(2), 6.0f / 127.0f);
  std::vector<float> lo = {1, -2, -6}, hi = {4, 5, 3};
  EXPECT_EQ(s,
            reference::params_from_ranges(DType::int8, Scheme::per_channel_symmetric(-1), lo, hi));
  // Per-channel PyTorch convention.
  const auto t = cols.params({DType::int8, Mapping::symmetric, Convention::pytorch});
  EXPECT_EQ(t.scale(1), 5.0f / 127.5f);
  EXPECT_EQ(t.scheme().granularity, Granularity::per_channel);
}

// Naive per-channel extremes via QuantizationParams::param_index (core's definition of which
// channel an element belongs to).
std::vector<Range> naive_ranges(const std::vector<std::vector<float>>& batches, const Shape& shape,
                                int axis) {
  const int rank = static_cast<int>(shape.size());
  const auto channels =
      static_cast<std::size_t>(shape[static_cast<std::size_t>(axis < 0 ? axis + rank : axis)]);
  const QuantizationParams index(DType::int8, Scheme::per_channel_affine(axis),
                                 std::vector<float>(channels, 1.0f));
  std::vector<Range> r(channels, Range{kInf, -kInf});
  for (const auto& b : batches)
    for (std::size_t i = 0; i < b.size(); ++i) {
      if (!std::isfinite(b[i])) continue;
      auto& c = r[index.param_index(shape, static_cast<std::int64_t>(i))];
      c.lo = std::min(c.lo, b[i]);
      c.hi = std::max(c.hi, b[i]);
    }
  return r;
}

TEST(MinMaxObserver, PerChannelRandomShapesAndAxes) {
  SCOPED_TRACE(test::seed_text());
  auto gen = test::rng(1);
  std::uniform_int_distribution<int> extent(1, 9);
  std::normal_distribution<float> value(0.0f, 3.0f);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  for (int trial = 0; trial < 40; ++trial) {
    const int rank = 1 + trial % 4;
    Shape shape;
    for (int i = 0; i < rank; ++i) shape.push_back(extent(gen));
    const int axis = static_cast<int>(gen() % static_cast<unsigned>(2 * rank)) - rank;
    SCOPED_TRACE("shape " + to_string(shape) + " axis " + std::to_string(axis));
    auto obs = MinMaxObserver::per_channel(axis);
    std::vector<std::vector<float>> batches;
    std::int64_t bad = 0;
    for (int b = 0; b < 3; ++b) {
      std::vector<float> x(static_cast<std::size_t>(element_count(shape)));
      for (float& v : x) {
        const float r = u(gen);
        v = r < 0.02f ? kNaN : r < 0.03f ? kInf : r < 0.04f ? -kInf : value(gen);
        bad += std::isfinite(v) ? 0 : 1;
      }
      obs.observe(x, shape);
      batches.push_back(std::move(x));
    }
    const auto expected = naive_ranges(batches, shape, axis);
    EXPECT_EQ(obs.lows().size(), expected.size());
    for (std::size_t c = 0; c < expected.size(); ++c) {
      EXPECT_EQ(obs.lows()[c], expected[c].lo) << "channel " << c;
      EXPECT_EQ(obs.highs()[c], expected[c].hi) << "channel " << c;
    }
    EXPECT_EQ(obs.stats().non_finite, bad);
    EXPECT_EQ(obs.stats().values, 3 * element_count(shape) - bad);
  }
}

TEST(MinMaxObserver, LongBatchesMatchNaiveExtremes) {
  // Lengths around the 16-wide vector steps and the 4096-value blocks (a block that holds an
  // infinity is scanned again exactly), with non-finite values in any lane.
  SCOPED_TRACE(test::seed_text());
  auto gen = test::rng(2);
  std::uniform_real_distribution<float> u(-100.0f, 100.0f);
  for (std::size_t n :
       {1u, 7u, 15u, 16u, 17u, 31u, 33u, 1000u, 4095u, 4096u, 4099u, 9000u, 20000u}) {
    std::vector<float> x(n);
    for (float& v : x) v = u(gen);
    const float specials[] = {kNaN, kInf, -kInf, -0.0f};
    for (int k = 0; k < 3; ++k) x[gen() % n] = specials[gen() % 4];
    if (n > 4096 && (gen() & 1)) x[gen() % 4096] = gen() & 1 ? kInf : -kInf;  // in block 0
    MinMaxObserver obs;
    obs.observe(x);
    // One channel: the whole batch viewed as [1, n] along axis 0.
    const auto e = naive_ranges({x}, {1, static_cast<std::int64_t>(n)}, 0);
    if (!(e[0].lo <= e[0].hi)) {  // every value was replaced by a non-finite one
      EXPECT_FALSE(obs.has_data());
      continue;
    }
    EXPECT_EQ(obs.ranges()[0].lo, e[0].lo) << n;
    EXPECT_EQ(obs.ranges()[0].hi, e[0].hi) << n;
  }
}

TEST(MinMaxObserver, NonFiniteValuesAreSkippedAndCounted) {
  MinMaxObserver obs;
  obs.observe(std::vector<float>{kNaN, 2.0f, kInf, -1.0f, -kInf, kNaN});
  EXPECT_EQ(obs.ranges()[0], (Range{-1.0f, 2.0f}));
  EXPECT_EQ(obs.stats().non_finite, 4);
  EXPECT_EQ(obs.stats().values, 2);
  // A batch of only non-finite values leaves the range alone.
  MovingAverageMinMaxObserver ma(0.5f);
  ma.observe(std::vector<float>{1.0f, 3.0f});
  ma.observe(std::vector<float>{kNaN, kInf});
  EXPECT_EQ(ma.ranges()[0], (Range{1.0f, 3.0f}));
  EXPECT_EQ(ma.stats().non_finite, 2);
  EXPECT_EQ(ma.stats().batches, 2);
}

TEST(MinMaxObserver, EmptyBatchesAreIgnored) {
  MinMaxObserver obs;
  obs.observe(std::vector<float>{});
  EXPECT_FALSE(obs.has_data());
  obs.observe(std::vector<float>{2.0f});
  obs.observe(std::vector<float>{}, {0, 4});
  EXPECT_EQ(obs.stats(), (ObserverStats{1, 2, 1, 0}));
  auto pc = MinMaxObserver::per_channel(1);
  pc.observe({}, {0, 3});
  EXPECT_EQ(pc.channels(), 0);
  pc.observe(std::vector<float>{1, 2, 3}, {1, 3});
  EXPECT_EQ(pc.channels(), 3);
}

TEST(MinMaxObserver, ParamsBeforeDataIsAClearError) {
  MinMaxObserver obs;
  obs.observe(std::vector<float>{kNaN});
  try {
    (void)obs.params({DType::int8, Mapping::affine});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("no data observed yet"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("1 non-finite"), std::string::npos) << e.what();
  }
  // Per channel: a channel that never saw a finite value is named.
  auto pc = MinMaxObserver::per_channel(0);
  pc.observe(std::vector<float>{1.0f, kNaN}, {2});
  try {
    (void)pc.params({DType::int8, Mapping::affine});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("channel 1"), std::string::npos) << e.what();
  }
}

TEST(MinMaxObserver, ConstantAndZeroTensorsGiveValidParams) {
  for (float c : {0.0f, -0.0f, 3.5f, -2.0f, 1e-30f}) {
    SCOPED_TRACE(c);
    MinMaxObserver obs;
    obs.observe(std::vector<float>(100, c));
    for (DType d : {DType::int8, DType::uint8, DType::int4, DType::int16}) {
      for (Mapping m : {Mapping::affine, Mapping::symmetric}) {
        for (Convention conv : {Convention::qforge, Convention::pytorch}) {
          const auto p = obs.params({d, m, conv});
          EXPECT_TRUE(std::isfinite(p.scale()) && p.scale() > 0.0f);
          // The constant itself survives a round trip within one step.
          const auto q =
              reference::quantize_value(c, p.scale(), p.zero_point(), p.qmin(), p.qmax());
          EXPECT_NEAR(reference::dequantize_value(q, p.scale(), p.zero_point()), c, p.scale());
        }
      }
    }
  }
  MinMaxObserver zero;
  zero.observe(std::vector<float>(8, 0.0f));
  EXPECT_EQ(zero.params({DType::int8, Mapping::symmetric}).scale(), 1.0f);  // qforge: s = 1
}

TEST(MinMaxObserver, ShapeErrorsNameTheProblem) {
  MinMaxObserver obs;
  EXPECT_THROW(obs.observe(std::vector<float>{1, 2, 3}, {2, 2}), Error);
  auto pc = MinMaxObserver::per_channel(2);
  EXPECT_THROW(pc.observe(std::vector<float>{1, 2}), Error);       // no shape
  EXPECT_THROW(pc.observe(std::vector<float>{1, 2}, {2}), Error);  // no axis 2
  pc.observe(std::vector<float>(6, 1.0f), {1, 2, 3});
  try {
    pc.observe(std::vector<float>(4, 1.0f), {1, 1, 4});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::shape_mismatch);
    EXPECT_NE(std::string(e.what()).find("expected 3"), std::string::npos) << e.what();
  }
}

TEST(MovingAverageMinMaxObserver, PerChannelChannelsStartIndependently) {
  auto obs = MovingAverageMinMaxObserver::per_channel(1, 0.5f);
  // Channel 1 sees no finite value in the first batch: its first finite batch sets its range.
  obs.observe(std::vector<float>{1.0f, kNaN, 3.0f, kNaN}, {2, 2});
  obs.observe(std::vector<float>{5.0f, 10.0f, 7.0f, 20.0f}, {2, 2});
  EXPECT_EQ(obs.lows()[0], 1.0f + 0.5f * (5.0f - 1.0f));
  EXPECT_EQ(obs.highs()[0], 3.0f + 0.5f * (7.0f - 3.0f));
  EXPECT_EQ(obs.lows()[1], 10.0f);
  EXPECT_EQ(obs.highs()[1], 20.0f);
}

}  // namespace
}  // namespace qforge::calibration
