// Loading, availability, devices, buffers and kernel selection of the cuda plugin.
#include <algorithm>

#include "qforge/error.h"
#include "support.h"

namespace qforge::cuda_test {
namespace {

// Runs everywhere, GPU or not: the plugin must load, and without a usable GPU say why and
// refuse every op with that reason instead of crashing.
TEST(CudaPluginLoad, LoadsAndReportsAvailability) {
  QuantizationOps* ops = plugin();
  ASSERT_NE(ops, nullptr) << "the cuda plugin did not load\n" << registry_report();
  EXPECT_EQ(ops->name(), "cuda");
  EXPECT_FALSE(ops->version().empty());
  EXPECT_FALSE(ops->host_memory());
  const Availability a = ops->availability();
  if (a.usable) {
    EXPECT_GT(a.score, 0);
    EXPECT_FALSE(ops->devices().empty());
    return;
  }
  EXPECT_EQ(a.score, 0);
  EXPECT_NE(a.reason.find("CUDA"), std::string::npos) << a.reason;
  const OpDesc op{OpKind::quantize,
                  QuantizeDesc{{4}, QuantizationParams::per_tensor_symmetric(DType::int8, 0.5f)}};
  const Support s = ops->supports(op);
  EXPECT_FALSE(s.supported);
  EXPECT_NE(s.reason.find(a.reason), std::string::npos) << s.reason;
  try {
    ops->allocate(16);
    ADD_FAILURE() << "allocate succeeded without a usable device";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::unavailable) << e.what();
  }
  try {
    ops->quantize(std::get<QuantizeDesc>(op.desc), nullptr, nullptr);
    ADD_FAILURE() << "quantize ran without a usable device";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::unavailable) << e.what();
  }
}

class CudaPlugin : public CudaTest {};

TEST_F(CudaPlugin, DevicesCarryTheirProperties) {
  const auto devices = ops().devices();
  ASSERT_FALSE(devices.empty());
  for (const auto& d : devices) {
    EXPECT_EQ(d.kind, "gpu");
    EXPECT_FALSE(d.name.empty());
    EXPECT_GT(d.memory_bytes, 0u);
    EXPECT_TRUE(d.properties.count("compute_capability")) << d.name;
    EXPECT_TRUE(d.properties.count("multiprocessors")) << d.name;
  }
  EXPECT_GE(ops().default_device(), 0);
  EXPECT_LT(ops().default_device(), static_cast<int>(devices.size()));
  const OpDesc op{OpKind::quantize,
                  QuantizeDesc{{8}, QuantizationParams::per_tensor_symmetric(DType::int8, 0.5f)}};
  EXPECT_TRUE(ops().supports(op, ops().default_device()).supported);
  const int bad = static_cast<int>(devices.size()) + 5;
  EXPECT_FALSE(ops().supports(op, bad).supported);
  EXPECT_THROW(ops().plan(op, PlanRequest{bad, "", {}}), Error);
}

TEST_F(CudaPlugin, BuffersRoundTripAndCheckRanges) {
  std::uniform_int_distribution<int> byte(0, 255);
  std::vector<std::uint8_t> host(1000);
  for (auto& b : host) b = static_cast<std::uint8_t>(byte(rng_));
  auto buffer = ops().allocate(host.size());
  ASSERT_NE(buffer->data(), nullptr);
  EXPECT_EQ(buffer->size(), host.size());
  EXPECT_FALSE(buffer->host_accessible());
  EXPECT_EQ(buffer->device().backend, "cuda");
  ops().copy_to_device(*buffer, 0, host.data(), host.size());
  std::vector<std::uint8_t> back(300);
  ops().copy_to_host(back.data(), *buffer, 500, back.size());
  EXPECT_TRUE(std::equal(back.begin(), back.end(), host.begin() + 500));

  try {
    ops().copy_to_host(back.data(), *buffer, 800, back.size());
    ADD_FAILURE() << "a copy past the end was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument) << e.what();
  }
  auto host_buffer = make_host_buffer(16);
  try {
    ops().copy_to_device(*host_buffer, 0, host.data(), 16);
    ADD_FAILURE() << "a host buffer was accepted as a device buffer";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument) << e.what();
  }
  EXPECT_EQ(ops().allocate(0)->size(), 0u);
}

TEST_F(CudaPlugin, FailedCudaCallsNameTheCall) {
  try {
    ops().allocate(std::size_t{1} << 60);
    ADD_FAILURE() << "a 2^60-byte allocation succeeded";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::backend);
    EXPECT_NE(std::string(e.what()).find("cudaMalloc"), std::string::npos) << e.what();
  }
  // The device stays usable afterwards.
  EXPECT_EQ(ops().allocate(64)->size(), 64u);
}

TEST_F(CudaPlugin, KernelSelectionIsChecked) {
  MatmulDesc d{512, 512, 256, QuantizationParams::per_tensor_symmetric(DType::int8, 0.1f),
               QuantizationParams::per_tensor_symmetric(DType::int8, 0.2f)};
  try {
    ops().plan({OpKind::matmul_integer, d},
               PlanRequest{ops().default_device(), "no_such_kernel", {}});
    ADD_FAILURE() << "an unknown kernel name was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::unsupported) << e.what();
  }
  const Support s = ops().supports({OpKind::matmul_integer, d});
  ASSERT_TRUE(s.supported) << s.reason;
  for (const char* k : {"s8_gemm_mma_m16n8k32_128x128", "s8_gemm_mma_m16n8k32_128x256",
                        "s8_gemm_mma_m16n8k32_32x128_splitk", "s8_gemm_mma_m16n8k32_skinny_32x32",
                        "s8_gemm_dp4a_128x128"})
    EXPECT_NE(std::find(s.kernels.begin(), s.kernels.end(), k), s.kernels.end()) << k;
  // Each listed kernel runs in a plan of it, which names it.
  DeviceArray a(ops(), 512 * 256), b(ops(), 512 * 256), c(ops(), 512 * 512 * 4);
  std::vector<std::int8_t> ones(512 * 256, 1);
  a.write(ones);
  b.write(ones);
  for (const auto& k : s.kernels) {
    EXPECT_EQ(run_plan(ops(), {OpKind::matmul_integer, d}, k, {a.data(), b.data()}, {c.data()}), k);
    const auto out = c.read_as<std::int32_t>();
    EXPECT_TRUE(std::all_of(out.begin(), out.end(), [](std::int32_t v) { return v == 256; })) << k;
  }
}

TEST_F(CudaPlugin, RefusesWhatItDoesNotImplement) {
  // Block-wise B is implemented for blocks of 16 and multiples of 32 (blockwise_test.cpp).
  MatmulDesc block{4,
                   4,
                   64,
                   QuantizationParams::per_tensor_symmetric(DType::int8, 0.1f),
                   QuantizationParams::blockwise(DType::int8, Mapping::symmetric, 48,
                                                 std::vector<float>(8, 0.1f)),
                   MatrixLayout::nk};
  const Support sb = ops().supports({OpKind::matmul_dequant, block});
  EXPECT_FALSE(sb.supported);
  EXPECT_NE(sb.reason.find("block_size 48"), std::string::npos) << sb.reason;
  MatmulDesc deep{1, 1, 200000, QuantizationParams::per_tensor_symmetric(DType::int8, 0.1f),
                  QuantizationParams::per_tensor_symmetric(DType::int8, 0.1f)};
  const Support s = ops().supports({OpKind::matmul_integer, deep});
  EXPECT_FALSE(s.supported);
  EXPECT_NE(s.reason.find("int32"), std::string::npos) << s.reason;
}

}  // namespace
}  // namespace qforge::cuda_test
