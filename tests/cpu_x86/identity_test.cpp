// Identity, availability, devices and options of cpu_x86.
#include <gtest/gtest.h>

#include "qforge/error.h"
#include "qforge/hardware.h"
#include "support.h"

namespace qforge::cpu_x86_test {
namespace {

TEST(CpuX86Identity, AvailabilityFollowsAvx2) {
  auto l = load_plugin();
  if (!l.ops) GTEST_SKIP() << "cpu_x86 did not load: " << l.why_missing;
  const Availability a = l.ops->availability();
  const bool avx2 = cpu_info().has("avx2") && cpu_info().has("fma");
  EXPECT_EQ(a.usable, avx2);
  if (avx2) {
    EXPECT_GT(a.score, 1) << "ranks above cpu_scalar";
  } else {
    EXPECT_EQ(a.score, 0);
    EXPECT_NE(a.reason.find("AVX2"), std::string::npos) << a.reason;
  }
  EXPECT_EQ(l.ops->name(), "cpu_x86");
  EXPECT_TRUE(l.ops->host_memory());
}

TEST(CpuX86Identity, DeviceReportsIsaAndThreads) {
  auto l = load_plugin();
  SKIP_UNLESS_USABLE(l);
  const auto devices = l.ops->devices();
  ASSERT_EQ(devices.size(), 1u);
  const auto& p = devices[0].properties;
  ASSERT_TRUE(p.count("isa_used"));
  EXPECT_NE(p.at("isa_used").find("avx2"), std::string::npos);
  ASSERT_TRUE(p.count("threads_used"));
  EXPECT_GE(std::stoi(p.at("threads_used")), 1);
  // AVX-512 VNNI is reported exactly when cpu_info says the CPU has it (the build enables it).
  const CpuInfo& cpu = cpu_info();
  const bool vnni =
      cpu.has("avx512f") && cpu.has("avx512bw") && cpu.has("avx512vl") && cpu.has("avx512vnni");
  EXPECT_EQ(p.at("isa_detected").find("avx512_vnni") != std::string::npos, vnni)
      << p.at("isa_detected");
}

TEST(CpuX86Options, ThreadsAcceptsCountsAndRejectsGarbage) {
  auto l = load_plugin();
  SKIP_UNLESS_USABLE(l);
  QuantizationOps& ops = *l.ops;
  EXPECT_TRUE(ops.set_option("threads", "3"));
  EXPECT_EQ(ops.devices()[0].properties.at("threads_used"), "3");
  EXPECT_TRUE(ops.set_option("threads", "default"));
  EXPECT_TRUE(ops.set_option("threads", "1"));
  EXPECT_EQ(ops.devices()[0].properties.at("threads_used"), "1");
  for (const char* bad : {"", "-1", "two", "4x", "100000"}) {
    try {
      ops.set_option("threads", bad);
      ADD_FAILURE() << "threads = \"" << bad << "\" was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
      EXPECT_NE(std::string(e.what()).find("threads"), std::string::npos) << e.what();
    }
  }
  EXPECT_FALSE(ops.set_option("no_such_option", "1"));
}

TEST(CpuX86Options, GemvPrefetchTakesBytesInRange) {
  auto l = load_plugin();
  SKIP_UNLESS_USABLE(l);
  for (const char* good : {"0", "4096", "65536", "default"})
    EXPECT_TRUE(l.ops->set_option("gemv_prefetch", good));
  for (const char* bad : {"", "-64", "65537", "4k", "lots"}) {
    try {
      l.ops->set_option("gemv_prefetch", bad);
      ADD_FAILURE() << "gemv_prefetch = \"" << bad << "\" was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
      EXPECT_NE(std::string(e.what()).find("[0, 65536]"), std::string::npos) << e.what();
    }
  }
}

TEST(CpuX86Options, IsaRejectsUnknownNames) {
  auto l = load_plugin();
  SKIP_UNLESS_USABLE(l);
  try {
    l.ops->set_option("isa", "avx2,sse9");
    ADD_FAILURE() << "an unknown ISA was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("sse9"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(l.ops->set_option("isa", "avx2"));
  EXPECT_EQ(l.ops->devices()[0].properties.at("isa_used"), "avx2");
  EXPECT_TRUE(l.ops->set_option("isa", "all"));
}

TEST(CpuX86Options, PlansCheckKernelNames) {
  auto l = load_plugin();
  SKIP_UNLESS_USABLE(l);
  const OpDesc op{OpKind::matmul_integer,
                  MatmulDesc{.m = 32,
                             .n = 8,
                             .k = 16,
                             .a = QuantizationParams::per_tensor_affine(DType::uint8, 0.5f, 3),
                             .b = QuantizationParams::per_tensor_symmetric(DType::int8, 0.25f)}};
  try {
    l.ops->plan(op, PlanRequest{0, "no_such_kernel", {}});
    ADD_FAILURE() << "an unknown kernel was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::unsupported);
    EXPECT_NE(std::string(e.what()).find("q8_gemm_2x16c4__avx2_maddwd"), std::string::npos)
        << "the message lists the kernels: " << e.what();
  }
  l.ops->set_option("isa", "avx2");
  EXPECT_EQ(l.ops->devices()[0].properties.at("kernels").find("avx512"), std::string::npos);
  try {
    l.ops->plan(op, PlanRequest{0, "q8_gemm_6x64c4__avx512vnni", {}});
    ADD_FAILURE() << "a kernel outside the ISA restriction was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::unsupported);
  }
  EXPECT_EQ(l.ops->plan(op, PlanRequest{0, "q8_gemm_2x16c4__avx2_maddwd", {}})->kernel(),
            "q8_gemm_2x16c4__avx2_maddwd");
  l.ops->set_option("isa", "all");
}

}  // namespace
}  // namespace qforge::cpu_x86_test
