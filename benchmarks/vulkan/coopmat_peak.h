// The tensor-core anchor of the vulkan benchmarks: how fast s8 NV cooperative-matrix
// multiply-adds run in a Vulkan compute shader (coopmat_peak.comp), with the fragments in
// registers and fed from shared memory, on one physical device, timed with timestamp queries.
#pragma once

#include <string>
#include <vector>

namespace qforge::vkbench {

struct CoopmatPeak {
  std::string what;    // "16x16x32 s8, fragments in registers", ...
  double seconds = 0;  // median time of one dispatch
  double tops = 0;     // 2 M N K per multiply-add, over the time
};

// Every variant on physical device `index`; empty when the device lacks VK_NV_cooperative_matrix
// with s8 tiles. Throws std::runtime_error naming a failed call.
std::vector<CoopmatPeak> measure_coopmat_peak(int index, int reps);

}  // namespace qforge::vkbench
