// Hostile sizes through the reference: every op refuses an operand beyond qforge's size limit
// (checked_size.h: 2^48 elements and bytes) with a qforge::Error naming the op, the operand and
// its extents, before it touches memory; the buffers passed here hold a few bytes only. Before the
// limit, m = k = 2^32 and [3037000500, 3037000500] crashed the reference and [2^32, 2^32, 2^32]
// wrapped to an empty tensor.
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "matmul_support.h"
#include "qforge/checked_size.h"
#include "qforge/reference.h"
#include "test_support.h"

namespace qforge::reference {
namespace {

constexpr std::int64_t kInt64Max = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t k2_32 = std::int64_t{1} << 32;
constexpr std::int64_t k2_62 = std::int64_t{1} << 62;

const QuantizationParams& i8() {
  static const auto p = QuantizationParams::per_tensor_affine(DType::int8, 0.5f, 1);
  return p;
}

// A few bytes that stand in for every operand: nothing may be read or written.
struct Dummy {
  alignas(64) std::uint8_t bytes[256] = {};
  void* p() { return bytes; }
  float* f() { return reinterpret_cast<float*>(bytes); }
  std::int32_t* i32() { return reinterpret_cast<std::int32_t*>(bytes); }
  std::int8_t* s8() { return reinterpret_cast<std::int8_t*>(bytes); }
  bool untouched() const {
    for (auto b : bytes)
      if (b != 0) return false;
    return true;
  }
};

struct MatmulCase {
  std::int64_t m, n, k;
  std::string text;  // the operand and extents the message must name
};

std::vector<MatmulCase> hostile_matmuls() {
  return {
      {k2_32, 1, k2_32, "A [M, K] = [4294967296, 4294967296] has more than 2^48"},
      {k2_62, 1, 4, "A [M, K] = [4611686018427387904, 4]: extent 0 is 4611686018427387904"},
      {kInt64Max, kInt64Max, kInt64Max,
       "A [M, K] = [9223372036854775807, 9223372036854775807]: extent 0 is 9223372036854775807"},
      {1 << 30, 1 << 30, 1, "output [M, N] = [1073741824, 1073741824] has more than 2^48"},
      {1, std::int64_t{1} << 40, std::int64_t{1} << 20, "B [K, N] = [1048576, 1099511627776]"},
      {3037000500, 3037000500, 3037000500, "A [M, K] = [3037000500, 3037000500]"},
  };
}

TEST(SizeLimits, MatmulOpsNameTheOperand) {
  for (const auto& c : hostile_matmuls()) {
    SCOPED_TRACE(c.text);
    MatmulDesc d = test::matmul(c.m, c.n, c.k, i8(), i8());
    Dummy a, b, out;
    EXPECT_QFORGE_ERROR(matmul_integer(d, a.p(), b.p(), out.i32()), ErrorCode::invalid_argument,
                        "reference::matmul_integer: " + c.text);
    EXPECT_QFORGE_ERROR(matmul_dequant(d, a.p(), b.p(), nullptr, out.p()),
                        ErrorCode::invalid_argument, "reference::matmul_dequant: " + c.text);
    MatmulDesc q = d;
    q.y = QuantizationParams::per_tensor_affine(DType::int8, 1.0f, 0);
    EXPECT_QFORGE_ERROR(qlinear_matmul(q, a.p(), b.p(), out.p()), ErrorCode::invalid_argument,
                        "reference::qlinear_matmul: " + c.text);
    EXPECT_QFORGE_ERROR(check_descriptor(OpDesc{OpKind::matmul_integer, d}),
                        ErrorCode::invalid_argument, c.text);
    // The packed calls' check covers A and the output (B was checked when packed).
    if (c.text.rfind("B ", 0) != 0)
      EXPECT_QFORGE_ERROR(check_matmul_a(OpKind::matmul_integer, d), ErrorCode::invalid_argument,
                          c.text);
    EXPECT_TRUE(a.untouched() && b.untouched() && out.untouched());
  }
}

TEST(SizeLimits, MatmulBytesCountToo) {
  // 2^48 int16 codes are 2^49 bytes.
  const auto i16 = QuantizationParams::per_tensor_affine(DType::int16, 1.0f, 0);
  Dummy a, b, out;
  EXPECT_QFORGE_ERROR(
      matmul_integer(test::matmul(1 << 24, 1, 1 << 24, i16, i16), a.p(), b.p(), out.i32()),
      ErrorCode::invalid_argument,
      "A [M, K] = [16777216, 16777216]: 281474976710656 elements of 2 bytes");
  // The int32 output at the limit's element count needs 2^50 bytes.
  EXPECT_QFORGE_ERROR(
      matmul_integer(test::matmul(1 << 24, 1 << 24, 1, i8(), i8()), a.p(), b.p(), out.i32()),
      ErrorCode::invalid_argument, "output [M, N] = [16777216, 16777216]");
}

TEST(SizeLimits, ElementwiseOpsNameTheShape) {
  const std::vector<std::pair<Shape, std::string>> shapes = {
      {{3037000500, 3037000500}, "[3037000500, 3037000500] has more than 2^48"},
      {{k2_32, k2_32, k2_32}, "[4294967296, 4294967296, 4294967296] has more than 2^48"},
      {{kInt64Max}, "[9223372036854775807]: extent 0 is 9223372036854775807"},
      {{kInt64Max, 0}, "[9223372036854775807, 0]: extent 0 is 9223372036854775807"},
  };
  for (const auto& [shape, text] : shapes) {
    SCOPED_TRACE(to_string(shape));
    Dummy x, y;
    const QuantizeDesc qd{shape, i8()};
    EXPECT_QFORGE_ERROR(quantize(qd, x.p(), y.p()), ErrorCode::invalid_argument,
                        "reference::quantize: q = " + text);
    EXPECT_QFORGE_ERROR(dequantize(qd, x.p(), y.f()), ErrorCode::invalid_argument,
                        "reference::dequantize: q = " + text);
    const RequantizeDesc rd{shape, {0.5f}};
    EXPECT_QFORGE_ERROR(requantize(rd, x.i32(), y.p()), ErrorCode::invalid_argument,
                        "reference::requantize: c = " + text);
    EXPECT_QFORGE_ERROR(dynamic_quantize_linear(DynamicQuantizeDesc{shape}, x.f(),
                                                static_cast<std::uint8_t*>(y.p())),
                        ErrorCode::invalid_argument,
                        "reference::dynamic_quantize_linear: x = " + text);
    for (const OpKind op : {OpKind::quantize, OpKind::dequantize})
      EXPECT_QFORGE_ERROR(check_descriptor(OpDesc{op, qd}), ErrorCode::invalid_argument, text);
    EXPECT_TRUE(x.untouched() && y.untouched());
  }
  // Within the element limit but not the byte limit: 2^47 float32 values are 2^49 bytes.
  Dummy x, y;
  const QuantizeDesc big{{std::int64_t{1} << 47}, i8()};
  EXPECT_QFORGE_ERROR(quantize(big, x.p(), y.p()), ErrorCode::invalid_argument,
                      "x = [140737488355328]: 140737488355328 elements of 4 bytes");
  EXPECT_QFORGE_ERROR(requantize(RequantizeDesc{{std::int64_t{1} << 47}, {0.5f}}, x.i32(), y.p()),
                      ErrorCode::invalid_argument, "c = [140737488355328]");
}

TEST(SizeLimits, LinearNamesTheOperand) {
  Dummy x, w, b, xq, y, dx, dw, db;
  for (const auto& c : hostile_matmuls()) {
    SCOPED_TRACE(c.text);
    const LinearDesc d{c.m, c.n, c.k, QuantizationParams::per_tensor_symmetric(DType::int8, 0.5f),
                       false};
    EXPECT_QFORGE_ERROR(linear_forward(d, x.f(), w.s8(), nullptr, xq.s8(), y.f()),
                        ErrorCode::invalid_argument, "reference::linear_forward: ");
    EXPECT_QFORGE_ERROR(linear_backward(d, y.f(), xq.s8(),
                                        QuantizationParams::per_tensor_symmetric(DType::int8, 1.0f),
                                        w.s8(), dx.f(), dw.f(), db.f()),
                        ErrorCode::invalid_argument, "2^48");
  }
  const LinearDesc mk{k2_32, 1, k2_32, QuantizationParams::per_tensor_symmetric(DType::int8, 0.5f),
                      false};
  EXPECT_QFORGE_ERROR(check_descriptor(OpDesc{OpKind::linear_forward, mk}),
                      ErrorCode::invalid_argument, "X [M, K] = [4294967296, 4294967296]");
}

// A shape at the limit is a valid descriptor: the limit refuses nothing a machine could hold.
TEST(SizeLimits, AtTheLimitIsValid) {
  EXPECT_NO_THROW(check_descriptor(
      OpDesc{OpKind::quantize, QuantizeDesc{{1 << 23, 1 << 23}, i8(), FloatType::f32}}));
  EXPECT_NO_THROW(check_descriptor(
      OpDesc{OpKind::matmul_integer, test::matmul(1 << 23, 1 << 23, 1 << 23, i8(), i8())}));
}

}  // namespace
}  // namespace qforge::reference
