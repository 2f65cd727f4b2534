// Workloads from a JSON file (qforge-bench --workloads FILE.json). The file describes types,
// schemes and shapes only; values (scales, zero points) are representative ones from
// qforge::workload_params, since they do not change which kernel is fastest. The format is in
// docs/ACCELERATOR.md. Every mistake is an error naming the field: "workloads[2].op: unknown
// op 'gemm'; expected one of quantize, dequantize, ...".
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "qforge/accelerator.h"

namespace qforge::bench {

std::vector<NamedWorkload> parse_workloads(const std::string& json_text);
std::vector<NamedWorkload> load_workloads(const std::filesystem::path& file);

}  // namespace qforge::bench
