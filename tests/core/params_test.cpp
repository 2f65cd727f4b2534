#include "qforge/params.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "qforge/checked_size.h"
#include "qforge/error.h"

namespace qforge {
namespace {

// Runs f, expects a qforge::Error with `code` whose message contains every fragment.
template <class F>
void expect_error(F&& f, ErrorCode code, std::initializer_list<std::string> fragments) {
  try {
    f();
    ADD_FAILURE() << "expected qforge::Error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    for (const auto& frag : fragments)
      EXPECT_NE(std::string(e.what()).find(frag), std::string::npos)
          << "message \"" << e.what() << "\" lacks \"" << frag << "\"";
  }
}

TEST(Params, RejectsNonFiniteAndNonPositiveScales) {
  const float bad[] = {0.0f, -1.0f, std::numeric_limits<float>::quiet_NaN(),
                       std::numeric_limits<float>::infinity()};
  for (float s : bad)
    expect_error([&] { QuantizationParams::per_tensor_affine(DType::int8, s, 0); },
                 ErrorCode::invalid_argument, {"scale[0]", "expected a finite value > 0"});
}

// The zero-point range kept at construction equals a scan of the zero points (fresh random
// zero points every run; the seed is printed on failure).
TEST(Params, ZeroPointRangeMatchesTheZeroPoints) {
  const auto seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  for (int trial = 0; trial < 20; ++trial) {
    const int n = std::uniform_int_distribution<int>(1, 300)(rng);
    std::vector<float> scales(static_cast<std::size_t>(n), 0.5f);
    std::vector<std::int32_t> zps(static_cast<std::size_t>(n));
    for (auto& z : zps) z = std::uniform_int_distribution<int>(0, 255)(rng);
    const auto p = QuantizationParams::per_channel(DType::uint8, Mapping::affine, 0, scales, zps);
    EXPECT_EQ(p.min_zero_point(), *std::min_element(zps.begin(), zps.end()));
    EXPECT_EQ(p.max_zero_point(), *std::max_element(zps.begin(), zps.end()));
  }
  const auto sym = QuantizationParams::per_tensor_symmetric(DType::int8, 1.0f);
  EXPECT_EQ(sym.min_zero_point(), 0);
  EXPECT_EQ(sym.max_zero_point(), 0);
  const auto one = QuantizationParams::per_tensor_affine(DType::int16, 1.0f, -300);
  EXPECT_EQ(one.min_zero_point(), -300);
  EXPECT_EQ(one.max_zero_point(), -300);
}

// identity(): copies share it, a new construction with the same contents gets another one (and
// still compares equal), a moved-from object loses it (and no longer equals its old contents).
TEST(Params, IdentityFollowsContents) {
  const std::vector<float> scales = {0.5f, 0.25f, 2.0f};
  const auto a =
      QuantizationParams::per_channel(DType::int8, Mapping::affine, 0, scales, {1, -2, 3});
  const auto same =
      QuantizationParams::per_channel(DType::int8, Mapping::affine, 0, scales, {1, -2, 3});
  const auto other =
      QuantizationParams::per_channel(DType::int8, Mapping::affine, 0, scales, {1, -2, 4});
  EXPECT_NE(a.identity(), 0u);
  EXPECT_NE(a.identity(), same.identity());
  EXPECT_TRUE(a == same);
  EXPECT_FALSE(a == other);
  QuantizationParams copy = a;
  EXPECT_EQ(copy.identity(), a.identity());
  EXPECT_TRUE(copy == a);
  QuantizationParams assigned = other;
  assigned = a;
  EXPECT_EQ(assigned.identity(), a.identity());
  QuantizationParams moved = std::move(copy);
  EXPECT_EQ(moved.identity(), a.identity());
  EXPECT_EQ(copy.identity(), 0u);  // NOLINT(bugprone-use-after-move): checking the moved-from state
  EXPECT_EQ(copy.count(), 0u);
  EXPECT_FALSE(copy == a);
  QuantizationParams target = other;
  target = std::move(moved);
  EXPECT_EQ(target.identity(), a.identity());
  EXPECT_TRUE(target == a);
  EXPECT_EQ(moved.identity(), 0u);  // NOLINT(bugprone-use-after-move)
}

TEST(Params, AcceptsTinyAndHugeScales) {
  EXPECT_NO_THROW(QuantizationParams::per_tensor_affine(DType::int8, 1e-38f, 0));
  EXPECT_NO_THROW(QuantizationParams::per_tensor_affine(DType::int8, 1e38f, 0));
  EXPECT_NO_THROW(QuantizationParams::per_tensor_affine(
      DType::int8, std::numeric_limits<float>::denorm_min(), 0));
}

TEST(Params, ZeroPointMustLieInTheDTypeRange) {
  expect_error([] { QuantizationParams::per_tensor_affine(DType::uint8, 1.0f, 256); },
               ErrorCode::invalid_argument, {"zero_point[0] = 256", "uint8", "[0, 255]"});
  expect_error([] { QuantizationParams::per_tensor_affine(DType::int4, 1.0f, -9); },
               ErrorCode::invalid_argument, {"zero_point[0] = -9", "[-8, 7]"});
  EXPECT_NO_THROW(QuantizationParams::per_tensor_affine(DType::uint4, 1.0f, 15));
}

TEST(Params, SymmetricFixesTheZeroPoint) {
  const auto p = QuantizationParams::per_tensor_symmetric(DType::uint8, 0.5f);
  EXPECT_EQ(p.zero_point(), 128);
  EXPECT_EQ(p.qmin(), 1);
  EXPECT_EQ(p.qmax(), 255);
  const auto s = QuantizationParams::per_tensor_symmetric(DType::int8, 0.5f);
  EXPECT_EQ(s.zero_point(), 0);
  EXPECT_EQ(s.qmin(), -127);
  expect_error([] { QuantizationParams(DType::int8, Scheme::per_tensor_symmetric(), {1.0f}, {3}); },
               ErrorCode::invalid_argument, {"zero_point[0] = 3", "symmetric", "expected 0"});
}

TEST(Params, BinaryIsSymmetricOnly) {
  expect_error([] { QuantizationParams::per_tensor_affine(DType::binary, 1.0f, 0); },
               ErrorCode::invalid_argument, {"binary", "expected symmetric"});
  EXPECT_NO_THROW(QuantizationParams::per_tensor_symmetric(DType::binary, 1.0f));
}

TEST(Params, LogarithmicRange) {
  const auto p = QuantizationParams::logarithmic(DType::int4, 2.0f);
  EXPECT_EQ(p.qmin(), -7);
  EXPECT_EQ(p.qmax(), 7);
  EXPECT_EQ(p.zero_point(), 0);
  EXPECT_EQ(QuantizationParams::logarithmic(DType::uint8, 1.0f).qmin(), 0);
}

TEST(Params, CountsMustMatch) {
  expect_error(
      [] {
        QuantizationParams(DType::int8, Scheme::per_tensor_affine(), {1.0f, 2.0f});
      },
      ErrorCode::invalid_argument, {"2 scales", "exactly 1"});
  expect_error(
      [] {
        QuantizationParams::per_channel(DType::int8, Mapping::affine, 0, {1.0f, 2.0f}, {0});
      },
      ErrorCode::invalid_argument, {"1 zero points for 2 scales"});
  expect_error([] { QuantizationParams::blockwise(DType::int4, Mapping::symmetric, 0, {1.0f}); },
               ErrorCode::invalid_argument, {"block_size = 0"});
}

TEST(Params, ValidateForShape) {
  const auto pc =
      QuantizationParams::per_channel(DType::int8, Mapping::symmetric, 1, {1.0f, 2.0f, 3.0f});
  EXPECT_NO_THROW(pc.validate_for({4, 3}));
  expect_error(
      [&] {
        pc.validate_for({3, 4});
      },
      ErrorCode::shape_mismatch, {"3 scales", "[3, 4]", "expected 4", "axis 1"});
  expect_error([&] { pc.validate_for({3}); }, ErrorCode::shape_mismatch, {"axis 1", "rank 1"});
  const auto neg = QuantizationParams::per_channel(DType::int8, Mapping::affine, -1, {1.0f, 1.0f});
  EXPECT_NO_THROW(neg.validate_for({5, 2}));
  EXPECT_EQ(neg.channel_axis(2), 1);

  // Block-wise: a partial last block is allowed: 2 rows x ceil(33 / 32) = 4 pairs.
  const auto blk =
      QuantizationParams::blockwise(DType::int4, Mapping::affine, 32, {1, 1, 1, 1}, {0, 1, 2, 3});
  EXPECT_NO_THROW(blk.validate_for({2, 33}));
  expect_error(
      [&] {
        blk.validate_for({2, 32});
      },
      ErrorCode::shape_mismatch, {"4 scales", "expected 2"});
  expect_error([&] { blk.validate_for({}); }, ErrorCode::shape_mismatch, {"rank-0"});
  // Per-channel and block params carry at least one pair (params.h), so an empty channel axis
  // or an empty tensor takes per_tensor params.
  expect_error([&] { (void)QuantizationParams::per_channel(DType::int8, Mapping::affine, 0, {}); },
               ErrorCode::invalid_argument, {"per_channel scheme with 0 scales", "at least 1"});
  expect_error([&] { (void)QuantizationParams::blockwise(DType::int8, Mapping::affine, 32, {}); },
               ErrorCode::invalid_argument, {"block scheme with 0 scales", "at least 1"});
  const auto one = QuantizationParams::per_channel(DType::int8, Mapping::affine, 0, {1.0f});
  expect_error(
      [&] {
        one.validate_for({0, 5});
      },
      ErrorCode::shape_mismatch, {"[0, 5]", "would need 0 pairs", "expected per_tensor params"});
  const auto blk1 = QuantizationParams::blockwise(DType::int8, Mapping::affine, 4, {1.0f});
  expect_error(
      [&] {
        blk1.validate_for({0, 5});
      },
      ErrorCode::shape_mismatch, {"would need 0 pairs"});
  EXPECT_NO_THROW(QuantizationParams::per_tensor_affine(DType::int8, 1.0f, 0).validate_for({0, 5}));
}

// The block size is bounded by qforge's size limit, so that ceil(extent / block) stays exact.
TEST(Params, BlockSizeWithinTheSizeLimit) {
  EXPECT_NO_THROW(QuantizationParams::blockwise(DType::int8, Mapping::affine, kMaxSize, {1.0f}));
  for (const std::int64_t bs : {kMaxSize + 1, std::numeric_limits<std::int64_t>::max()})
    expect_error(
        [&] { (void)QuantizationParams::blockwise(DType::int8, Mapping::affine, bs, {1.0f}); },
        ErrorCode::invalid_argument, {"block_size = " + std::to_string(bs), "expected 1 to 2^48"});
}

TEST(Params, ParamIndex) {
  const auto pc = QuantizationParams::per_channel(DType::int8, Mapping::affine, 1, {1, 2, 3});
  const Shape shape{2, 3, 2};
  // flat index 0..11 over [2,3,2]: channel = (i / 2) % 3
  for (int i = 0; i < 12; ++i)
    EXPECT_EQ(pc.param_index(shape, i), static_cast<std::size_t>((i / 2) % 3));
  const auto blk =
      QuantizationParams::blockwise(DType::int8, Mapping::affine, 2, std::vector<float>(4, 1.0f));
  const Shape bshape{2, 3};  // 2 rows x 2 blocks (sizes 2 and 1)
  const std::size_t expect[] = {0, 0, 1, 2, 2, 3};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(blk.param_index(bshape, i), expect[i]);
}

}  // namespace
}  // namespace qforge
