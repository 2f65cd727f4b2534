// The plugins under test, loaded once per process through qforge::PluginRegistry (the suite
// links no backend). Search order: QFORGE_PLUGIN_PATH (colon-separated directories or files,
// as the registry's default path), then QFORGE_PLUGIN_DIR, the build's bin dir, which the
// build passes as a compile definition. QFORGE_CONFORMANCE_PLUGINS (comma list) restricts the
// plugins tested.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "qforge/ops.h"
#include "qforge/registry.h"

namespace qforge::conformance {

// The suite's registry, loaded on first use.
PluginRegistry& conformance_registry();

// The directories (or files) the registry was loaded from, in order.
const std::vector<std::string>& plugin_search_path();

// Plugin names from QFORGE_CONFORMANCE_PLUGINS, in the order given; empty when unset.
const std::vector<std::string>& requested_plugins();

// Names of the loaded plugins to test, in load order, restricted by QFORGE_CONFORMANCE_PLUGINS.
// Value-parameterised tests instantiate over this list, so every backend is reported apart.
const std::vector<std::string>& plugins_under_test();

// The loaded plugin named `name`, or nullptr.
QuantizationOps* find_plugin(std::string_view name);

// The plugin that must run every case the reference defines: a rejection from supports() is a
// failure for it, not a skip. cpu_scalar is the fallback every other backend may lean on.
inline constexpr std::string_view kMustSupportEverything = "cpu_scalar";

// One line per loaded plugin and per load failure, for the start of a run and for messages.
std::string registry_report();

}  // namespace qforge::conformance
