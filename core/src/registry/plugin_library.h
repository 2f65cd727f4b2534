// The steps that turn one file into a QuantizationOps, each with its own failure kind:
// ELF check -> dlopen -> entry symbol -> descriptor (ABI) check -> create().
// The registry runs them in order and adds what needs its state (duplicate names). A library
// that exports the C entry (qforge/plugin/c_api.h) is loaded through it (c_plugin.h), whether
// or not it also exports the C++ one.
#pragma once

#include <boost/dll/shared_library.hpp>
#include <filesystem>
#include <memory>
#include <string>
#include <variant>

#include "qforge/plugin/abi.h"
#include "qforge/registry.h"
#include "registry/c_plugin.h"

namespace qforge::detail {

// A library that passed every check up to create(): its descriptor (C++ entry) or its table
// (C entry) is safe to read. Exactly one of the two is set.
struct OpenedPlugin {
  std::shared_ptr<boost::dll::shared_library> library;
  const qforge_plugin_descriptor* descriptor = nullptr;
  const qforge_c_plugin* c_table = nullptr;

  std::string name() const { return c_table ? c_table->name : descriptor->name; }
  std::string version() const {
    const char* v = c_table ? c_table->plugin_version : descriptor->version;
    return v ? v : "";
  }
};

// ELF check, dlopen, entry symbol and ABI check. `file` should be absolute.
std::variant<OpenedPlugin, PluginFailure> open_plugin(const std::filesystem::path& file);

// Calls the descriptor's create() (the table's create_backend for a C plugin). The returned
// shared_ptr destroys the object through the descriptor's destroy() and keeps the library loaded
// until then.
std::variant<std::shared_ptr<QuantizationOps>, PluginFailure> create_plugin_ops(
    const OpenedPlugin& plugin, const std::filesystem::path& file);

}  // namespace qforge::detail
