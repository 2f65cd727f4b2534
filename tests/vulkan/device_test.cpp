// Device listing, the default device (QFORGE_VULKAN_DEVICE), capability and plans per device,
// and the feature properties every device reports.
#include <cstdlib>
#include <filesystem>

#include "qforge/error.h"
#include "vk_test_support.h"

namespace qforge::vktest {
namespace {

using DeviceTest = VulkanTest;

TEST_F(DeviceTest, ListsEveryDeviceWithItsFeatures) {
  const auto devs = ops().devices();
  ASSERT_FALSE(devs.empty());
  int defaults = 0;
  for (std::size_t i = 0; i < devs.size(); ++i) {
    const auto& p = devs[i].properties;
    SCOPED_TRACE("device " + std::to_string(i) + ": " + devs[i].name);
    EXPECT_FALSE(devs[i].name.empty());
    EXPECT_TRUE(devs[i].kind == "gpu" || devs[i].kind == "cpu");
    for (const char* key :
         {"index", "vulkan_api", "shader_int8", "storage_buffer_8bit", "integer_dot_product",
          "integer_dot_product_4x8_packed_accelerated", "cooperative_matrix_nv",
          "cooperative_matrix_s8_shapes", "subgroup_size", "max_shared_memory_bytes",
          "max_storage_buffer_range_bytes", "gemm_kernels", "default"})
      EXPECT_TRUE(p.count(key)) << "missing property " << key;
    EXPECT_EQ(p.at("index"), std::to_string(i));
    if (p.at("default") == "yes") {
      ++defaults;
      EXPECT_EQ(static_cast<int>(i), ops().default_device());
    }
    // Shapes are listed exactly when the NV extension is usable.
    EXPECT_EQ(p.at("cooperative_matrix_nv") == "yes",
              p.at("cooperative_matrix_s8_shapes") != "none");
    EXPECT_NE(p.at("gemm_kernels").find("vk_gemm_q8_s32acc_plain_64x64"), std::string::npos);
  }
  EXPECT_EQ(defaults, 1);
}

// Mesa's lavapipe, the device of CI: its limits are what the splitting tests are built around.
TEST_F(DeviceTest, LavapipeReportsItsKnownLimits) {
  const auto devs = ops().devices();
  const auto& d = devs[static_cast<std::size_t>(ops().default_device())];
  if (d.name.find("llvmpipe") == std::string::npos) GTEST_SKIP() << "not lavapipe: " << d.name;
  EXPECT_EQ(d.kind, "cpu");
  EXPECT_EQ(d.properties.at("shader_int8"), "yes");
  EXPECT_EQ(d.properties.at("storage_buffer_8bit"), "yes");
  EXPECT_EQ(d.properties.at("cooperative_matrix_nv"), "no");
  EXPECT_EQ(d.properties.at("max_shared_memory_bytes"), "32768");
  EXPECT_EQ(d.properties.at("max_storage_buffer_range_bytes"), "134217728");
}

OpDesc small_quantize() {
  return {OpKind::quantize,
          QuantizeDesc{{16}, QuantizationParams::per_tensor_affine(DType::int8, 0.5f, 1)}};
}

TEST_F(DeviceTest, SupportsAndPlansRejectIndicesOutOfRange) {
  const int count = static_cast<int>(ops().devices().size());
  const OpDesc op = small_quantize();
  EXPECT_TRUE(ops().supports(op, ops().default_device()).supported);
  for (const int bad : {-1, count}) {
    const Support s = ops().supports(op, bad);
    EXPECT_FALSE(s.supported);
    EXPECT_NE(s.reason.find("device " + std::to_string(bad)), std::string::npos) << s.reason;
    try {
      ops().plan(op, PlanRequest{bad, "", {}});
      ADD_FAILURE() << "a plan for device " << bad << " was made";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::invalid_argument) << e.what();
    }
  }
}

// A plan of another device than the default one runs there, and refuses buffers the per-call
// ops allocated on the default device.
TEST_F(DeviceTest, PlansOfAnotherDeviceKeepBuffersApart) {
  const int count = static_cast<int>(ops().devices().size());
  const int current = ops().default_device();
  int other = -1;
  for (int i = 0; i < count; ++i)
    if (i != current && ops().supports(small_quantize(), i).supported) other = i;
  if (other < 0) GTEST_SKIP() << "only one usable Vulkan device here";
  const auto plan = ops().plan(small_quantize(), PlanRequest{other, "", {}});
  EXPECT_EQ(plan->device(), other);
  auto x = ops().allocate(16 * sizeof(float));
  auto q = ops().allocate(16);
  try {
    plan->run({x->data()}, {q->data()});
    ADD_FAILURE() << "buffers of device " << current << " were accepted by a plan of device "
                  << other;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument) << e.what();
  }
}

// QFORGE_VULKAN_DEVICE is read when the plugin object is made: load a second copy of the
// plugin in a fresh registry with the variable set.
class EnvironmentSelection : public VulkanTest {
 protected:
  std::unique_ptr<PluginRegistry> load_with(const char* value) {
    setenv("QFORGE_VULKAN_DEVICE", value, 1);
    auto reg = std::make_unique<PluginRegistry>();
    for (const auto& p : registry().plugins())
      if (p.name == "vulkan") reg->load_file(p.path);
    unsetenv("QFORGE_VULKAN_DEVICE");
    return reg;
  }
};

TEST_F(EnvironmentSelection, PicksTheIndexGiven) {
  auto reg = load_with("0");
  QuantizationOps* ops2 = reg->find("vulkan");
  ASSERT_NE(ops2, nullptr);
  setenv("QFORGE_VULKAN_DEVICE", "0", 1);  // read when the deferred plugin is first asked
  EXPECT_EQ(ops2->default_device(), 0);
  unsetenv("QFORGE_VULKAN_DEVICE");
}

TEST_F(EnvironmentSelection, ABadIndexLeavesThePluginLoadedAndSaysWhy) {
  auto reg = load_with("999");
  QuantizationOps* ops2 = reg->find("vulkan");
  ASSERT_NE(ops2, nullptr) << "a bad QFORGE_VULKAN_DEVICE must not stop the plugin loading";
  // The plugin is deferred (docs/PLUGINS.md): it reads the variable when first asked.
  setenv("QFORGE_VULKAN_DEVICE", "999", 1);
  const Availability a = ops2->availability();
  unsetenv("QFORGE_VULKAN_DEVICE");
  EXPECT_FALSE(a.usable);
  EXPECT_NE(a.reason.find("QFORGE_VULKAN_DEVICE"), std::string::npos) << a.reason;
  EXPECT_NE(a.reason.find("999"), std::string::npos) << a.reason;
}

TEST_F(DeviceTest, ValidationIsOnWhereTheLayerIsInstalled) {
  const char* env = std::getenv("QFORGE_VULKAN_VALIDATION");
  const bool wanted = env && std::string(env) != "0";
  bool installed = false;
  for (const char* dir : {"/usr/share/vulkan/explicit_layer.d", "/etc/vulkan/explicit_layer.d",
                          "/usr/local/share/vulkan/explicit_layer.d"})
    installed |= std::filesystem::exists(std::string(dir) + "/VkLayer_khronos_validation.json");
  if (!wanted || !installed)
    GTEST_SKIP() << "validation layer " << (installed ? "not requested" : "not installed");
  EXPECT_EQ(device_property(ops(), "validation"), "on");
}

}  // namespace
}  // namespace qforge::vktest
