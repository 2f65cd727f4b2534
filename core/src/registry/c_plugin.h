// The host side of the C plugin boundary (qforge/plugin/c_api.h): a plugin that exports
// qforge_plugin_c_entry is checked here, and each backend instance it makes is wrapped in a
// QuantizationOps (c_backend.h).
#pragma once

#include <boost/dll/shared_library.hpp>
#include <filesystem>
#include <memory>
#include <optional>
#include <variant>

#include "qforge/ops.h"
#include "qforge/plugin/c_api.h"
#include "qforge/registry.h"

namespace qforge::detail {

// A library whose C table passed the version and size checks.
struct OpenedCPlugin {
  std::shared_ptr<boost::dll::shared_library> library;
  const qforge_c_plugin* table = nullptr;
};

// Calls the library's qforge_plugin_c_entry and checks the table: nullopt when the library has
// no such symbol, else the table or the failure (missing_entry, abi_mismatch).
std::optional<std::variant<OpenedCPlugin, PluginFailure>> open_c_plugin(
    const std::shared_ptr<boost::dll::shared_library>& library, const std::filesystem::path& file);

// Creates a backend instance through the table (create_failed with the plugin's message).
std::variant<std::shared_ptr<QuantizationOps>, PluginFailure> create_c_plugin_ops(
    const OpenedCPlugin& plugin, const std::filesystem::path& file);

}  // namespace qforge::detail
