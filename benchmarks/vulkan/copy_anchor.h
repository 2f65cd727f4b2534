// The bandwidth anchor of the vulkan benchmarks: vkCmdCopyBuffer between two device-local
// buffers on one physical device, timed with timestamp queries (median of repeats).
#pragma once

#include <cstddef>
#include <string>

namespace qforge::vkbench {

struct CopyResult {
  double seconds = 0;  // median time of one copy
  double gbps = 0;     // (bytes read + bytes written) / seconds / 1e9
  std::string device;  // name of the device measured
};

// Copies `bytes` bytes `reps` times on physical device `index` (vkEnumeratePhysicalDevices
// order, the plugin's device indices). Throws std::runtime_error naming the failed call.
CopyResult measure_copy(int index, std::size_t bytes, int reps);

}  // namespace qforge::vkbench
