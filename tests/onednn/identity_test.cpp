// Identity, availability, devices and kernel selection of the onednn plugin.
#include <gtest/gtest.h>

#include "support.h"

namespace qforge::onednn_test {
namespace {

TEST(Identity, UsableAboveTheScalarFallback) {
  ONEDNN_OR_SKIP(ops);
  EXPECT_EQ(ops.name(), "onednn");
  EXPECT_FALSE(ops.version().empty());
  const Availability a = ops.availability();
  EXPECT_TRUE(a.usable);
  EXPECT_EQ(a.score, 2);
  EXPECT_TRUE(a.reason.empty());
  EXPECT_TRUE(ops.host_memory());
  const auto devices = ops.devices();
  ASSERT_EQ(devices.size(), 1u);
  EXPECT_EQ(devices[0].kind, "cpu");
  EXPECT_FALSE(devices[0].name.empty());
  for (const char* key : {"onednn_version", "onednn_cpu_runtime", "isa_used", "threads_used",
                          "int8_matmul", "matmul_primitives", "kernels"})
    EXPECT_FALSE(device_property(ops, key).empty()) << key;
  EXPECT_EQ(device_property(ops, "onednn_version").rfind("2.", 0), 0u);
}

TEST(Identity, KernelChoice) {
  ONEDNN_OR_SKIP(ops);
  try {
    ops.set_kernel({"no_such_kernel"});
    ADD_FAILURE() << "unknown kernel accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::unsupported);
    EXPECT_NE(std::string(e.what()).find("dnnl_matmul_u8s8_s32"), std::string::npos)
        << "should list the kernels: " << e.what();
  }
  // A kernel of the op's family that cannot run this descriptor: unsupported, naming both.
  ops.set_kernel({"dnnl_reorder_dequantize"});
  const QuantizeDesc d{
      {4}, QuantizationParams::per_tensor_affine(DType::int16, 0.5f, 1), FloatType::f32};
  std::vector<std::int16_t> q(4, 3);
  std::vector<float> x(4);
  try {
    ops.dequantize(d, q.data(), x.data());
    ADD_FAILURE() << "int16 dequantize ran on the reorder kernel";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::unsupported);
    EXPECT_NE(std::string(e.what()).find("loop_dequantize"), std::string::npos) << e.what();
  }
  // A kernel of another op does not constrain this one.
  const QuantizeDesc qd{
      {4}, QuantizationParams::per_tensor_affine(DType::uint8, 0.5f, 1), FloatType::f32};
  std::vector<float> xf = {0.0f, 1.0f, 2.0f, -1.0f};
  std::vector<std::uint8_t> out(4);
  ops.quantize(qd, xf.data(), out.data());
  EXPECT_EQ(ops.last_kernel(), "loop_quantize");
  EXPECT_EQ(out, (std::vector<std::uint8_t>{1, 3, 5, 0}));
  ops.set_kernel({"dnnl_reorder_dequantize"});
  ops.dequantize(qd, out.data(), x.data());
  EXPECT_EQ(ops.last_kernel().rfind("dnnl_reorder_dequantize [", 0), 0u) << ops.last_kernel();
  ops.set_kernel({});
  ops.dequantize(qd, out.data(), x.data());
  EXPECT_EQ(ops.last_kernel(), "loop_dequantize");
}

}  // namespace
}  // namespace qforge::onednn_test
