// qforge-hwinfo --json: the whole report as one JSON document. The schema is described in
// docs/HWINFO.md; keys keep the order they are written in (ordered_json) so the document reads
// like the text report.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <vector>

#include "plugin_report.h"
#include "qforge/hardware.h"
#include "qforge/registry.h"

namespace qforge::hwinfo {

nlohmann::ordered_json cpu_json(const CpuInfo& cpu);
nlohmann::ordered_json plugin_json(const PluginReport& plugin);
nlohmann::ordered_json failure_json(const PluginFailure& failure);

nlohmann::ordered_json report_json(const CpuInfo& cpu,
                                   const std::vector<std::filesystem::path>& search_path,
                                   const std::vector<PluginReport>& plugins,
                                   const std::vector<PluginFailure>& failures);

}  // namespace qforge::hwinfo
