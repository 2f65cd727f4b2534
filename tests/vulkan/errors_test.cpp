// Bad arguments are reported as qforge::Error naming what was wrong and what was expected;
// nothing is silently ignored.
#include "qforge/error.h"
#include "test_data.h"
#include "vk_test_support.h"

namespace qforge::vktest {
namespace {

using ErrorsTest = VulkanTest;

template <class F>
void expect_error(F&& f, ErrorCode code, const std::string& words) {
  try {
    f();
    ADD_FAILURE() << "no error; expected one mentioning '" << words << "'";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
  }
}

TEST_F(ErrorsTest, HostPointersAreNotDeviceMemory) {
  const QuantizeDesc desc{{4}, QuantizationParams::per_tensor_affine(DType::int8, 0.5f, 0)};
  float x[4] = {1, 2, 3, 4};
  DeviceArray q(ops(), 4);
  expect_error([&] { ops().quantize(desc, x, q.ptr()); }, ErrorCode::invalid_argument,
               "not inside a live buffer");
}

TEST_F(ErrorsTest, SpansPastTheEndOfABuffer) {
  const QuantizeDesc desc{{100}, QuantizationParams::per_tensor_affine(DType::int8, 0.5f, 0)};
  DeviceArray x(ops(), 40), q(ops(), 100);
  expect_error([&] { ops().quantize(desc, x.ptr(), q.ptr()); }, ErrorCode::invalid_argument,
               "expected the range to lie inside the buffer");
  auto buf = ops().allocate(16);
  std::uint8_t bytes[32] = {};
  expect_error([&] { ops().copy_to_device(*buf, 8, bytes, 16); }, ErrorCode::invalid_argument,
               "16 bytes at offset 8");
  expect_error([&] { ops().copy_to_host(bytes, *buf, 0, 17); }, ErrorCode::invalid_argument,
               "inside the buffer");
}

TEST_F(ErrorsTest, ForeignBuffersAndMisalignedFloats) {
  auto host = make_host_buffer(16);
  std::uint8_t bytes[16] = {};
  expect_error([&] { ops().copy_to_device(*host, 0, bytes, 16); }, ErrorCode::invalid_argument,
               "allocated by the vulkan plugin");
  const QuantizeDesc desc{{4}, QuantizationParams::per_tensor_affine(DType::int8, 0.5f, 0)};
  DeviceArray x(ops(), 20, 2), q(ops(), 4);
  expect_error([&] { ops().quantize(desc, x.ptr(), q.ptr()); }, ErrorCode::invalid_argument,
               "4-byte alignment");
}

TEST_F(ErrorsTest, PackedWeightsMustFitTheCall) {
  const auto p = QuantizationParams::per_tensor_affine(DType::int8, 0.5f, 0);
  MatmulDesc d = make_matmul(2, 3, 4, p, p);
  DeviceArray a(ops(), 8), b(ops(), 12), c(ops(), 24);
  auto w = ops().pack_weights(d, b.ptr());
  EXPECT_EQ(w->backend(), "vulkan");
  MatmulDesc other = d;
  other.n = 2;
  expect_error(
      [&] { ops().matmul_integer_packed(other, a.ptr(), *w, static_cast<std::int32_t*>(c.ptr())); },
      ErrorCode::shape_mismatch, "packed weights for n=3");
}

}  // namespace
}  // namespace qforge::vktest
