// quantize / dequantize on tensors: ONNX per-axis and blocked examples, packing of int4/uint4/
// binary (odd lengths, padding), float16/bfloat16 inputs, empty and scalar tensors, errors.
#include <cmath>
#include <cstring>
#include <limits>

#include "qforge/reference.h"
#include "test_support.h"

namespace qforge {
namespace {

using reference::dequantize;
using reference::quantize;

std::vector<std::int32_t> unpack(DType t, const std::vector<std::uint8_t>& bytes, std::size_t n) {
  std::vector<std::int32_t> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = load_element(t, bytes.data(), i);
  return v;
}

std::vector<std::uint8_t> run_quantize(const QuantizeDesc& d, const void* x) {
  const auto n = static_cast<std::size_t>(element_count(d.shape));
  // Poisoned output plus a canary byte: quantize must write every byte (padding bits zero) and
  // nothing past storage_bytes.
  std::vector<std::uint8_t> q(storage_bytes(d.params.dtype(), n) + 1, 0xFF);
  quantize(d, x, q.data());
  EXPECT_EQ(q.back(), 0xFF) << "wrote past the end";
  q.pop_back();
  return q;
}

TEST(QuantizeTensor, OnnxPerAxisExample) {
  // ONNX QuantizeLinear with axis = 1 on x of shape [1, 3, 3, 2], uint8.
  const std::vector<float> x = {-162, 10,   -100, 232,  -20,  -50,    // channel 0: s 2, z 84
                                -76,  0,    0,    252,  32,   -44,    // channel 1: s 4, z 24
                                245,  -485, -960, -270, -375, -470};  // channel 2: s 5, z 196
  const std::vector<std::int32_t> expected = {3,  89, 34, 200, 74, 59, 5,   24,  24,
                                              87, 32, 13, 245, 99, 4,  142, 121, 102};
  const QuantizeDesc d{
      {1, 3, 3, 2},
      QuantizationParams::per_channel(DType::uint8, Mapping::affine, 1, {2, 4, 5}, {84, 24, 196})};
  const auto q = run_quantize(d, x.data());
  EXPECT_EQ(unpack(DType::uint8, q, 18), expected);
  // DequantizeLinear of the same data gives x back exactly (every x is on the grid).
  std::vector<float> back(18);
  dequantize(d, q.data(), back.data());
  EXPECT_EQ(back, x);
  // The same axis written from the end.
  const QuantizeDesc neg{
      {1, 3, 3, 2},
      QuantizationParams::per_channel(DType::uint8, Mapping::affine, -3, {2, 4, 5}, {84, 24, 196})};
  EXPECT_EQ(run_quantize(neg, x.data()), q);
}

TEST(QuantizeTensor, BlockedWithPartialLastBlock) {
  // Blocks of 2 along the last axis of [3, 4], affine uint8 (hand-computed).
  const std::vector<float> x = {6, 12, 50, 5, 1, 8, 4, 5, 0, 20, 10, 4};
  const QuantizeDesc d{
      {3, 4},
      QuantizationParams::blockwise(DType::uint8, Mapping::affine, 2,
                                    {1.5f, 2.5f, 3.0f, 4.9f, 5.1f, 6.9f}, {0, 1, 1, 0, 2, 3})};
  EXPECT_EQ(unpack(DType::uint8, run_quantize(d, x.data()), 12),
            (std::vector<std::int32_t>{4, 8, 21, 3, 1, 4, 1, 1, 2, 6, 4, 4}));
  // Last axis 5 with blocks of 2: 3 blocks per row, the last holding one element.
  const std::vector<float> y = {1, 2, 3, 4, 5, -1, -2, -3, -4, -5};
  const QuantizeDesc p{{2, 5},
                       QuantizationParams::blockwise(DType::int8, Mapping::symmetric, 2,
                                                     {1, 0.5f, 0.25f, 1, 0.5f, 0.25f})};
  EXPECT_EQ(unpack(DType::int8, run_quantize(p, y.data()), 10),
            (std::vector<std::int32_t>{1, 2, 6, 8, 20, -1, -2, -6, -8, -20}));
  // Wrong number of blocks.
  const QuantizeDesc bad{
      {2, 5}, QuantizationParams::blockwise(DType::int8, Mapping::symmetric, 2, {1, 1, 1, 1})};
  std::vector<std::uint8_t> q(10);
  EXPECT_QFORGE_ERROR(quantize(bad, y.data(), q.data()), ErrorCode::shape_mismatch, "expected 6");
}

TEST(QuantizeTensor, Int4PackingOddLength) {
  const std::vector<float> x = {1, -2, 3, -8, 7};
  const QuantizeDesc d{{5}, QuantizationParams::per_tensor_affine(DType::int4, 1.0f, 0)};
  const auto q = run_quantize(d, x.data());
  ASSERT_EQ(q.size(), 3u);
  // Element 2i in the low nibble; the unused high nibble of the last byte is zero.
  EXPECT_EQ(q[0], 0xE1);
  EXPECT_EQ(q[1], 0x83);
  EXPECT_EQ(q[2], 0x07);
  std::vector<float> back(5);
  dequantize(d, q.data(), back.data());
  EXPECT_EQ(back, x);

  const QuantizeDesc u{{3}, QuantizationParams::per_tensor_affine(DType::uint4, 0.5f, 8)};
  const std::vector<float> ux = {-4, 3.5f, 100};
  const auto uq = run_quantize(u, ux.data());
  ASSERT_EQ(uq.size(), 2u);
  EXPECT_EQ(uq[0], 0xF0);  // 0 (saturated), 15
  EXPECT_EQ(uq[1], 0x0F);  // 15 (saturated), padding 0
}

TEST(QuantizeTensor, BinaryPackingNineElements) {
  const std::vector<float> x = {1, -1, 0, -0.5f, 2, -3, 0.1f, -0.1f, -7};
  const QuantizeDesc d{{9}, QuantizationParams::per_tensor_symmetric(DType::binary, 0.5f)};
  const auto q = run_quantize(d, x.data());
  ASSERT_EQ(q.size(), 2u);
  EXPECT_EQ(q[0], 0b01010101);  // element i in bit i: + - + - + - + -
  EXPECT_EQ(q[1], 0x00);        // element 8 is negative, padding bits zero
  std::vector<float> back(9);
  dequantize(d, q.data(), back.data());
  EXPECT_EQ(back, (std::vector<float>{0.5f, -0.5f, 0.5f, -0.5f, 0.5f, -0.5f, 0.5f, -0.5f, -0.5f}));
}

TEST(QuantizeTensor, HalfAndBFloat16Inputs) {
  const std::vector<float> values = {0.1f, -2.75f, 1000.0f, 3.3f};
  const QuantizeDesc f32{{4}, QuantizationParams::per_tensor_affine(DType::int16, 0.01f, -5)};
  for (const FloatType t : {FloatType::f16, FloatType::bf16}) {
    std::vector<std::uint16_t> raw(4);
    std::vector<float> widened(4);
    for (std::size_t i = 0; i < 4; ++i) {
      store_float(t, raw.data(), i, values[i]);
      widened[i] = load_float(t, raw.data(), i);
    }
    QuantizeDesc d = f32;
    d.float_type = t;
    EXPECT_EQ(run_quantize(d, raw.data()), run_quantize(f32, widened.data())) << name(t);
  }
}

TEST(QuantizeTensor, EmptyAndScalar) {
  const QuantizeDesc empty{{2, 0, 3}, QuantizationParams::per_tensor_affine(DType::uint8, 1.0f, 0)};
  std::uint8_t canary = 0x5A;
  quantize(empty, nullptr, &canary);  // nothing to read, nothing written
  EXPECT_EQ(canary, 0x5A);
  dequantize(empty, nullptr, nullptr);
  // Per-channel params carry at least one pair, so an empty channel axis is refused by name.
  const QuantizeDesc empty_axis{
      {0, 4}, QuantizationParams(DType::int8, Scheme::per_channel_affine(0), {1.0f})};
  EXPECT_QFORGE_ERROR(quantize(empty_axis, nullptr, nullptr), ErrorCode::shape_mismatch,
                      "would need 0 pairs");

  const float x = 2.6f;
  const QuantizeDesc scalar{{}, QuantizationParams::per_tensor_affine(DType::int8, 0.5f, 1)};
  const auto q = run_quantize(scalar, &x);
  ASSERT_EQ(q.size(), 1u);
  EXPECT_EQ(static_cast<std::int8_t>(q[0]), 6);  // rne(5.2) + 1
  float back = 0;
  dequantize(scalar, q.data(), &back);
  EXPECT_EQ(back, 2.5f);
}

TEST(QuantizeTensor, NonFiniteInputs) {
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> x = {std::numeric_limits<float>::quiet_NaN(), inf, -inf};
  const QuantizeDesc d{{3}, QuantizationParams::per_tensor_affine(DType::uint8, 0.1f, 77)};
  EXPECT_EQ(unpack(DType::uint8, run_quantize(d, x.data()), 3),
            (std::vector<std::int32_t>{77, 255, 0}));
  const QuantizeDesc s{{3}, QuantizationParams::per_tensor_symmetric(DType::uint8, 0.1f)};
  EXPECT_EQ(unpack(DType::uint8, run_quantize(s, x.data()), 3),
            (std::vector<std::int32_t>{128, 255, 1}));
}

TEST(QuantizeTensor, Errors) {
  std::vector<float> x(6, 1.0f);
  std::vector<std::uint8_t> q(6);
  const QuantizeDesc wrong_count{
      {2, 3}, QuantizationParams::per_channel(DType::int8, Mapping::affine, 1, {1, 1})};
  EXPECT_QFORGE_ERROR(quantize(wrong_count, x.data(), q.data()), ErrorCode::shape_mismatch,
                      "2 scales for shape [2, 3]");
  const QuantizeDesc bad_axis{
      {2, 3}, QuantizationParams::per_channel(DType::int8, Mapping::affine, 2, {1, 1})};
  EXPECT_QFORGE_ERROR(dequantize(bad_axis, q.data(), x.data()), ErrorCode::shape_mismatch,
                      "axis 2 for a tensor of rank 2");
  const QuantizeDesc ok{{2, 3}, QuantizationParams::per_tensor_affine(DType::int8, 1.0f, 0)};
  EXPECT_QFORGE_ERROR(quantize(ok, nullptr, q.data()), ErrorCode::invalid_argument,
                      "x is null for 6 elements");
  EXPECT_QFORGE_ERROR(dequantize(ok, q.data(), nullptr), ErrorCode::invalid_argument, "x is null");
  const QuantizeDesc negative{{2, -3}, QuantizationParams::per_tensor_affine(DType::int8, 1.0f, 0)};
  EXPECT_QFORGE_ERROR(quantize(negative, x.data(), q.data()), ErrorCode::shape_mismatch,
                      "expected >= 0");
}

TEST(QuantizeTensor, RandomPerChannelMatchesScalarKernel) {
  QFORGE_SEEDED_RNG(rng);
  for (int iter = 0; iter < 200; ++iter) {
    const DType t = static_cast<DType>(test::uniform_int(rng, 0, 6));
    const Shape shape = {test::uniform_int(rng, 1, 5), test::uniform_int(rng, 1, 7),
                         test::uniform_int(rng, 1, 9)};
    const int axis = static_cast<int>(test::uniform_int(rng, 0, 2));
    const Mapping m = t == DType::binary ? Mapping::symmetric
                                         : static_cast<Mapping>(test::uniform_int(rng, 0, 2));
    const auto channels = static_cast<std::size_t>(shape[static_cast<std::size_t>(axis)]);
    std::vector<float> scales(channels);
    std::vector<std::int32_t> zps;
    for (auto& s : scales) s = test::uniform(rng, 0.01f, 2.0f);
    if (m == Mapping::affine)
      for (std::size_t c = 0; c < channels; ++c)
        zps.push_back(
            static_cast<std::int32_t>(test::uniform_int(rng, traits(t).qmin, traits(t).qmax)));
    const QuantizeDesc d{shape, QuantizationParams::per_channel(t, m, axis, scales, zps)};
    const auto n = static_cast<std::size_t>(element_count(shape));
    std::vector<float> x(n);
    for (auto& v : x) v = test::uniform(rng, -300.0f, 300.0f);
    const auto q = run_quantize(d, x.data());
    std::vector<float> back(n);
    dequantize(d, q.data(), back.data());
    SCOPED_TRACE(d.params.to_string() + " shape " + to_string(shape));
    for (std::size_t i = 0; i < n; ++i) {
      // Channel of element i along `axis`, computed from the coordinates.
      std::size_t stride = 1;
      for (std::size_t a = static_cast<std::size_t>(axis) + 1; a < 3; ++a)
        stride *= static_cast<std::size_t>(shape[a]);
      const std::size_t c = (i / stride) % channels;
      const float s = scales[c];
      const std::int32_t z = d.params.zero_point(c);
      const std::int32_t expected =
          m == Mapping::logarithmic
              ? reference::quantize_log_value(x[i], s, t)
              : reference::quantize_value(x[i], s, z, d.params.qmin(), d.params.qmax());
      ASSERT_EQ(load_element(t, q.data(), i), expected) << "element " << i;
      const float expected_back = m == Mapping::logarithmic
                                      ? reference::dequantize_log_value(expected, s)
                                      : reference::dequantize_value(expected, s, z);
      ASSERT_EQ(back[i], expected_back) << "element " << i;
    }
  }
}

}  // namespace
}  // namespace qforge
