#include "device_probe.h"

#include <cuda_runtime_api.h>

#include <exception>

namespace qforge::cuda {
namespace {

std::string version_text(int v) {
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

}  // namespace

Probe probe_devices() noexcept {
  Probe probe;
  try {
    cudaDriverGetVersion(&probe.driver_version);
    cudaRuntimeGetVersion(&probe.runtime_version);
    int count = 0;
    const cudaError_t status = cudaGetDeviceCount(&count);
    if (status != cudaSuccess) {
      // cudaErrorNoDevice on a machine without a GPU, cudaErrorInsufficientDriver or
      // cudaErrorInitializationError without a usable driver: say which.
      const std::string why = std::string("cudaGetDeviceCount: ") + cudaGetErrorString(status);
      probe.availability.reason = status == cudaErrorNoDevice
                                      ? "no CUDA device (" + why + ")"
                                      : "CUDA driver unusable (" + why + ")";
      cudaGetLastError();  // clear the recorded error so later calls start clean
      return probe;
    }
    if (count == 0) {
      probe.availability.reason = "no CUDA device";
      return probe;
    }
    std::string found;
    for (int i = 0; i < count; ++i) {
      cudaDeviceProp p{};
      if (cudaGetDeviceProperties(&p, i) != cudaSuccess) continue;
      DeviceProps d;
      d.index = i;
      d.name = p.name;
      d.cc = p.major * 10 + p.minor;
      d.multiprocessors = p.multiProcessorCount;
      d.memory_bytes = p.totalGlobalMem;
      d.l2_bytes = static_cast<std::size_t>(p.l2CacheSize);
      d.shared_per_block_optin = p.sharedMemPerBlockOptin;
      d.shared_per_sm = p.sharedMemPerMultiprocessor;
      d.memory_bus_bits = p.memoryBusWidth;
      found += (found.empty() ? "" : ", ") + d.name + " (sm_" + std::to_string(d.cc) + ")";
      probe.devices.push_back(std::move(d));
    }
    for (const auto& d : probe.devices)
      if (d.usable()) {
        probe.availability.usable = true;
        // Above every CPU backend when nothing has been measured: a GPU with int8 tensor
        // cores is the better guess for the matmul-heavy ops.
        probe.availability.score = 100;
        return probe;
      }
    probe.availability.reason = "no CUDA device with compute capability 8.0 or newer (found " +
                                found + "); this build has kernels for sm_80 and sm_90a";
  } catch (const std::exception& e) {
    probe.availability = {false, 0, std::string("CUDA probe failed: ") + e.what()};
  }
  return probe;
}

DeviceInfo to_device_info(const DeviceProps& d, const Probe& probe) {
  DeviceInfo info;
  info.name = d.name;
  info.kind = "gpu";
  info.memory_bytes = d.memory_bytes;
  info.properties["compute_capability"] =
      std::to_string(d.cc / 10) + "." + std::to_string(d.cc % 10);
  info.properties["multiprocessors"] = std::to_string(d.multiprocessors);
  info.properties["l2_bytes"] = std::to_string(d.l2_bytes);
  info.properties["shared_memory_per_block_optin"] = std::to_string(d.shared_per_block_optin);
  info.properties["shared_memory_per_multiprocessor"] = std::to_string(d.shared_per_sm);
  info.properties["memory_bus_bits"] = std::to_string(d.memory_bus_bits);
  info.properties["usable"] = d.usable() ? "yes" : "no (needs compute capability >= 8.0)";
  info.properties["driver"] = version_text(probe.driver_version);
  info.properties["runtime"] = version_text(probe.runtime_version);
  info.properties["device_index"] = std::to_string(d.index);
  return info;
}

}  // namespace qforge::cuda
