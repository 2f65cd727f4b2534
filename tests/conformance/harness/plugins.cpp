#include "harness/plugins.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#ifndef QFORGE_PLUGIN_DIR
#error \
    "QFORGE_PLUGIN_DIR must name the build's plugin directory (see tests/conformance/CMakeLists.txt)"
#endif

namespace qforge::conformance {
namespace {

std::vector<std::string> split(std::string_view text, char separator) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t end = std::min(text.find(separator, start), text.size());
    std::string part(text.substr(start, end - start));
    // Trim blanks so "cpu_scalar, cuda" works.
    const auto first = part.find_first_not_of(" \t");
    const auto last = part.find_last_not_of(" \t");
    if (first != std::string::npos) parts.push_back(part.substr(first, last - first + 1));
    start = end + 1;
  }
  return parts;
}

std::vector<std::string> make_search_path() {
  std::vector<std::string> path;
  if (const char* env = std::getenv("QFORGE_PLUGIN_PATH"); env != nullptr) path = split(env, ':');
  path.emplace_back(QFORGE_PLUGIN_DIR);
  return path;
}

}  // namespace

const std::vector<std::string>& plugin_search_path() {
  static const std::vector<std::string> path = make_search_path();
  return path;
}

PluginRegistry& conformance_registry() {
  static PluginRegistry* registry = [] {
    // Never destroyed: buffers and ops objects may outlive static destruction order.
    auto* r = new PluginRegistry();
    std::vector<std::filesystem::path> dirs;
    for (const auto& p : plugin_search_path())
      if (std::filesystem::exists(p)) dirs.emplace_back(p);
    r->load_from(dirs);
    return r;
  }();
  return *registry;
}

const std::vector<std::string>& requested_plugins() {
  static const std::vector<std::string> names = [] {
    const char* env = std::getenv("QFORGE_CONFORMANCE_PLUGINS");
    return env == nullptr ? std::vector<std::string>{} : split(env, ',');
  }();
  return names;
}

const std::vector<std::string>& plugins_under_test() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    const auto& wanted = requested_plugins();
    for (const auto& plugin : conformance_registry().plugins()) {
      const bool selected =
          wanted.empty() || std::find(wanted.begin(), wanted.end(), plugin.name) != wanted.end();
      if (selected) out.push_back(plugin.name);
    }
    return out;
  }();
  return names;
}

QuantizationOps* find_plugin(std::string_view name) { return conformance_registry().find(name); }

std::string registry_report() {
  std::ostringstream out;
  const auto& registry = conformance_registry();
  out << "plugin search path:";
  for (const auto& p : plugin_search_path()) out << ' ' << p;
  out << '\n';
  for (const auto& plugin : registry.plugins()) {
    const auto availability = plugin.ops->availability();
    out << "  loaded " << plugin.name << ' ' << plugin.version << " from " << plugin.path.string()
        << (availability.usable ? " (usable, score " + std::to_string(availability.score) + ")"
                                : " (not usable here: " + availability.reason + ")")
        << '\n';
  }
  for (const auto& failure : registry.failures())
    out << "  failed " << failure.path.string() << " [" << to_string(failure.kind)
        << "]: " << failure.message << '\n';
  return out.str();
}

}  // namespace qforge::conformance
