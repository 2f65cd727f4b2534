// What this machine's CPU can do, through cpuinfo. Compiled-for and supported-here are two
// questions (ruy's have_built_path_for_* vs cpuinfo): this header answers the second.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "qforge/export.h"

namespace qforge {

struct CacheLevel {
  int level = 0;     // 1, 2, 3
  std::string type;  // "data", "instruction", "unified"
  std::uint32_t size_bytes = 0;
  std::uint32_t shared_by_cores = 0;  // logical processors sharing one instance
};

struct QFORGE_API CpuInfo {
  std::string vendor;        // "Intel", "AMD", "ARM"
  std::string model;         // package name, "Intel(R) Xeon(R) Platinum 8480+"
  std::string architecture;  // "x86_64", "aarch64"
  int packages = 0;
  int cores = 0;  // physical
  int logical_processors = 0;
  std::vector<CacheLevel> caches;
  // ISA features by name, in a fixed order: sse4_1 avx2 fma f16c avx512f avx512bw avx512vl
  // avx512vnni avx512bf16 avx_vnni amx_int8 amx_bf16 amx_tile neon neon_dot i8mm.
  std::vector<std::pair<std::string, bool>> features;

  bool has(std::string_view feature) const;
};

// Detected once and cached. Never throws: if cpuinfo cannot initialise, fields stay empty and
// `vendor` reads "unknown".
QFORGE_API const CpuInfo& cpu_info();

}  // namespace qforge
