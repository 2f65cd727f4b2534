// Which CUDA devices this process can use, asked once per backend instance. Never throws: on a
// machine without a GPU or driver the answer is an Availability whose reason says so.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "qforge/ops.h"

namespace qforge::cuda {

// The kernels are built for sm_80 (Ampere, also running on sm_86/sm_89) and sm_90a (Hopper), and
// carry compute_80 PTX for newer GPUs: below 8.0 nothing can run.
inline constexpr int kMinComputeCapability = 80;

struct DeviceProps {
  int index = 0;
  std::string name;
  int cc = 0;  // 10 * major + minor: 80, 86, 89, 90, ...
  int multiprocessors = 0;
  std::size_t memory_bytes = 0;
  std::size_t l2_bytes = 0;
  std::size_t shared_per_block_optin = 0;
  std::size_t shared_per_sm = 0;
  int memory_bus_bits = 0;
  bool usable() const { return cc >= kMinComputeCapability; }
};

struct Probe {
  Availability availability;
  std::vector<DeviceProps> devices;  // every device the runtime lists, usable or not
  int driver_version = 0;            // cudaDriverGetVersion, e.g. 13000
  int runtime_version = 0;           // cudaRuntimeGetVersion
};

Probe probe_devices() noexcept;

// The DeviceInfo the QuantizationOps interface reports.
DeviceInfo to_device_info(const DeviceProps& d, const Probe& probe);

}  // namespace qforge::cuda
