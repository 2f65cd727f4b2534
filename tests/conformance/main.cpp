// The conformance suite's entry point: fixes the run's seed before anything draws from it,
// and prints it with the plugins found, so a log always says how to replay the run.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>

#include "harness/plugins.h"
#include "harness/seed.h"
#include "harness/summary.h"
#include "qforge/error.h"

int main(int argc, char** argv) {
  using namespace qforge::conformance;
  // libgomp (loaded with the onednn plugin) reads this when it loads. Its default busy-waiting
  // starves everything else on a small shared machine (docs/ONEDNN.md); a caller's value wins.
  setenv("OMP_WAIT_POLICY", "PASSIVE", /*overwrite=*/0);
  try {
    run_seed();
  } catch (const qforge::Error& e) {
    std::fprintf(stderr, "qforge_test_conformance: %s\n", e.what());
    return 2;
  }
  ::testing::InitGoogleTest(&argc, argv);
  // Test listing (gtest_discover_tests) must print nothing but the list.
  const bool listing = ::testing::GTEST_FLAG(list_tests);
  if (!listing)
    std::printf("qforge conformance: %s\n%s", seed_text().c_str(), registry_report().c_str());
  const int result = RUN_ALL_TESTS();
  if (!listing)
    std::printf("qforge conformance summary (%s):\n%s", seed_text().c_str(),
                summary_report().c_str());
  return result;
}
