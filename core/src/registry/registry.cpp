// PluginRegistry: runs the loading steps of plugin_library.h over the search path and keeps
// what they produce. See qforge/registry.h for the contract and docs/PLUGINS.md for the user's
// view.
#include "qforge/registry.h"

#include <set>
#include <system_error>

#include <spdlog/spdlog.h>

#include "qforge/log.h"
#include "registry/plugin_library.h"
#include "registry/search_path.h"

namespace qforge {

std::string_view to_string(PluginFailureKind kind) noexcept {
  switch (kind) {
    case PluginFailureKind::not_shared_library: return "not_shared_library";
    case PluginFailureKind::wrong_architecture: return "wrong_architecture";
    case PluginFailureKind::missing_dependency: return "missing_dependency";
    case PluginFailureKind::load_failed: return "load_failed";
    case PluginFailureKind::missing_entry: return "missing_entry";
    case PluginFailureKind::abi_mismatch: return "abi_mismatch";
    case PluginFailureKind::create_failed: return "create_failed";
    case PluginFailureKind::shadowed: return "shadowed";
  }
  return "unknown";
}

namespace {

// The identity of a file for "loaded already?": symlinks and "dir/../dir" collapse.
std::filesystem::path file_identity(const std::filesystem::path& file) {
  std::error_code ec;
  auto canonical = std::filesystem::weakly_canonical(file, ec);
  return ec ? file : canonical;
}

std::filesystem::path absolute_path(const std::filesystem::path& file) {
  std::error_code ec;
  auto abs = std::filesystem::absolute(file, ec);
  return (ec ? file : abs).lexically_normal();
}

}  // namespace

struct PluginRegistry::Impl {
  std::vector<LoadedPlugin> plugins;
  std::vector<PluginFailure> failures;
  // Every file tried so far, loaded or not: each is loaded, and each failure logged, once.
  std::set<std::filesystem::path> tried;
  // Libraries that were opened but not used (shadowed, create() failed). They stay loaded for
  // the registry's lifetime: code that ran in them (static constructors, a half-done create())
  // may have left pointers into them behind.
  std::vector<std::shared_ptr<boost::dll::shared_library>> kept_libraries;

  bool fail(PluginFailure f) {
    logger().warn("plugin {}: {}", to_string(f.kind), f.message);
    failures.push_back(std::move(f));
    return false;
  }
};

PluginRegistry::PluginRegistry() : impl_(std::make_unique<Impl>()) {}
PluginRegistry::~PluginRegistry() = default;

std::vector<std::filesystem::path> PluginRegistry::default_search_path() {
  return detail::plugin_search_path();
}

bool PluginRegistry::load_file(const std::filesystem::path& given) {
  const std::filesystem::path file = absolute_path(given);
  const std::filesystem::path identity = file_identity(file);
  if (!impl_->tried.insert(identity).second) {
    for (const auto& p : impl_->plugins)
      if (file_identity(p.path) == identity) return true;
    return false;  // failed before, and was reported then
  }

  std::error_code ec;
  if (!std::filesystem::exists(file, ec)) {
    return impl_->fail({file, PluginFailureKind::load_failed,
                        fmt::format("{} does not exist", file.string())});
  }

  auto opened = detail::open_plugin(file);
  if (auto* f = std::get_if<PluginFailure>(&opened)) return impl_->fail(std::move(*f));
  auto& plugin = std::get<detail::OpenedPlugin>(opened);
  const std::string name = plugin.descriptor->name;
  const std::string version = plugin.descriptor->version ? plugin.descriptor->version : "";

  // Checked before create(), so a shadowed copy never touches its device.
  for (const auto& p : impl_->plugins) {
    if (p.name != name) continue;
    impl_->kept_libraries.push_back(plugin.library);
    return impl_->fail(
        {file, PluginFailureKind::shadowed,
         fmt::format("plugin '{}' in {} is shadowed by '{}' {} already loaded from {}, which "
                     "comes earlier in the search path; this copy is not used",
                     name, file.string(), p.name, p.version, p.path.string())});
  }

  auto created = detail::create_plugin_ops(plugin, file);
  if (auto* f = std::get_if<PluginFailure>(&created)) {
    impl_->kept_libraries.push_back(plugin.library);
    return impl_->fail(std::move(*f));
  }
  impl_->plugins.push_back(LoadedPlugin{
      file, name, version, std::move(std::get<std::shared_ptr<QuantizationOps>>(created))});
  logger().info("loaded plugin '{}' {} from {}", name, version, file.string());
  return true;
}

void PluginRegistry::load_from(const std::vector<std::filesystem::path>& paths) {
  for (const auto& entry : paths) {
    std::error_code ec;
    const auto status = std::filesystem::status(entry, ec);
    if (std::filesystem::is_directory(status)) {
      for (const auto& file : detail::plugin_candidates(entry)) load_file(file);
    } else if (std::filesystem::exists(status)) {
      // A file named explicitly is loaded whatever its name.
      load_file(entry);
    } else {
      logger().debug("plugin search path entry {} does not exist; skipped", entry.string());
    }
  }
}

void PluginRegistry::load_default() {
  // A typo in QFORGE_PLUGIN_PATH would otherwise go unnoticed.
  for (const auto& entry : detail::plugin_path_from_environment()) {
    std::error_code ec;
    if (!std::filesystem::exists(entry, ec)) {
      logger().warn("{} names {}, which does not exist", detail::kPluginPathVariable,
                    entry.string());
    }
  }
  load_from(default_search_path());
}

const std::vector<LoadedPlugin>& PluginRegistry::plugins() const noexcept {
  return impl_->plugins;
}

const std::vector<PluginFailure>& PluginRegistry::failures() const noexcept {
  return impl_->failures;
}

QuantizationOps* PluginRegistry::find(std::string_view name) const {
  for (const auto& p : impl_->plugins)
    if (p.name == name) return p.ops.get();
  return nullptr;
}

PluginRegistry& PluginRegistry::global() {
  // Never destroyed: buffers and ops handed out by plugins may outlive every static object,
  // so their libraries stay loaded until the process exits (as ggml does).
  static PluginRegistry* const registry = [] {
    auto* r = new PluginRegistry();
    r->load_default();
    return r;
  }();
  return *registry;
}

}  // namespace qforge
