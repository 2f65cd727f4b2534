// Per-op capability follows the device's features; a plan runs the GEMM kernel it names;
// descriptors the backend does not run are refused with a reason.
#include "qforge/error.h"
#include "qforge/reference.h"
#include "test_data.h"
#include "vk_test_support.h"

namespace qforge::vktest {
namespace {

using KernelSelection = VulkanTest;

MatmulDesc small_matmul() {
  return make_matmul(4, 2, 3, QuantizationParams::per_tensor_affine(DType::uint8, 0.5f, 12),
                     QuantizationParams::per_tensor_affine(DType::uint8, 0.25f, 0));
}

bool lists(const Support& s, const std::string& kernel) {
  return std::find(s.kernels.begin(), s.kernels.end(), kernel) != s.kernels.end();
}

TEST_F(KernelSelection, GemmKernelsFollowTheDeviceFeatures) {
  const Support s = ops().supports({OpKind::matmul_integer, small_matmul()});
  ASSERT_TRUE(s.supported) << s.reason;
  EXPECT_TRUE(lists(s, "vk_gemm_q8_s32acc_plain_64x64"));
  EXPECT_EQ(lists(s, "vk_gemm_q8_s32acc_dot4x8_64x64"),
            device_property(ops(), "integer_dot_product") == "yes");
  const std::string shapes = device_property(ops(), "cooperative_matrix_s8_shapes");
  const bool coop = device_property(ops(), "cooperative_matrix_nv") == "yes" &&
                    device_property(ops(), "subgroup_size") == "32";
  const bool s8_16x16x32 = coop && shapes.find("16x16x32") != std::string::npos;
  const auto shared = std::stoul(device_property(ops(), "max_shared_memory_bytes"));
  EXPECT_EQ(lists(s, "vk_gemm_q8_s32acc_coopmat_nv16x16x32_128x128"),
            s8_16x16x32 && shared >= 36864);
  // 64 x 64 per subgroup, K in steps of 64 bytes: 128 + 128 rows of 80 bytes.
  EXPECT_EQ(lists(s, "vk_gemm_q8_s32acc_coopmat_nv16x16x32_128x128_w4_k64_direct"),
            s8_16x16x32 && shared >= 20480);
  for (const auto& k : s.kernels) {
    if (k.find("coopmat") != std::string::npos) {
      EXPECT_TRUE(coop) << k << " listed on a device without s8 cooperative matrices";
    }
  }
  EXPECT_EQ(device_property(ops(), "gemm_kernels").find(s.kernels.front()), 0u)
      << "the best kernel comes first in both lists";
}

TEST_F(KernelSelection, PlansRunTheKernelTheyName) {
  const OpDesc op{OpKind::matmul_integer, small_matmul()};
  const Support all = ops().supports(op);
  ASSERT_TRUE(all.supported) << all.reason;
  const std::vector<std::int8_t> a_host = {11, 7, 3, 10, 6, 2, 9, 5, 1, 8, 4, 0};
  const std::vector<std::int8_t> b_host = {1, 4, 2, 5, 3, 6};
  for (const auto& kernel : all.kernels) {
    SCOPED_TRACE(kernel);
    const auto plan = ops().plan(op, PlanRequest{ops().default_device(), kernel, {}});
    EXPECT_EQ(plan->kernel(), kernel);
    DeviceArray a(ops(), a_host), b(ops(), b_host), c(ops(), 8 * 4);
    plan->run({a.ptr(), b.ptr()}, {c.ptr()});
    // DESIGN.md's MatMulInteger example.
    EXPECT_EQ(c.read<std::int32_t>(),
              (std::vector<std::int32_t>{-38, -83, -44, -98, -50, -113, -56, -128}));
  }
  EXPECT_EQ(ops().supports(op).kernels, all.kernels);
}

TEST_F(KernelSelection, UnknownOrUnavailableKernelsAreRefused) {
  const OpDesc op{OpKind::matmul_integer, small_matmul()};
  try {
    ops().plan(op, PlanRequest{ops().default_device(), "vk_gemm_nonexistent", {}});
    ADD_FAILURE() << "an unknown kernel was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::unsupported);
    EXPECT_NE(std::string(e.what()).find("vk_gemm_q8_s32acc_plain_64x64"), std::string::npos)
        << "the message lists the known kernels: " << e.what();
  }
  if (device_property(ops(), "cooperative_matrix_nv") == "yes")
    GTEST_SKIP() << "device has coopmat";
  try {
    ops().plan(op, PlanRequest{
                       ops().default_device(), "vk_gemm_q8_s32acc_coopmat_nv16x16x32_128x128", {}});
    ADD_FAILURE() << "a cooperative-matrix kernel was accepted on a device without it";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::unsupported);
    EXPECT_NE(std::string(e.what()).find("cooperative_matrix"), std::string::npos) << e.what();
  }
}

TEST_F(KernelSelection, RefusesWhatItDoesNotRunWithAReason) {
  auto refused = [&](const OpDesc& op, const std::string& words) {
    const Support s = ops().supports(op);
    EXPECT_FALSE(s.supported) << describe(op);
    EXPECT_NE(s.reason.find(words), std::string::npos) << s.reason;
  };
  QuantizeDesc q{{8}, QuantizationParams::per_tensor_affine(DType::int4, 0.5f, 0)};
  refused({OpKind::quantize, q}, "int4");
  q.params = QuantizationParams::logarithmic(DType::int8, 1.0f);
  refused({OpKind::quantize, q}, "logarithmic");
  q.params = QuantizationParams::per_tensor_affine(DType::int8, 0.5f, 0);
  q.float_type = FloatType::f16;
  refused({OpKind::quantize, q}, "float32");
  refused({OpKind::dynamic_quantize_linear, DynamicQuantizeDesc{{4}}}, "not implemented");

  MatmulDesc d = small_matmul();
  d.b_layout = MatrixLayout::nk;
  d.b = QuantizationParams::blockwise(DType::int8, Mapping::symmetric, 2, {0.5f, 0.5f, 0.5f, 0.5f});
  refused({OpKind::matmul_dequant, d}, "block-wise");
  d = small_matmul();
  d.k = reference::int32_safe_k(d) + 1;
  refused({OpKind::matmul_integer, d}, "int32_safe_k");
  d = small_matmul();
  d.out_type = FloatType::bf16;
  refused({OpKind::matmul_dequant, d}, "bfloat16");
  d = small_matmul();
  refused({OpKind::qlinear_matmul, d}, "desc.y");
  // And an op called anyway throws unsupported with the same reason.
  try {
    DeviceArray x(ops(), 64), y(ops(), 64);
    ops().dequantize({{8}, QuantizationParams::logarithmic(DType::int8, 1.0f)}, x.ptr(),
                     static_cast<float*>(y.ptr()));
    ADD_FAILURE() << "an unsupported descriptor ran";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::unsupported) << e.what();
    EXPECT_NE(std::string(e.what()).find("logarithmic"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace qforge::vktest
