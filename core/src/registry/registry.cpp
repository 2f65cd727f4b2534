// PluginRegistry: runs the loading steps of plugin_library.h over the search path and keeps
// what they produce. See qforge/registry.h for the contract and docs/PLUGINS.md for the user's
// view.
#include "qforge/registry.h"

#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>
#include <system_error>

#include "log_format.h"
#include "qforge/input_file.h"
#include "registry/deferred_ops.h"
#include "registry/elf_check.h"
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

std::optional<PluginFailure> check_plugin_image(std::span<const std::byte> bytes,
                                                const std::filesystem::path& name) {
  auto problem = detail::check_elf_bytes(bytes, name.string());
  if (!problem) return std::nullopt;
  return PluginFailure{name, problem->kind, std::move(problem->message)};
}

namespace {

// Why `path` cannot be used as a search path entry or a plugin file, from stat(): nullopt when
// it exists. The message says "symbolic link loop" for ELOOP, not "does not exist".
struct Missing {
  int err;
  std::string message;
};
std::optional<Missing> stat_problem(const std::filesystem::path& path, struct stat& st) {
  if (::stat(path.c_str(), &st) == 0) return std::nullopt;
  const int err = errno;
  if (err == ENOENT) return Missing{err, fmt::format("{} does not exist", path.string())};
  if (err == ELOOP)
    return Missing{err, fmt::format("{} is a symbolic link loop ({}); expected a plugin file or "
                                    "a directory",
                                    path.string(), std::strerror(err))};
  return Missing{err, fmt::format("{} cannot be examined: {}", path.string(), std::strerror(err))};
}

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
  std::vector<std::string> only;  // restrict_to(): empty, every plugin

  bool fail(PluginFailure f) {
    log_format(LogLevel::warn, "plugin {}: {}", to_string(f.kind), f.message);
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

  struct stat st {};
  if (auto missing = stat_problem(file, st))
    return impl_->fail({file, PluginFailureKind::load_failed, std::move(missing->message)});

  auto opened = detail::open_plugin(file);
  if (auto* f = std::get_if<PluginFailure>(&opened)) return impl_->fail(std::move(*f));
  auto& plugin = std::get<detail::OpenedPlugin>(opened);
  const std::string name = plugin.name();
  const std::string version = plugin.version();

  if (!impl_->only.empty() &&
      std::find(impl_->only.begin(), impl_->only.end(), name) == impl_->only.end()) {
    impl_->kept_libraries.push_back(plugin.library);
    impl_->tried.erase(identity);  // lifting the restriction later loads it
    log_format(LogLevel::debug, "plugin '{}' in {} skipped: not among the plugins asked for", name,
               file.string());
    return false;
  }

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

  // A deferred plugin is created on first use (deferred_ops.h).
  if (auto identity = detail::deferred_identity(plugin)) {
    auto ops = std::make_shared<detail::DeferredOps>(plugin, file, *identity);
    impl_->plugins.push_back(
        LoadedPlugin{file, name, version, std::move(ops), std::move(*identity)});
    log_format(LogLevel::info, "loaded plugin '{}' {} from {} (created on first use)", name,
               version, file.string());
    return true;
  }

  auto created = detail::create_plugin_ops(plugin, file);
  if (auto* f = std::get_if<PluginFailure>(&created)) {
    impl_->kept_libraries.push_back(plugin.library);
    return impl_->fail(std::move(*f));
  }
  impl_->plugins.push_back(LoadedPlugin{
      file, name, version, std::move(std::get<std::shared_ptr<QuantizationOps>>(created)), {}});
  log_format(LogLevel::info, "loaded plugin '{}' {} from {}", name, version, file.string());
  return true;
}

void PluginRegistry::load_from(const std::vector<std::filesystem::path>& paths) {
  for (const auto& entry : paths) {
    struct stat st {};
    if (auto missing = stat_problem(entry, st)) {
      if (missing->err == ENOENT) {
        // The installed directory of a build tree, say: normal, and load_default() warns about
        // QFORGE_PLUGIN_PATH entries that do not exist.
        log_format(LogLevel::debug, "plugin search path entry {} does not exist; skipped",
                   entry.string());
      } else if (impl_->tried.insert(file_identity(absolute_path(entry))).second) {
        impl_->fail({absolute_path(entry), PluginFailureKind::load_failed,
                     "plugin search path entry " + missing->message});
      }
      continue;
    }
    if (S_ISDIR(st.st_mode)) {
      std::error_code ec;
      const auto candidates = detail::plugin_candidates(entry, ec);
      // An unreadable directory may hold the plugins the user expects: say so, once.
      if (ec && impl_->tried.insert(file_identity(absolute_path(entry))).second)
        impl_->fail({absolute_path(entry), PluginFailureKind::load_failed,
                     fmt::format("plugin directory {} cannot be read: {}; plugins in it are not "
                                 "loaded",
                                 entry.string(), ec.message())});
      for (const auto& file : candidates) load_file(file);
    } else {
      // A file named explicitly is loaded whatever its name; load_file() refuses what is not a
      // regular file without opening it for long.
      load_file(entry);
    }
  }
}

void PluginRegistry::load_default() {
  // A typo in QFORGE_PLUGIN_PATH would otherwise go unnoticed.
  // (Other problems with an entry, a symbolic link loop say, are failures of load_from().)
  for (const auto& entry : detail::plugin_path_from_environment()) {
    struct stat st {};
    if (auto missing = stat_problem(entry, st); missing && missing->err == ENOENT) {
      log_format(LogLevel::warn, "{} names {}, which does not exist", detail::kPluginPathVariable,
                 entry.string());
    }
  }
  load_from(default_search_path());
}

void PluginRegistry::restrict_to(std::vector<std::string> names) { impl_->only = std::move(names); }

const std::vector<LoadedPlugin>& PluginRegistry::plugins() const noexcept { return impl_->plugins; }

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
