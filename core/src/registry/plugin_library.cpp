#include "registry/plugin_library.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <exception>
#include <string>
#include <string_view>
#include <system_error>

#include "registry/elf_check.h"

namespace qforge::detail {
namespace {

PluginFailure failure(const std::filesystem::path& file, PluginFailureKind kind,
                      std::string message) {
  return PluginFailure{file, kind, std::move(message)};
}

// Which library the loader could not find, from its message, or "" when the message is about
// something else. glibc: "libfoo.so.1: cannot open shared object file: No such file or
// directory"; musl: "Error loading shared library libfoo.so.1: No such file or directory
// (needed by /path/plugin.so)".
std::string missing_library_in(std::string_view loader_message) {
  constexpr std::string_view glibc = ": cannot open shared object file";
  if (const auto at = loader_message.find(glibc); at != std::string_view::npos) {
    return std::string(loader_message.substr(0, at));
  }
  constexpr std::string_view musl = "Error loading shared library ";
  if (const auto at = loader_message.find(musl); at != std::string_view::npos) {
    auto rest = loader_message.substr(at + musl.size());
    return std::string(rest.substr(0, rest.find(':')));
  }
  return {};
}

PluginFailure classify_dlopen_failure(const std::filesystem::path& file,
                                      std::string_view loader_message) {
  const std::string missing = missing_library_in(loader_message);
  // The message can also be about the plugin file itself (permissions, a file that vanished):
  // that is not a missing dependency.
  if (!missing.empty() && missing != file.string() &&
      std::filesystem::path(missing).filename() != file.filename()) {
    return failure(
        file, PluginFailureKind::missing_dependency,
        fmt::format("{} needs the library {}, which the dynamic loader cannot find (it searches "
                    "the plugin's RUNPATH, LD_LIBRARY_PATH, the ld.so cache and the system "
                    "library directories); install {} or add its directory to LD_LIBRARY_PATH "
                    "[loader: {}]",
                    file.string(), missing, missing, loader_message));
  }
  return failure(file, PluginFailureKind::load_failed,
                 fmt::format("{} could not be loaded: {}", file.string(), loader_message));
}

PluginFailure abi_failure(const std::filesystem::path& file, const qforge_plugin_descriptor& d) {
  return failure(
      file, PluginFailureKind::abi_mismatch,
      fmt::format("{} was built for qforge plugin ABI version {} (descriptor of {} bytes), but "
                  "this qforge expects ABI version {} (descriptor of {} bytes); rebuild the "
                  "plugin against this qforge's plugin SDK",
                  file.string(), d.abi_version, d.struct_size, QFORGE_PLUGIN_ABI_VERSION,
                  sizeof(qforge_plugin_descriptor)));
}

}  // namespace

std::variant<OpenedPlugin, PluginFailure> open_plugin(const std::filesystem::path& file) {
  if (auto problem = check_elf_file(file)) {
    return failure(file, problem->kind, std::move(problem->message));
  }

  auto library = std::make_shared<boost::dll::shared_library>();
  std::error_code ec;
  // RTLD_NOW: an unresolved symbol is reported here, not as a crash in the middle of an op.
  // RTLD_LOCAL: plugins cannot see (or clash with) each other's symbols.
  library->load(file, boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local, ec);
  if (ec || !library->is_loaded()) {
    // Boost.DLL leaves the loader's own message in dlerror() on failure.
    const char* loader = ::dlerror();
    return classify_dlopen_failure(
        file, loader ? std::string_view(loader) : std::string_view(ec.message()));
  }

  if (auto c = open_c_plugin(library, file)) {
    if (auto* f = std::get_if<PluginFailure>(&*c)) return std::move(*f);
    const auto& opened = std::get<OpenedCPlugin>(*c);
    return OpenedPlugin{std::move(library), nullptr, opened.table};
  }

  if (!library->has(QFORGE_PLUGIN_ENTRY_SYMBOL)) {
    return failure(file, PluginFailureKind::missing_entry,
                   fmt::format("{} does not export the entry symbol {} (nor {}); a qforge plugin "
                               "defines it with QFORGE_DEFINE_PLUGIN (qforge/plugin/sdk.h) and is "
                               "built with qforge_add_plugin()",
                               file.string(), QFORGE_PLUGIN_ENTRY_SYMBOL, QFORGE_C_ENTRY_SYMBOL));
  }
  auto entry = library->get<const qforge_plugin_descriptor*()>(QFORGE_PLUGIN_ENTRY_SYMBOL);
  const qforge_plugin_descriptor* descriptor = nullptr;
  try {
    descriptor = entry();
  } catch (const std::exception& e) {
    return failure(
        file, PluginFailureKind::missing_entry,
        fmt::format("{}: {}() threw: {}", file.string(), QFORGE_PLUGIN_ENTRY_SYMBOL, e.what()));
  } catch (...) {
    return failure(file, PluginFailureKind::missing_entry,
                   fmt::format("{}: {}() threw an unknown exception", file.string(),
                               QFORGE_PLUGIN_ENTRY_SYMBOL));
  }
  if (descriptor == nullptr) {
    return failure(file, PluginFailureKind::missing_entry,
                   fmt::format("{}: {}() returned NULL; expected a plugin descriptor",
                               file.string(), QFORGE_PLUGIN_ENTRY_SYMBOL));
  }
  // abi_version and struct_size lead every version of the descriptor, so they are safe to read
  // whatever the plugin was built with; nothing else is until both match.
  if (descriptor->abi_version != QFORGE_PLUGIN_ABI_VERSION ||
      descriptor->struct_size != sizeof(qforge_plugin_descriptor)) {
    return abi_failure(file, *descriptor);
  }
  std::string_view missing_field;
  if (descriptor->name == nullptr || *descriptor->name == '\0') missing_field = "name";
  else if (descriptor->create == nullptr) missing_field = "create";
  else if (descriptor->destroy == nullptr) missing_field = "destroy";
  if (!missing_field.empty()) {
    return failure(file, PluginFailureKind::abi_mismatch,
                   fmt::format("{}: the plugin descriptor has no {}; expected name, create and "
                               "destroy to be set",
                               file.string(), missing_field));
  }
  return OpenedPlugin{std::move(library), descriptor};
}

std::variant<std::shared_ptr<QuantizationOps>, PluginFailure> create_plugin_ops(
    const OpenedPlugin& plugin, const std::filesystem::path& file) {
  if (plugin.c_table != nullptr)
    return create_c_plugin_ops(OpenedCPlugin{plugin.library, plugin.c_table}, file);
  const qforge_plugin_descriptor& d = *plugin.descriptor;
  void* raw = nullptr;
  std::string reason;
  // create() must not throw (abi.h), but a hand-written plugin might: never let it through.
  try {
    raw = d.create();
  } catch (const std::exception& e) {
    reason = fmt::format("create() threw: {}", e.what());
  } catch (...) {
    reason = "create() threw an unknown exception";
  }
  if (raw == nullptr) {
    if (reason.empty()) {
      const char* last = d.last_error ? d.last_error() : nullptr;
      reason = last ? std::string(last) : std::string("create() returned NULL and gave no reason");
    }
    return failure(
        file, PluginFailureKind::create_failed,
        fmt::format("plugin '{}' in {} failed to initialise: {}", d.name, file.string(), reason));
  }
  auto* ops = static_cast<QuantizationOps*>(raw);
  // The deleter holds the library: the object's code stays mapped until it is destroyed.
  return std::shared_ptr<QuantizationOps>(
      ops, [library = plugin.library, destroy = d.destroy](QuantizationOps* p) { destroy(p); });
}

}  // namespace qforge::detail
