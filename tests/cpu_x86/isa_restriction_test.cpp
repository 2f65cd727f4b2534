// The ISA restriction (env QFORGE_CPU_X86_ISA and set_option("isa", ...)) steers automatic
// kernel selection to each tier; a tier this CPU lacks is skipped with the reason.
#include <gtest/gtest.h>

#include <cstdlib>

#include "gemm_cases.h"
#include "qforge/hardware.h"

namespace qforge::cpu_x86_test {
namespace {

bool cpu_has_tier(const std::string& tier) {
  const CpuInfo& c = cpu_info();
  if (tier == "avx_vnni") return c.has("avx_vnni");
  if (tier == "avx512_vnni")
    return c.has("avx512f") && c.has("avx512bw") && c.has("avx512vl") && c.has("avx512vnni");
  if (tier == "amx_int8")
    return c.has("amx_int8") && c.has("amx_tile") && cpu_has_tier("avx512_vnni");
  return true;
}

struct Expect {
  std::string isa;    // restriction
  std::string needs;  // tier the CPU must have ("" = none beyond AVX2)
  std::int64_t m;
  bool no_min;         // weights without -128
  std::string kernel;  // what automatic selection must pick
};

class CpuX86Restriction : public ::testing::TestWithParam<Expect> {};

TEST_P(CpuX86Restriction, SelectsTheTiersKernelAndStaysExact) {
  const Expect& e = GetParam();
  auto l = load_plugin();
  SKIP_UNLESS_USABLE(l);
  if (!e.needs.empty() && !cpu_has_tier(e.needs)) GTEST_SKIP() << "this CPU lacks " << e.needs;
  if (!e.needs.empty() &&
      l.ops->devices()[0].properties.at("isa_compiled").find(e.needs) == std::string::npos)
    GTEST_SKIP() << "this build left out " << e.needs;
  SCOPED_TRACE(seed_text());
  Rng rng = test_rng();
  l.ops->set_option("isa", e.isa);
  for (int i = 0; i < 4; ++i) {
    MatmulProblem p = random_problem(rng, e.m, 40, 70, {false, e.no_min, true});
    if (!e.no_min) {  // make sure -128 is there in the s8 domain
      p.b[0] = p.desc.b.dtype() == DType::uint8 ? 0x00 : 0x80;
      if (p.desc.b.dtype() == DType::int4 || p.desc.b.dtype() == DType::uint4) continue;
    }
    // The per-call op chooses for B's values on each call; a plan with B fixed makes the same
    // choice once and names it.
    std::string ran;
    ASSERT_EQ(check_matmul(*l.ops, OpKind::matmul_dequant, p), "");
    ASSERT_EQ(check_matmul(*l.ops, OpKind::matmul_dequant, p,
                           {.kernel = "", .fix_b = true, .packed = nullptr, .ran = &ran}),
              "");
    EXPECT_EQ(ran, e.kernel) << p.text();
    ASSERT_EQ(check_matmul(*l.ops, OpKind::qlinear_matmul, p), "");
  }
}

INSTANTIATE_TEST_SUITE_P(
    Tiers, CpuX86Restriction,
    ::testing::Values(
        Expect{"avx2", "", 64, true, "q8_gemm_4x16c4__avx2_maddubs"},
        Expect{"avx2", "", 64, false, "q8_gemm_2x16c4__avx2_maddwd"},
        Expect{"avx2", "", 3, true, "q8_gemv_4x16c4__avx2_maddubs"},
        Expect{"avx2", "", 3, false, "q8_gemv_2x16c4__avx2_maddwd"},
        Expect{"avx2,avx_vnni", "avx_vnni", 64, false, "q8_gemm_6x16c4__avxvnni"},
        Expect{"avx_vnni", "avx_vnni", 9, false, "q8_gemv_6x16c4__avxvnni"},
        Expect{"avx2,avx512_vnni", "avx512_vnni", 64, false, "q8_gemm_6x64c4__avx512vnni"},
        Expect{"avx512_vnni,avx_vnni", "avx512_vnni", 16, false, "q8_gemv_16x16c4__avx512vnni"},
        Expect{"all", "amx_int8", 64, false, "q8_gemm_32x32c4__amx"},
        Expect{"all", "amx_int8", 9, false, "q8_gemv_16x32c4__amx"},
        Expect{"all", "avx512_vnni", 4, false, "q8_gemv_16x16c4__avx512vnni"}),
    [](const auto& info) {
      std::string s = info.param.kernel + "_m" + std::to_string(info.param.m) +
                      (info.param.no_min ? "" : "_min");
      return s;
    });

// The environment variable is read when the plugin object is made.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old, had_ = true;
    ::setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (had_) ::setenv(name_, old_.c_str(), 1);
    else ::unsetenv(name_);
  }

