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
  const QuantizeDesc qd{
      {4}, QuantizationParams::per_tensor_affine(DType::uint8, 0.5f, 1), FloatType::f32};
  try {
    ops.plan({OpKind::dequantize, qd}, PlanRequest{0, "no_such_kernel", {}});
    ADD_FAILURE() << "unknown kernel accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::unsupported);
    EXPECT_NE(std::string(e.what()).find("no_such_kernel"), std::string::npos) << e.what();
  }
  // A kernel of the op's family that cannot run this descriptor: unsupported, naming both.
  const QuantizeDesc d{
      {4}, QuantizationParams::per_tensor_affine(DType::int16, 0.5f, 1), FloatType::f32};
  try {
    ops.plan({OpKind::dequantize, d}, PlanRequest{0, "dnnl_reorder_dequantize", {}});
    ADD_FAILURE() << "int16 dequantize planned on the reorder kernel";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::unsupported);
    EXPECT_NE(std::string(e.what()).find("loop_dequantize"), std::string::npos) << e.what();
  }
  // The per-call ops run the backend's own choice; a plan runs the kernel it names.
  std::vector<float> xf = {0.0f, 1.0f, 2.0f, -1.0f}, x(4), x_reorder(4);
  std::vector<std::uint8_t> out(4);
  ops.quantize(qd, xf.data(), out.data());
  EXPECT_EQ(ops.plan({OpKind::quantize, qd}, PlanRequest{})->kernel(), "loop_quantize");
  EXPECT_EQ(out, (std::vector<std::uint8_t>{1, 3, 5, 0}));
  const auto reorder =
      ops.plan({OpKind::dequantize, qd}, PlanRequest{0, "dnnl_reorder_dequantize", {}});
  EXPECT_EQ(reorder->kernel(), "dnnl_reorder_dequantize");
  reorder->run({out.data()}, {x_reorder.data()});
  ops.dequantize(qd, out.data(), x.data());
  EXPECT_EQ(ops.plan({OpKind::dequantize, qd}, PlanRequest{})->kernel(), "loop_dequantize");
  EXPECT_EQ(x, x_reorder);
  EXPECT_EQ(x, (std::vector<float>{0.0f, 1.0f, 2.0f, -0.5f}));
}

}  // namespace
}  // namespace qforge::onednn_test
