// Entry point of the vulkan plugin tests: validation layers on unless the environment says
// otherwise (QFORGE_VULKAN_VALIDATION=0), the seed printed, then every test.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>

#include "vk_test_support.h"

int main(int argc, char** argv) {
  setenv("QFORGE_VULKAN_VALIDATION", "1", /*overwrite=*/0);
  ::testing::InitGoogleTest(&argc, argv);
  if (!::testing::GTEST_FLAG(list_tests))
    std::printf("qforge vulkan tests: QFORGE_TEST_SEED=%llu\n",
                static_cast<unsigned long long>(qforge::vktest::run_seed()));
  return RUN_ALL_TESTS();
}
