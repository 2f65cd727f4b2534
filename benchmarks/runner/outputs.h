// The run's outputs: a readable table (stdout and table.txt), JSON and CSV for programs, and
// an SVG chart of throughput per workload per candidate.
#pragma once

#include <filesystem>
#include <string>

#include "results.h"

namespace qforge::bench {

// Schema "qforge-bench/1"; docs/ACCELERATOR.md lists every field.
inline constexpr const char* kJsonSchema = "qforge-bench/1";

// The header and one line per workload; with_candidates adds every candidate's time per
// workload and why the others were excluded.
std::string table_text(const BenchRun& run, bool with_candidates = true);
std::string json_text(const BenchRun& run);
std::string csv_text(const BenchRun& run);
std::string svg_chart(const BenchRun& run);

// Writes `text` to `file` atomically (qforge/output_file.h), creating its directory; throws
// ErrorCode::io naming the file.
void write_file(const std::filesystem::path& file, const std::string& text);

}  // namespace qforge::bench
