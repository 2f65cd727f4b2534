#include "qforge/dtype.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>

namespace qforge {
namespace {

TEST(DType, TraitsMatchTheDesign) {
  EXPECT_EQ(traits(DType::int8).qmin, -128);
  EXPECT_EQ(traits(DType::int8).narrow_qmin, -127);
  EXPECT_EQ(traits(DType::uint8).qmax, 255);
  EXPECT_EQ(traits(DType::int16).qmin, -32768);
  EXPECT_EQ(traits(DType::uint16).qmax, 65535);
  EXPECT_EQ(traits(DType::int4).qmin, -8);
  EXPECT_EQ(traits(DType::int4).narrow_qmin, -7);
  EXPECT_EQ(traits(DType::uint4).qmax, 15);
  EXPECT_EQ(traits(DType::binary).bits, 1);
  EXPECT_EQ(symmetric_zero_point(DType::uint8), 128);
  EXPECT_EQ(symmetric_zero_point(DType::uint4), 8);
  EXPECT_EQ(symmetric_zero_point(DType::uint16), 32768);
  EXPECT_EQ(symmetric_zero_point(DType::int8), 0);
}

TEST(DType, StorageBytes) {
  EXPECT_EQ(storage_bytes(DType::int8, 0), 0u);
  EXPECT_EQ(storage_bytes(DType::int4, 1), 1u);
  EXPECT_EQ(storage_bytes(DType::uint4, 7), 4u);
  EXPECT_EQ(storage_bytes(DType::binary, 1), 1u);
  EXPECT_EQ(storage_bytes(DType::binary, 17), 3u);
  EXPECT_EQ(storage_bytes(DType::uint16, 5), 10u);
}

TEST(DType, ParseRoundTrips) {
  for (const auto& t : kDTypeTraits) EXPECT_EQ(parse_dtype(t.name), t.dtype);
  EXPECT_FALSE(parse_dtype("int3").has_value());
  EXPECT_FALSE(parse_dtype("").has_value());
}

TEST(DType, Int4PacksElementTwoIInTheLowNibble) {
  std::array<std::uint8_t, 2> bytes{};
  store_element(DType::int4, bytes.data(), 0, -8);
  store_element(DType::int4, bytes.data(), 1, 7);
  store_element(DType::int4, bytes.data(), 2, -1);  // odd length: high nibble of byte 1 stays 0
  EXPECT_EQ(bytes[0], 0x78);
  EXPECT_EQ(bytes[1], 0x0F);
  EXPECT_EQ(load_element(DType::int4, bytes.data(), 0), -8);
  EXPECT_EQ(load_element(DType::int4, bytes.data(), 1), 7);
  EXPECT_EQ(load_element(DType::int4, bytes.data(), 2), -1);
  store_element(DType::uint4, bytes.data(), 3, 15);
  EXPECT_EQ(bytes[1], 0xFF);
  EXPECT_EQ(load_element(DType::uint4, bytes.data(), 3), 15);
}

TEST(DType, BinaryPacksElementIInBitI) {
  std::array<std::uint8_t, 2> bytes{};
  for (int i = 0; i < 9; ++i) store_element(DType::binary, bytes.data(), i, i % 3 == 0 ? 1 : -1);
  EXPECT_EQ(bytes[0], 0b01001001);
  EXPECT_EQ(bytes[1], 0x00);
  for (int i = 0; i < 9; ++i)
    EXPECT_EQ(load_element(DType::binary, bytes.data(), i), i % 3 == 0 ? 1 : -1) << i;
}

TEST(DType, SixteenBitLittleEndian) {
  std::array<std::uint8_t, 4> bytes{};
  store_element(DType::int16, bytes.data(), 1, -2);
  EXPECT_EQ(bytes[2], 0xFE);
  EXPECT_EQ(bytes[3], 0xFF);
  EXPECT_EQ(load_element(DType::int16, bytes.data(), 1), -2);
  EXPECT_EQ(load_element(DType::uint16, bytes.data(), 1), 65534);
}

}  // namespace
}  // namespace qforge
