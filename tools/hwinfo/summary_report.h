// qforge-hwinfo's default text report: one screen for a newcomer. The CPU in one line, each
// plugin in one line (loaded with its devices and kernel families, or why it is unusable), each
// load failure in one line. The full report (devices' properties, the per-op capability grid,
// the default suite) is behind --verbose or --op.
#pragma once

#include <filesystem>
#include <iosfwd>
#include <vector>

#include "plugin_report.h"
#include "qforge/hardware.h"
#include "qforge/registry.h"

namespace qforge::hwinfo {

void print_summary(std::ostream& out, const CpuInfo& cpu,
                   const std::vector<std::filesystem::path>& search_path,
                   const std::vector<PluginReport>& plugins,
                   const std::vector<PluginFailure>& failures);

}  // namespace qforge::hwinfo
