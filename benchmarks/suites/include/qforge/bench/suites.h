// The benchmark suites: the workloads qforge-bench runs by default and qforge-hwinfo reports
// coverage for. A static library of the benchmarks, not part of libqforge_core: which shapes
// are worth measuring is the benchmarks' business, not the runtime's.
#pragma once

#include <vector>

#include "qforge/accelerator.h"

namespace qforge {

// The quick suite: a dozen modest workloads over every op family that finishes in about a
// minute with only cpu_scalar on a 2-core machine. default_suite() is the quick one.
std::vector<NamedWorkload> quick_suite();
// Larger shapes and more dtype/scheme combinations.
std::vector<NamedWorkload> full_suite();
inline std::vector<NamedWorkload> default_suite() { return quick_suite(); }

}  // namespace qforge
