// The default host-memory behaviour of QuantizationOps (buffers, copies, packed weights), on a
// minimal backend that records calls instead of computing.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "qforge/error.h"
#include "qforge/ops.h"

namespace qforge {
namespace {

class RecordingOps final : public QuantizationOps {
 public:
  const void* last_b = nullptr;
  std::string name() const override { return "recording"; }
  std::string version() const override { return "0"; }
  Availability availability() const override { return {true, 1, {}}; }
  std::vector<DeviceInfo> devices() const override { return {{"host", "cpu", 0, {}}}; }
  bool host_memory() const override { return true; }
  using QuantizationOps::supports;
  Support supports(const OpDesc&, int) const override { return Support::yes({"recording"}); }
  void quantize(const QuantizeDesc&, const void*, void*) override {}
  void dequantize(const QuantizeDesc&, const void*, float*) override {}
  void requantize(const RequantizeDesc&, const std::int32_t*, void*) override {}
  void matmul_integer(const MatmulDesc&, const void*, const void* b, std::int32_t*) override {
    last_b = b;
  }
  void matmul_dequant(const MatmulDesc&, const void*, const void* b, const float*, void*) override {
    last_b = b;
  }
  void qlinear_matmul(const MatmulDesc&, const void*, const void* b, void*) override { last_b = b; }
  QuantizationParams dynamic_quantize_linear(const DynamicQuantizeDesc&, const float*,
                                             std::uint8_t*) override {
    return QuantizationParams::per_tensor_affine(DType::uint8, 1.0f, 0);
  }
  QuantizationParams linear_forward(const LinearDesc&, const float*, const std::int8_t*,
                                    const float*, std::int8_t*, float*) override {
    return QuantizationParams::per_tensor_symmetric(DType::int8, 1.0f);
  }
  void linear_backward(const LinearDesc&, const float*, const std::int8_t*,
                       const QuantizationParams&, const std::int8_t*, float*, float*,
                       float*) override {}
};

MatmulDesc small_desc() {
  return {.m = 1,
          .n = 3,
          .k = 5,
          .a = QuantizationParams::per_tensor_affine(DType::uint8, 1.0f, 0),
          .b = QuantizationParams::per_tensor_affine(DType::int4, 1.0f, 0)};
}

TEST(OpsDefaults, CopiesStayInsideBuffers) {
  RecordingOps ops;
  auto buf = ops.allocate(8);
  const char src[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  ops.copy_to_device(*buf, 2, src, 6);
  char dst[6] = {};
  ops.copy_to_host(dst, *buf, 2, 6);
  EXPECT_EQ(std::memcmp(dst, src, 6), 0);
  EXPECT_THROW(ops.copy_to_device(*buf, 4, src, 5), Error);
  EXPECT_THROW(ops.copy_to_host(dst, *buf, 9, 0), Error);
}

TEST(OpsDefaults, PackedWeightsCopyBAndCheckTheShape) {
  RecordingOps ops;
  const auto desc = small_desc();
  std::vector<std::uint8_t> b(storage_bytes(DType::int4, 15), 0x5A);
  auto packed = ops.pack_weights(desc, b.data());
  EXPECT_EQ(packed->bytes(), 8u);
  EXPECT_EQ(packed->backend(), "recording");
  b.assign(b.size(), 0);  // the packed copy must not alias the caller's B
  std::int32_t c[3];
  const std::uint8_t a[5] = {};
  ops.matmul_integer_packed(desc, a, *packed, c);
  ASSERT_NE(ops.last_b, nullptr);
  EXPECT_EQ(static_cast<const std::uint8_t*>(ops.last_b)[0], 0x5A);

  auto other = desc;
  other.n = 4;
  EXPECT_THROW(ops.matmul_integer_packed(other, a, *packed, c), Error);
  EXPECT_FALSE(ops.set_option("threads", "2"));
}

}  // namespace
}  // namespace qforge
