// qforge-hwinfo's text reports: the one-screen summary by default, and with --verbose the
// sections a reader looks for and the reference plugin.
#include <gtest/gtest.h>

#include <set>
#include <sstream>
#include <string>

#include "qforge/hardware.h"
#include "tool_runner.h"

namespace {

using qforge::test::run_hwinfo;

TEST(HwinfoText, DefaultIsOneScreenWithOneLinePerPlugin) {
  const auto run = run_hwinfo("");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  std::istringstream lines(run.output);
  int count = 0;
  bool cpu_line = false, scalar_line = false;
  for (std::string line; std::getline(lines, line); ++count) {
    cpu_line |= line.rfind("CPU ", 0) == 0;
    if (line.rfind("  cpu_scalar ", 0) == 0) {
      scalar_line = true;
      EXPECT_NE(line.find("kernels: "), std::string::npos) << line;
    }
  }
  EXPECT_TRUE(cpu_line) << run.output;
  EXPECT_TRUE(scalar_line) << run.output;
  EXPECT_LE(count, 24) << "the default report should fit one screen:\n" << run.output;
  EXPECT_EQ(run.output.find("    capabilities\n"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("--verbose"), std::string::npos) << run.output;
}

TEST(HwinfoText, VerbosePrintsEverySectionAndTheScalarPlugin) {
  const auto run = run_hwinfo("--verbose");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  for (const char* expected :
       {"CPU\n", "  model ", "  features ", "Plugin search path\n", "Plugins (",
        "Plugin failures (", "cpu_scalar", "capabilities", "matmul_integer", "quantize"}) {
    EXPECT_NE(run.output.find(expected), std::string::npos) << "missing '" << expected << "' in:\n"
                                                            << run.output;
  }
}

TEST(HwinfoText, NamesTheDetectedModelAndPresentFeatures) {
  const auto run = run_hwinfo("--verbose");
  ASSERT_EQ(run.exit_code, 0);
  const auto& cpu = qforge::cpu_info();
  if (!cpu.model.empty()) EXPECT_NE(run.output.find(cpu.model), std::string::npos) << cpu.model;
  const auto start = run.output.find("  features ");
  ASSERT_NE(start, std::string::npos) << run.output;
  const auto line = run.output.substr(start, run.output.find('\n', start) - start);
  std::istringstream words(line);
  std::set<std::string> listed;
  for (std::string w; words >> w;) listed.insert(w);
  for (const auto& [name, on] : cpu.features)
    EXPECT_EQ(listed.count(name) == 1, on) << name << " in '" << line << "'";
}

TEST(HwinfoText, OpFilterLeavesOtherOpsOut) {
  const auto run = run_hwinfo("--op dequantize");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("      dequantize\n"), std::string::npos) << run.output;
  EXPECT_EQ(run.output.find("      matmul_integer\n"), std::string::npos) << run.output;
  EXPECT_EQ(run.output.find("      quantize\n"), std::string::npos) << run.output;
}

}  // namespace
