// Hooks for qforge's own tests of the accelerator. Not installed: programs built against qforge
// leave AcceleratorOptions::test_hooks null.
#pragma once

#include <cstdint>
#include <functional>

#include "qforge/accelerator.h"

namespace qforge {

// Parts of a measured call, for injected costs.
enum class CostPhase : std::uint8_t {
  op,        // the op itself
  transfer,  // host->device copies of the inputs plus device->host copies of the outputs
};

namespace detail {

struct AcceleratorTestHooks {
  // When set, timing does not run candidates but asks this for the seconds each phase of one
  // call costs (probes still run for real), so that choices that depend on timing are tested
  // without real timings.
  std::function<double(const CandidateId&, const OpDesc&, CostPhase)> injected_cost;
};

}  // namespace detail
}  // namespace qforge
