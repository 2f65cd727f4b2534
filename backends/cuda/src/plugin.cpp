// The plugin's entry point (qforge/plugin/sdk.h), and counters its tests read.
#include "cuda_ops.h"
#include "qforge/plugin/sdk.h"

QFORGE_DEFINE_PLUGIN(qforge::cuda::CudaOps, "cuda", qforge::cuda::kPluginVersion)

// Read by tests/cuda/plan_test.cpp and conv_test.cpp through dlsym (the counters are
// cuda_ops.h's).
extern "C" __attribute__((visibility("default"))) std::uint64_t qforge_cuda_conv_weight_packs(
    void) {
  return qforge::cuda::conv_weight_packs.load(std::memory_order_relaxed);
}

extern "C" __attribute__((visibility("default"))) std::uint64_t qforge_cuda_conv_overflow_checks(
    void) {
  return qforge::cuda::conv_overflow_checks.load(std::memory_order_relaxed);
}
