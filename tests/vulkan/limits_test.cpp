// Work larger than a device limit is split, never refused. The plugin's test knobs
// (set_option max_storage_buffer_range / max_workgroup_count) shrink the limits it plans with,
// so small tensors take the same paths that 128 MiB bindings take on lavapipe; results must be
// exact and the op must have used several dispatches.
#include "qforge/reference.h"
#include "test_data.h"
#include "vk_test_support.h"

namespace qforge::vktest {
namespace {

class LimitsTest : public VulkanTest {
 protected:
  void SetUp() override {
    VulkanTest::SetUp();
    if (IsSkipped()) return;
    ASSERT_TRUE(ops().set_option("max_storage_buffer_range", "4096"));
    ASSERT_TRUE(ops().set_option("max_workgroup_count", "3"));
  }
  int dispatches() { return std::stoi(device_property(ops(), "last_op_dispatches")); }
};

TEST_F(LimitsTest, QuantizeAndDequantizeSplit) {
  const Shape shape{5, 4001};  // 20005 floats: 80 KB, many 4 KiB windows
  std::vector<float> scales(5 * ((4001 + 31) / 32));
  for (auto& s : scales) s = random_scale(rng());
  std::vector<std::int32_t> zps(scales.size(), 3);
  const QuantizeDesc desc{
      shape, QuantizationParams::blockwise(DType::int8, Mapping::affine, 32, scales, zps)};
  std::vector<float> per_element(20005);
  for (std::size_t i = 0; i < per_element.size(); ++i)
    per_element[i] =
        desc.params.scale(desc.params.param_index(shape, static_cast<std::int64_t>(i)));
  const auto x = tricky_values(rng(), per_element.size(), per_element, 200.0f);
  std::vector<std::int8_t> expected(x.size());
  reference::quantize(desc, x.data(), expected.data());
  DeviceArray dx(ops(), x), dq(ops(), x.size(), 1);
  ops().quantize(desc, dx.ptr(), dq.ptr());
  EXPECT_GT(dispatches(), 10);
  EXPECT_EQ(dq.read<std::int8_t>(), expected);

  std::vector<float> back(x.size());
  reference::dequantize(desc, expected.data(), back.data());
  DeviceArray dcodes(ops(), expected, 3), dback(ops(), x.size() * 4);
  ops().dequantize(desc, dcodes.ptr(), static_cast<float*>(dback.ptr()));
  EXPECT_GT(dispatches(), 10);
  EXPECT_EQ(dback.read<float>(), back);
}

TEST_F(LimitsTest, RequantizeSplits) {
  const RequantizeDesc desc{{9000}, {0.0123f}, -1, DType::uint8, 77, RequantMode::fixed_point};
  std::vector<std::int32_t> c(9000);
  std::uniform_int_distribution<std::int32_t> v(-100000, 100000);
  for (auto& x : c) x = v(rng());
  std::vector<std::uint8_t> expected(c.size());
  reference::requantize(desc, c.data(), expected.data());
  DeviceArray dc(ops(), c), dy(ops(), c.size(), 2);
  ops().requantize(desc, static_cast<const std::int32_t*>(dc.ptr()), dy.ptr());
  EXPECT_GT(dispatches(), 5);
  EXPECT_EQ(dy.read<std::uint8_t>(), expected);
}

TEST_F(LimitsTest, GemmSplitsRowsColumnsAndPacking) {
  for (MatrixLayout layout : {MatrixLayout::kn, MatrixLayout::nk}) {
    // kn: B is 27 KB, so packing it splits along K and N.
    MatmulDesc d =
        make_matmul(70, 90, 300, QuantizationParams::per_tensor_affine(DType::uint8, 0.01f, 131),
                    QuantizationParams(
                        DType::int8, Scheme::per_channel_affine(layout == MatrixLayout::kn ? 1 : 0),
                        std::vector<float>(90, 0.02f), std::vector<std::int32_t>(90, -5)),
                    layout);
    const Support all = ops().supports({OpKind::matmul_integer, d});
    ASSERT_TRUE(all.supported) << all.reason;
    std::uniform_int_distribution<int> byte(0, 255);
    std::vector<std::uint8_t> a(70 * 300), b(90 * 300);
    for (auto& x : a) x = static_cast<std::uint8_t>(byte(rng()));
    for (auto& x : b) x = static_cast<std::uint8_t>(byte(rng()));
    std::vector<std::int32_t> expected(70 * 90);
    reference::matmul_integer(d, a.data(), b.data(), expected.data());
    {
      // The per-call op (the backend's own kernel) reports its dispatch count.
      SCOPED_TRACE(std::string("per call") + (layout == MatrixLayout::kn ? " kn" : " nk"));
      DeviceArray da(ops(), a, 1), db(ops(), b, 2), dc(ops(), expected.size() * 4);
      ops().matmul_integer(d, da.ptr(), db.ptr(), static_cast<std::int32_t*>(dc.ptr()));
      EXPECT_GT(dispatches(), 20);
      EXPECT_EQ(dc.read<std::int32_t>(), expected);
    }
    // Plans run on the device's context, whose limits the options lowered too.
    for (const auto& kernel : all.kernels) {
      SCOPED_TRACE(kernel + (layout == MatrixLayout::kn ? " kn" : " nk"));
      DeviceArray da(ops(), a, 1), db(ops(), b, 2), dc(ops(), expected.size() * 4);
      ops()
          .plan({OpKind::matmul_integer, d}, PlanRequest{ops().default_device(), kernel, {}})
          ->run({da.ptr(), db.ptr()}, {dc.ptr()});
      EXPECT_EQ(dc.read<std::int32_t>(), expected);
    }
  }
}

}  // namespace
}  // namespace qforge::vktest
