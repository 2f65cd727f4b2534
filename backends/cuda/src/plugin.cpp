// The plugin's entry point (qforge/plugin/sdk.h), its deferred identity (the CUDA context is
// created when the plugin is first asked something: docs/PLUGINS.md, "Deferred plugins"), and
// counters its tests read.
#include "cuda_ops.h"
#include "qforge/plugin/sdk.h"
#include "runtime_identity.h"

QFORGE_DEFINE_PLUGIN(qforge::cuda::CudaOps, "cuda", qforge::cuda::kPluginVersion)
QFORGE_DEFINE_DEFERRED_IDENTITY(qforge::cuda::runtime_identity)

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
