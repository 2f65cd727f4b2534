// Where the registry looks for plugins, and which files in a directory are candidates.
#pragma once

#include <filesystem>
#include <string_view>
#include <system_error>
#include <vector>

namespace qforge::detail {

inline constexpr std::string_view kPluginPathVariable = "QFORGE_PLUGIN_PATH";
inline constexpr std::string_view kPluginPrefix = "libqforge_plugin_";
inline constexpr std::string_view kPluginSuffix = ".so";

// Splits a colon-separated list, dropping empty entries ("a::b:" -> a, b).
std::vector<std::filesystem::path> split_path_list(std::string_view list);

// QFORGE_PLUGIN_PATH entries, then the installed plugin directory, then the executable's
// directory. Entries are not checked for existence here.
std::vector<std::filesystem::path> plugin_search_path();

// The entries of QFORGE_PLUGIN_PATH alone (empty when unset).
std::vector<std::filesystem::path> plugin_path_from_environment();

// True for "libqforge_plugin_<something>.so".
bool is_plugin_file_name(std::string_view file_name) noexcept;

// The candidates in `dir`, sorted by name so that loading order does not depend on the file
// system. An error while listing (permissions) is left in `ec`, with the candidates found so
// far returned.
std::vector<std::filesystem::path> plugin_candidates(const std::filesystem::path& dir,
                                                     std::error_code& ec);

}  // namespace qforge::detail
