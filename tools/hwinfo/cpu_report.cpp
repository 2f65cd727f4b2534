#include "cpu_report.h"

#include <array>
#include <cstdio>
#include <ostream>

namespace qforge::hwinfo {

std::string format_bytes(std::uint64_t bytes) {
  constexpr std::array<const char*, 5> units = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  std::size_t unit = 0;
  while (value >= 1024.0 && unit + 1 < units.size()) {
    value /= 1024.0;
    ++unit;
  }
  char text[32];
  // Whole numbers print without decimals ("2 MiB"); others keep one ("1.5 MiB").
  if (value == static_cast<double>(static_cast<std::uint64_t>(value)))
    std::snprintf(text, sizeof(text), "%.0f %s", value, units[unit]);
  else std::snprintf(text, sizeof(text), "%.1f %s", value, units[unit]);
  return text;
}

std::string cache_name(const CacheLevel& cache) {
  std::string name = "L" + std::to_string(cache.level);
  if (cache.type == "data") name += 'd';
  if (cache.type == "instruction") name += 'i';
  return name;
}

void print_cpu(std::ostream& out, const CpuInfo& cpu) {
  out << "CPU\n";
  out << "  model         " << (cpu.model.empty() ? "unknown" : cpu.model) << '\n';
  out << "  vendor        " << cpu.vendor << '\n';
  out << "  architecture  " << cpu.architecture << '\n';
  out << "  packages      " << cpu.packages << '\n';
  out << "  cores         " << cpu.cores << " physical, " << cpu.logical_processors << " logical\n";
  out << "  caches       ";
  if (cpu.caches.empty()) out << " unknown";
  for (std::size_t i = 0; i < cpu.caches.size(); ++i) {
    const CacheLevel& c = cpu.caches[i];
    out << (i == 0 ? " " : ", ") << cache_name(c) << ' ' << format_bytes(c.size_bytes)
        << " (shared by " << c.shared_by_cores << " logical)";
  }
  out << '\n';
  std::string present, absent;
  for (const auto& [name, on] : cpu.features) (on ? present : absent) += ' ' + name;
  out << "  features     " << (present.empty() ? " none" : present) << '\n';
  out << "  not present  " << (absent.empty() ? " none" : absent) << '\n';
}

}  // namespace qforge::hwinfo
