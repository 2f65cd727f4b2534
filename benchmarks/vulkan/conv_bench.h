// The convolution section of qforge_bench_vulkan (--conv).
#pragma once

#include "qforge/ops.h"

namespace qforge::vkbench {

// Times vulkan's convolution plans (W and bias fixed, X and Y in device memory) on a few batch-1
// layers and, when `scalar` is set, cpu_scalar's plans of the same operands in the same run;
// prints a table. Returns false (after printing why) when vulkan refuses a layer.
bool run_conv_bench(QuantizationOps& vk, QuantizationOps* scalar, int reps);

}  // namespace qforge::vkbench
