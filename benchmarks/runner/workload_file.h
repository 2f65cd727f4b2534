// Workloads from a JSON file (qforge-bench --workloads FILE.json). The file describes types,
// schemes and shapes only; values (scales, zero points) are representative ones from
// qforge::workload_params, since they do not change which kernel is fastest. The format is in
// docs/ACCELERATOR.md. Every mistake is an error naming the field: "workloads[2].op: unknown
// op 'gemm'; expected one of quantize, dequantize, ...".
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "qforge/accelerator.h"

namespace qforge::bench {

// Limits on what a workload file may ask for, checked while parsing, before anything is
// allocated: the accelerator generates random inputs of the real shape for timing. That time
// counts against --budget (the workload's deadline is set before the inputs are made), but the
// generation itself cannot be interrupted, so a typo like "k": 4294967296 would otherwise
// allocate gigabytes before any deadline is looked at. Kept
// here, local to the file parser, rather than in core's shape arithmetic.
//   - every extent (m, n, k, shape dimensions, block_size) is at most 2^30;
//   - the operands of one call (inputs and outputs, counted at 8 bytes per element, which covers
//     the widest element type and the runner's scratch copies) take at most 1 GiB.
inline constexpr std::int64_t kMaxWorkloadExtent = std::int64_t{1} << 30;
inline constexpr std::uint64_t kMaxWorkloadBytes = std::uint64_t{1} << 30;

// The workloads of a workload file's text. Throws qforge::Error (invalid_argument) naming the
// workload (index and name) and the field for every mistake, including values nlohmann cannot
// represent (1e400) and anything outside the limits above; never an nlohmann exception. Callable
// on arbitrary text (fuzzing).
std::vector<NamedWorkload> parse_workloads(const std::string& json_text);

// Reads `file` with qforge::read_input_file (a regular file of at most kMaxInputFileBytes) and
// parses it; every error names the file.
std::vector<NamedWorkload> load_workloads(const std::filesystem::path& file);

}  // namespace qforge::bench
