#include "qforge/tensor.h"

#include <gtest/gtest.h>

#include "qforge/error.h"

namespace qforge {
namespace {

TEST(QuantizedTensor, EmptyAndOneElement) {
  QuantizedTensor empty({0, 4}, QuantizationParams::per_tensor_affine(DType::int4, 1.0f, 0));
  EXPECT_EQ(empty.numel(), 0);
  EXPECT_EQ(empty.storage_bytes(), 0u);
  EXPECT_TRUE(empty.device().is_host());

  QuantizedTensor one({}, QuantizationParams::per_tensor_symmetric(DType::binary, 1.0f));
  EXPECT_EQ(one.numel(), 1);
  EXPECT_EQ(one.storage_bytes(), 1u);
  one.set(0, 1);
  EXPECT_EQ(one.at(0), 1);
  one.set(0, -1);
  EXPECT_EQ(one.at(0), -1);
  EXPECT_THROW(one.set(0, 0), Error);
}

TEST(QuantizedTensor, OddLengthInt4) {
  QuantizedTensor t({5}, QuantizationParams::per_tensor_affine(DType::int4, 1.0f, 0));
  EXPECT_EQ(t.storage_bytes(), 3u);
  for (int i = 0; i < 5; ++i) t.set(i, i - 3);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(t.at(i), i - 3);
  // The pad nibble of the last byte stays zero.
  EXPECT_EQ(static_cast<unsigned>(t.bytes()[2]) >> 4, 0u);
}

TEST(QuantizedTensor, RejectsMisshapedParamsAndShortStorage) {
  EXPECT_THROW(QuantizedTensor({2, 3}, QuantizationParams::per_channel(DType::int8, Mapping::affine,
                                                                       0, {1, 1, 1})),
               Error);
  try {
    QuantizedTensor({10}, QuantizationParams::per_tensor_affine(DType::int8, 1.0f, 0),
                    make_host_buffer(4));
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("expected at least 10"), std::string::npos) << e.what();
  }
  EXPECT_THROW(QuantizedTensor({-1}, QuantizationParams::per_tensor_affine(DType::int8, 1.0f, 0)),
               Error);
}

TEST(QuantizedTensor, IndexOutOfRange) {
  QuantizedTensor t({3}, QuantizationParams::per_tensor_affine(DType::uint8, 1.0f, 0));
  EXPECT_THROW(t.at(3), Error);
  EXPECT_THROW(t.set(-1, 0), Error);
  EXPECT_THROW(t.set(0, 256), Error);
}

TEST(HostBuffer, AlignedAndZeroed) {
  auto b = make_host_buffer(100);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(b->data()) % 64, 0u);
  EXPECT_EQ(b->size(), 100u);
  const auto* p = static_cast<const unsigned char*>(b->data());
  for (int i = 0; i < 100; ++i) EXPECT_EQ(p[i], 0);
  EXPECT_NE(make_host_buffer(0)->data(), nullptr);
}

}  // namespace
}  // namespace qforge
