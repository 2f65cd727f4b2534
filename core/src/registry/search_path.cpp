#include "registry/search_path.h"

#include <algorithm>
#include <boost/dll/runtime_symbol_info.hpp>
#include <cstdlib>
#include <system_error>

namespace qforge::detail {

std::vector<std::filesystem::path> split_path_list(std::string_view list) {
  std::vector<std::filesystem::path> out;
  while (!list.empty()) {
    const auto colon = list.find(':');
    const auto entry = list.substr(0, colon);
    if (!entry.empty()) out.emplace_back(entry);
    if (colon == std::string_view::npos) break;
    list.remove_prefix(colon + 1);
  }
  return out;
}

std::vector<std::filesystem::path> plugin_path_from_environment() {
  const char* value = std::getenv(std::string(kPluginPathVariable).c_str());
  return value ? split_path_list(value) : std::vector<std::filesystem::path>{};
}

std::vector<std::filesystem::path> plugin_search_path() {
  std::vector<std::filesystem::path> out = plugin_path_from_environment();
  out.emplace_back(QFORGE_INSTALL_PLUGINDIR);
  // An installed tree that was moved after `cmake --install --prefix X` still finds its plugins
  // beside libqforge_runtime: <libdir>/qforge/plugins. Skipped when it is the directory above.
  std::error_code lib_ec;
  const std::filesystem::path core_lib = boost::dll::this_line_location(lib_ec);
  if (!lib_ec && core_lib.has_parent_path()) {
    auto beside = core_lib.parent_path() / "qforge" / "plugins";
    std::error_code same_ec;
    if (std::filesystem::is_directory(beside, same_ec) &&
        !std::filesystem::equivalent(beside, QFORGE_INSTALL_PLUGINDIR, same_ec))
      out.push_back(std::move(beside));
  }
  // program_location() reads /proc/self/exe; it can fail in odd sandboxes, and then the
  // executable's directory is simply not searched.
  std::error_code ec;
  const std::filesystem::path exe = boost::dll::program_location(ec);
  if (!ec && exe.has_parent_path()) out.push_back(exe.parent_path());
  return out;
}

bool is_plugin_file_name(std::string_view file_name) noexcept {
  return file_name.size() > kPluginPrefix.size() + kPluginSuffix.size() &&
         file_name.starts_with(kPluginPrefix) && file_name.ends_with(kPluginSuffix);
}

std::vector<std::filesystem::path> plugin_candidates(const std::filesystem::path& dir,
                                                     std::error_code& ec) {
  std::vector<std::filesystem::path> out;
  ec.clear();
  std::filesystem::directory_iterator it(dir, ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    const auto& path = it->path();
    if (!is_plugin_file_name(path.filename().string())) continue;
    // A directory with a plugin's name is skipped; anything else that is not a regular file
    // (a FIFO, a dangling or looping link) goes to load_file(), which reports it.
    std::error_code type_ec;
    if (std::filesystem::is_directory(path, type_ec)) continue;
    out.push_back(path);
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace qforge::detail
