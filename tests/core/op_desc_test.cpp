#include "qforge/op_desc.h"

#include <gtest/gtest.h>

#include "qforge/error.h"
#include "qforge/scheme.h"
#include "qforge/shape.h"

namespace qforge {
namespace {

TEST(OpDesc, NamesRoundTrip) {
  for (int i = 0; i < kOpKindCount; ++i) {
    const auto op = static_cast<OpKind>(i);
    EXPECT_EQ(parse_op_kind(to_string(op)), op);
  }
  EXPECT_FALSE(parse_op_kind("conv2d").has_value());
  EXPECT_EQ(parse_mapping("logarithmic"), Mapping::logarithmic);
  EXPECT_EQ(parse_granularity("block"), Granularity::block);
  EXPECT_EQ(to_string(Scheme::block_symmetric(64)), "block_symmetric(64)");
  EXPECT_EQ(to_string(Scheme::per_channel_affine(1)), "per_channel_affine(axis=1)");
}

TEST(OpDesc, DescribeNamesTheWorkload) {
  MatmulDesc d{.m = 4,
               .n = 2,
               .k = 3,
               .a = QuantizationParams::per_tensor_affine(DType::uint8, 1.0f, 12),
               .b = QuantizationParams::per_tensor_affine(DType::int8, 1.0f, 0)};
  const auto text = describe({OpKind::matmul_integer, d});
  EXPECT_EQ(text,
            "matmul_integer m=4 n=2 k=3 a=uint8/per_tensor_affine b=int8/per_tensor_affine "
            "b_layout=kn");
  EXPECT_EQ(d.b_shape(), (Shape{3, 2}));
  d.b_layout = MatrixLayout::nk;
  EXPECT_EQ(d.b_shape(), (Shape{2, 3}));
}

TEST(Shape, ElementCount) {
  EXPECT_EQ(element_count({}), 1);
  EXPECT_EQ(element_count({0, 7}), 0);
  EXPECT_EQ(element_count({2, 3, 4}), 24);
  EXPECT_THROW(element_count({2, -1}), Error);
  EXPECT_EQ(to_string(Shape{2, 3}), "[2, 3]");
}

}  // namespace
}  // namespace qforge
