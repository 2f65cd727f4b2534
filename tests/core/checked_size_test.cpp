// qforge's size limit (checked_size.h): extents, element counts and byte counts of at most 2^48,
// checked without ever forming an overflowing product. Shapes from the audit of hostile inputs:
// [3037000500, 3037000500] (the product just passes INT64_MAX), [2^32, 2^32, 2^32] (wrapped to
// 0 elements before), INT64_MAX extents.
#include "qforge/checked_size.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <limits>
#include <random>
#include <string>

#include "qforge/error.h"
#include "qforge/params.h"
#include "qforge/shape.h"
#include "qforge/tensor.h"

namespace qforge {
namespace {

constexpr std::int64_t kInt64Max = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t k2_32 = std::int64_t{1} << 32;

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

TEST(CheckedSize, HostileShapesNameTheOperandAndTheExtents) {
  expect_error(
      [] {
        (void)element_count({3037000500, 3037000500});
      },
      ErrorCode::invalid_argument,
      {"shape = [3037000500, 3037000500]", "more than 2^48 = 281474976710656 elements"});
  expect_error(
      [] {
        (void)element_count({k2_32, k2_32, k2_32});
      },
      ErrorCode::invalid_argument,
      {"shape = [4294967296, 4294967296, 4294967296]", "more than 2^48"});
  expect_error(
      [] {
        (void)element_count({kInt64Max, kInt64Max});
      },
      ErrorCode::invalid_argument, {"extent 0 is 9223372036854775807", "expected at most 2^48"});
  expect_error(
      [] {
        (void)checked_element_count("A [M, K]", {k2_32, k2_32});
      },
      ErrorCode::invalid_argument, {"A [M, K] = [4294967296, 4294967296]"});
  expect_error(
      [] {
        (void)checked_element_count("A [M, K]", {std::int64_t{1} << 62, 4});
      },
      ErrorCode::invalid_argument, {"extent 0 is 4611686018427387904"});
  // Negative extents keep their own code.
  expect_error(
      [] {
        (void)element_count({2, -1});
      },
      ErrorCode::shape_mismatch, {"extent 1 is -1", "expected >= 0"});
}

TEST(CheckedSize, BoundaryOfTheLimit) {
  EXPECT_EQ(element_count({kMaxSize}), kMaxSize);
  EXPECT_EQ(element_count({1 << 24, 1 << 24}), kMaxSize);
  EXPECT_EQ(element_count({0, kMaxSize}), 0);
  EXPECT_EQ(element_count({}), 1);
  EXPECT_THROW((void)element_count({kMaxSize + 1}), Error);
  EXPECT_THROW((void)element_count({1 << 24, 1 << 24, 2}), Error);
  // Empty axes count as 1 for the limit, so every stride of the shape fits too.
  EXPECT_THROW((void)element_count({0, std::int64_t{1} << 40, std::int64_t{1} << 40}), Error);
}

// Against exact 128-bit products on random extents around the limit.
TEST(CheckedSize, AgreesWithExactProducts) {
  const char* env = std::getenv("QFORGE_TEST_SEED");
  const std::uint64_t seed = env ? std::stoull(env) : std::random_device{}();
  SCOPED_TRACE("replay with QFORGE_TEST_SEED=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  for (int iter = 0; iter < 20000; ++iter) {
    Shape shape(static_cast<std::size_t>(rng() % 5));
    for (auto& e : shape) {
      const int bits = static_cast<int>(rng() % 64);  // extents from 0 to beyond INT64_MAX / 2
      e = bits == 0 ? 0 : static_cast<std::int64_t>(rng() >> (64 - bits));
    }
    unsigned __int128 bounded = 1;
    bool over = false, empty = false;
    for (const auto e : shape) {
      if (e > kMaxSize) over = true;
      if (e == 0) empty = true;
      else if (!over) bounded *= static_cast<unsigned __int128>(e);
      if (bounded > static_cast<unsigned __int128>(kMaxSize)) over = true;
    }
    if (over) {
      EXPECT_THROW((void)element_count(shape), Error) << to_string(shape);
    } else {
      EXPECT_EQ(element_count(shape), empty ? 0 : static_cast<std::int64_t>(bounded))
          << to_string(shape);
    }
  }
}

TEST(CheckedSize, Bytes) {
  EXPECT_EQ(checked_bytes("c", kMaxSize / 4, 4), static_cast<std::size_t>(kMaxSize));
  expect_error([] { (void)checked_bytes("c [M, N]", kMaxSize / 4 + 1, 4); },
               ErrorCode::invalid_argument, {"c [M, N]", "70368744177665 elements of 4 bytes"});
  expect_error([] { (void)checked_bytes("x", kInt64Max, 8); }, ErrorCode::invalid_argument, {"x"});
  expect_error([] { (void)checked_bytes("x", -1, 1); }, ErrorCode::invalid_argument, {"-1"});
  EXPECT_EQ(checked_storage_bytes("q", DType::int4, kMaxSize),
            static_cast<std::size_t>(kMaxSize / 2));
  EXPECT_EQ(checked_storage_bytes("q", DType::binary, 9), 2u);
  EXPECT_EQ(checked_storage_bytes("q", DType::int16, kMaxSize / 2),
            static_cast<std::size_t>(kMaxSize));
  EXPECT_THROW((void)checked_storage_bytes("q", DType::int16, kMaxSize / 2 + 1), Error);
  EXPECT_THROW((void)checked_storage_bytes("q", DType::int4, kMaxSize + 1), Error);
}

TEST(CheckedSize, SaturatingMul) {
  EXPECT_EQ(saturating_mul(3, 4), 12);
  EXPECT_EQ(saturating_mul(3037000500, 3037000500), kInt64Max);
  EXPECT_EQ(saturating_mul(kInt64Max, 0), 0);
}

TEST(CheckedSize, TensorsAndBuffersRefuseHostileSizes) {
  const auto p = QuantizationParams::per_tensor_affine(DType::int8, 1.0f, 0);
  expect_error(
      [&] {
        QuantizedTensor t({k2_32, k2_32, k2_32}, p);
      },
      ErrorCode::invalid_argument, {"[4294967296, 4294967296, 4294967296]"});
  expect_error(
      [&] {
        QuantizedTensor t({3037000500, 3037000500}, p);
      },
      ErrorCode::invalid_argument, {"[3037000500, 3037000500]"});
  expect_error([] { (void)make_host_buffer(std::numeric_limits<std::size_t>::max()); },
               ErrorCode::invalid_argument, {"make_host_buffer", "2^48"});
}

}  // namespace
}  // namespace qforge
