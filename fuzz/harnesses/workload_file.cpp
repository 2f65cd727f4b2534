// Benchmark workload files (qforge-bench --workloads): any text gives workloads or a
// qforge::Error; any other exception, crash or sanitizer report is a finding.
#include "workload_file.h"

#include "qforge/error.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    qforge::bench::parse_workloads(std::string(reinterpret_cast<const char*>(data), size));
  } catch (const qforge::Error&) {
  }
  return 0;
}