 private:
  const char* name_;
  std::string old_;
  bool had_ = false;
};

TEST(CpuX86RestrictionEnv, EnvironmentRestrictsNewInstances) {
  ScopedEnv env("QFORGE_CPU_X86_ISA", "avx2");
  auto l = load_plugin();
  SKIP_UNLESS_USABLE(l);
  EXPECT_EQ(l.ops->devices()[0].properties.at("isa_allowed"), "avx2");
  EXPECT_EQ(l.ops->devices()[0].properties.at("isa_used"), "avx2");
  SCOPED_TRACE(seed_text());
  Rng rng = test_rng();
  const MatmulProblem p = random_problem(rng, 50, 20, 30, {false, false, false});
  ASSERT_EQ(check_matmul(*l.ops, OpKind::matmul_integer, p), "");
  std::string ran;
  ASSERT_EQ(check_matmul(*l.ops, OpKind::matmul_integer, p,
                         {.kernel = "", .fix_b = true, .packed = nullptr, .ran = &ran}),
            "");
  EXPECT_NE(ran.find("__avx2"), std::string::npos) << ran;
}

TEST(CpuX86RestrictionEnv, UnknownNameFailsCreationWithTheName) {
  ScopedEnv env("QFORGE_CPU_X86_ISA", "avx2,avx1024");
  auto l = load_plugin();
  EXPECT_EQ(l.ops, nullptr);
  EXPECT_NE(l.why_missing.find("avx1024"), std::string::npos) << l.why_missing;
}

TEST(CpuX86ThreadsEnv, EnvironmentSetsTheThreadCountOfNewInstances) {
  ScopedEnv env("QFORGE_CPU_X86_THREADS", "2");
  auto l = load_plugin();
  SKIP_UNLESS_USABLE(l);
  EXPECT_EQ(l.ops->devices()[0].properties.at("threads_used"), "2");
}

TEST(CpuX86ThreadsEnv, BadCountFailsCreationWithTheVariable) {
  for (const char* bad : {"-1", "many", "4096", ""}) {
    ScopedEnv env("QFORGE_CPU_X86_THREADS", bad);
    auto l = load_plugin();
    EXPECT_EQ(l.ops, nullptr) << bad;
    EXPECT_NE(l.why_missing.find("QFORGE_CPU_X86_THREADS"), std::string::npos) << l.why_missing;
  }
}

TEST(CpuX86PollEnv, PollTimesFromTheEnvironmentStillRunMatmuls) {
  ScopedEnv spin("QFORGE_CPU_X86_SPIN_US", "0");
  ScopedEnv yield("QFORGE_CPU_X86_YIELD_US", "300");
  auto l = load_plugin();
  SKIP_UNLESS_USABLE(l);
  // Large enough to run on the pool's workers, several calls so they go idle in between.
  SCOPED_TRACE(seed_text());
  Rng rng = test_rng();
  for (int i = 0; i < 3; ++i) {
    const MatmulProblem p = random_problem(rng, 300, 96, 160, {false, false, false});
    ASSERT_EQ(check_matmul(*l.ops, OpKind::matmul_dequant, p), "");
  }
}

TEST(CpuX86PollEnv, BadTimeFailsCreationWithTheVariable) {
  for (const char* name : {"QFORGE_CPU_X86_SPIN_US", "QFORGE_CPU_X86_YIELD_US"})
    for (const char* bad : {"-1", "soon", "2000000", "", "5us"}) {
      ScopedEnv env(name, bad);
      auto l = load_plugin();
      EXPECT_EQ(l.ops, nullptr) << name << "=" << bad;
      EXPECT_NE(l.why_missing.find(name), std::string::npos) << l.why_missing;
    }
}

}  // namespace
}  // namespace qforge::cpu_x86_test
