#include "runtime_identity.h"

#include <filesystem>

#include "device_identity.h"
#include "qforge/fnv1a.h"

namespace qforge::cuda {

std::string runtime_identity() {
  namespace id = qforge::device_identity;
  std::string out =
      id::environment({"CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "QFORGE_CUDA_KERNELS",
                       "QFORGE_CUDA_GEMM_KROTATE", "QFORGE_CUDA_QUANTIZE_DIVIDE",
                       "QFORGE_CUDA_SKINNY_STAGES", "QFORGE_CUDA_WGMMA_SPLITS"});
  // The driver library cudart loads (libcuda.so.1) and the kernel module's version.
  out += id::library("libcuda.so.1");
  const std::string version = id::text_of("/proc/driver/nvidia/version");
  out += version.empty() ? "nvidia no kernel module version\n"
                         : "nvidia " + std::to_string(qforge::fnv1a(version)) + "\n";
  // Each GPU the driver knows (model, bus location, board), then the bus itself.
  for (const auto& gpu : id::files_in("/proc/driver/nvidia/gpus", "")) {
    const std::string info = id::text_of(gpu / "information");
    out += "gpu " + gpu.filename().string() + " " + std::to_string(qforge::fnv1a(info)) + "\n";
  }
  out += id::pci_display_devices();
  return out;
}

}  // namespace qforge::cuda
