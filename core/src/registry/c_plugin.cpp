#include "registry/c_plugin.h"

#include <fmt/format.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "qforge/error.h"
#include "registry/c_backend.h"

namespace qforge::detail {
namespace {

// The smallest table this host accepts: every function of version 1.
constexpr std::size_t kMinTableSize =
    offsetof(qforge_c_plugin, plan_destroy) + sizeof(qforge_c_plugin::plan_destroy);

PluginFailure failure(const std::filesystem::path& file, PluginFailureKind kind,
                      std::string message) {
  return PluginFailure{file, kind, std::move(message)};
}

}  // namespace

std::optional<std::variant<OpenedCPlugin, PluginFailure>> open_c_plugin(
    const std::shared_ptr<boost::dll::shared_library>& library, const std::filesystem::path& file) {
  if (!library->has(QFORGE_C_ENTRY_SYMBOL)) return std::nullopt;
  auto entry = library->get<const qforge_c_plugin*(std::uint32_t)>(QFORGE_C_ENTRY_SYMBOL);
  const qforge_c_plugin* table = entry(QFORGE_C_API_VERSION);
  if (table == nullptr)
    return failure(file, PluginFailureKind::missing_entry,
                   fmt::format("{}: {}({}) returned NULL; expected a C plugin table (the plugin "
                               "cannot serve C API version {})",
                               file.string(), QFORGE_C_ENTRY_SYMBOL, QFORGE_C_API_VERSION,
                               QFORGE_C_API_VERSION));
  // version and struct_size lead every version of the table; nothing else is read before both
  // are checked.
  if (table->version == 0 || table->version > QFORGE_C_API_VERSION)
    return failure(file, PluginFailureKind::abi_mismatch,
                   fmt::format("{} was built for qforge C plugin API version {}, but this qforge "
                               "implements versions 1 to {}; use a qforge at least as new as the "
                               "plugin's SDK",
                               file.string(), table->version, QFORGE_C_API_VERSION));
  if (table->struct_size < kMinTableSize)
    return failure(file, PluginFailureKind::abi_mismatch,
                   fmt::format("{}: its C plugin table has {} bytes; version {} of the table has "
                               "at least {} (every function up to plan_destroy)",
                               file.string(), table->struct_size, table->version, kMinTableSize));
  std::string_view missing;
  if (table->name == nullptr || *table->name == '\0') missing = "name";
  else if (!table->status_code) missing = "status_code";
  else if (!table->status_message) missing = "status_message";
  else if (!table->status_release) missing = "status_release";
  else if (!table->create_backend) missing = "create_backend";
  else if (!table->destroy_backend) missing = "destroy_backend";
  else if (!table->availability) missing = "availability";
  else if (!table->device_count) missing = "device_count";
  else if (!table->device_info) missing = "device_info";
  else if (!table->supports) missing = "supports";
  else if (!table->make_plan) missing = "make_plan";
  else if (!table->plan_info) missing = "plan_info";
  else if (!table->plan_run) missing = "plan_run";
  else if (!table->plan_destroy) missing = "plan_destroy";
  if (!missing.empty())
    return failure(file, PluginFailureKind::abi_mismatch,
                   fmt::format("{}: the C plugin table has no {}; every entry but set_option must "
                               "be set",
                               file.string(), missing));
  return OpenedCPlugin{library, table};
}

std::variant<std::shared_ptr<QuantizationOps>, PluginFailure> create_c_plugin_ops(
    const OpenedCPlugin& plugin, const std::filesystem::path& file) {
  auto backend = std::make_shared<CBackend>();
  backend->library = plugin.library;
  backend->table = plugin.table;
  backend->name = plugin.table->name;
  qforge_c_backend* raw = nullptr;
  try {
    backend->check(plugin.table->create_backend(&raw), "create_backend");
  } catch (const Error& e) {
    return failure(file, PluginFailureKind::create_failed,
                   fmt::format("plugin '{}' in {} failed to initialise: {}", backend->name,
                               file.string(), e.what()));
  }
  if (raw == nullptr)
    return failure(file, PluginFailureKind::create_failed,
                   fmt::format("plugin '{}' in {} failed to initialise: create_backend returned "
                               "no backend and no status",
                               backend->name, file.string()));
  backend->backend = raw;
  return make_c_backend_ops(std::move(backend));
}

}  // namespace qforge::detail
