// qforge::cpu_info(): the fields a kernel selector relies on, and agreement with what the Linux
// kernel itself reports in /proc/cpuinfo (which only lists features the OS has enabled).
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "qforge/hardware.h"

namespace {

const std::vector<std::string> kDocumentedOrder = {
    "sse4_1",   "avx2",       "fma",        "f16c",     "avx512f",  "avx512bw",
    "avx512vl", "avx512vnni", "avx512bf16", "avx_vnni", "amx_int8", "amx_bf16",
    "amx_tile", "neon",       "neon_dot",   "i8mm"};

bool is_x86() {
#if defined(__x86_64__) || defined(__i386__)
  return true;
#else
  return false;
#endif
}

// The "flags" line of the first processor in /proc/cpuinfo; empty when unavailable.
std::set<std::string> proc_cpuinfo_flags() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    std::istringstream words(line.substr(line.find(':') + 1));
    std::set<std::string> flags;
    for (std::string w; words >> w;) flags.insert(w);
    return flags;
  }
  return {};
}

TEST(CpuInfo, CountsArePositiveAndConsistent) {
  const auto& cpu = qforge::cpu_info();
  EXPECT_GT(cpu.packages, 0);
  EXPECT_GT(cpu.cores, 0);
  EXPECT_GE(cpu.logical_processors, cpu.cores);
  EXPECT_GE(cpu.cores, cpu.packages);
  EXPECT_FALSE(cpu.architecture.empty());
  EXPECT_NE(cpu.vendor, "");
}

TEST(CpuInfo, ModelAndVendorKnownOnX86) {
  if (!is_x86()) GTEST_SKIP() << "model strings are only guaranteed by CPUID on x86";
  const auto& cpu = qforge::cpu_info();
  EXPECT_FALSE(cpu.model.empty());
  EXPECT_NE(cpu.vendor, "unknown");
  EXPECT_TRUE(cpu.architecture == "x86_64" || cpu.architecture == "x86") << cpu.architecture;
}

TEST(CpuInfo, FeaturesListEveryNameInTheDocumentedOrder) {
  const auto& cpu = qforge::cpu_info();
  std::vector<std::string> names;
  for (const auto& [name, on] : cpu.features) names.push_back(name);
  EXPECT_EQ(names, kDocumentedOrder);
}

TEST(CpuInfo, HasAgreesWithTheFeatureList) {
  const auto& cpu = qforge::cpu_info();
  for (const auto& [name, on] : cpu.features) EXPECT_EQ(cpu.has(name), on) << name;
  EXPECT_FALSE(cpu.has("no_such_feature"));
  EXPECT_FALSE(cpu.has(""));
}

TEST(CpuInfo, FeaturesOfTheOtherArchitectureAreAbsent) {
  const auto& cpu = qforge::cpu_info();
  const std::vector<std::string> foreign =
      is_x86() ? std::vector<std::string>{"neon", "neon_dot", "i8mm"}
               : std::vector<std::string>{"sse4_1", "avx2", "avx512f", "amx_tile"};
  for (const auto& f : foreign) EXPECT_FALSE(cpu.has(f)) << f;
}

// Implications that hold on every real CPU: a detection bug in one of the CPUID fallbacks
// (AVX-VNNI, AMX) or in the OS-state checks shows up here.
TEST(CpuInfo, FeatureImplicationsHold) {
  const auto& cpu = qforge::cpu_info();
  if (cpu.has("avx512bw") || cpu.has("avx512vl") || cpu.has("avx512vnni")) {
    EXPECT_TRUE(cpu.has("avx512f"));
  }
  if (cpu.has("avx512f")) EXPECT_TRUE(cpu.has("avx2"));
  if (cpu.has("avx_vnni")) EXPECT_TRUE(cpu.has("avx2"));
  if (cpu.has("amx_int8") || cpu.has("amx_bf16")) EXPECT_TRUE(cpu.has("amx_tile"));
  if (cpu.has("avx2")) EXPECT_TRUE(cpu.has("sse4_1"));
  if (cpu.has("neon_dot") || cpu.has("i8mm")) EXPECT_TRUE(cpu.has("neon"));
}

// /proc/cpuinfo lists a flag only when the CPU has it and the kernel enabled its state, so a
// listed flag must be detected. (The converse is not checked: an older kernel may not know
// the name of a newer flag.)
TEST(CpuInfo, EveryFeatureTheKernelListsIsDetected) {
  if (!is_x86()) GTEST_SKIP() << "flag names compared here are x86 ones";
  const auto flags = proc_cpuinfo_flags();
  if (flags.empty()) GTEST_SKIP() << "/proc/cpuinfo has no flags line here";
  const std::vector<std::pair<std::string, std::string>> names = {{"sse4_1", "sse4_1"},
                                                                  {"avx2", "avx2"},
                                                                  {"fma", "fma"},
                                                                  {"f16c", "f16c"},
                                                                  {"avx512f", "avx512f"},
                                                                  {"avx512bw", "avx512bw"},
                                                                  {"avx512vl", "avx512vl"},
                                                                  {"avx512_vnni", "avx512vnni"},
                                                                  {"avx512_bf16", "avx512bf16"},
                                                                  {"avx_vnni", "avx_vnni"},
                                                                  {"amx_int8", "amx_int8"},
                                                                  {"amx_bf16", "amx_bf16"},
                                                                  {"amx_tile", "amx_tile"}};
  const auto& cpu = qforge::cpu_info();
  for (const auto& [linux_name, ours] : names) {
    if (flags.count(linux_name)) EXPECT_TRUE(cpu.has(ours)) << linux_name << " is in /proc/cpuinfo";
  }
  // Features every x86 kernel since 2013 names: equality both ways.
  for (const char* f : {"sse4_1", "avx2", "fma", "f16c", "avx512f"})
    EXPECT_EQ(cpu.has(f), flags.count(f) == 1) << f;
}

TEST(CpuInfo, CachesAreOrderedAndSized) {
  const auto& cpu = qforge::cpu_info();
  int previous_level = 0;
  for (const auto& c : cpu.caches) {
    EXPECT_GE(c.level, previous_level);
    EXPECT_GE(c.level, 1);
    EXPECT_LE(c.level, 4);
    EXPECT_GT(c.size_bytes, 0u) << "L" << c.level << " " << c.type;
    EXPECT_GE(c.shared_by_cores, 1u);
    EXPECT_LE(c.shared_by_cores, static_cast<std::uint32_t>(cpu.logical_processors));
    EXPECT_TRUE(c.type == "data" || c.type == "instruction" || c.type == "unified") << c.type;
    previous_level = c.level;
  }
}

TEST(CpuInfo, IsDetectedOnce) { EXPECT_EQ(&qforge::cpu_info(), &qforge::cpu_info()); }

}  // namespace
