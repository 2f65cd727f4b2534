// The CPU section of qforge-hwinfo's text report.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>

#include "qforge/hardware.h"

namespace qforge::hwinfo {

// "48 KiB", "2 MiB", "80 GiB": the largest binary unit that keeps the value whole-ish.
std::string format_bytes(std::uint64_t bytes);
// "L1d", "L1i", "L2", "L3"
std::string cache_name(const CacheLevel& cache);

void print_cpu(std::ostream& out, const CpuInfo& cpu);

}  // namespace qforge::hwinfo
