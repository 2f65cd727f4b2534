// The steps that turn one file into a QuantizationOps, each with its own failure kind:
// ELF check -> dlopen -> entry symbol -> descriptor (ABI) check -> create().
// The registry runs them in order and adds what needs its state (duplicate names).
#pragma once

#include <boost/dll/shared_library.hpp>
#include <filesystem>
#include <memory>
#include <variant>

#include "qforge/plugin/abi.h"
#include "qforge/registry.h"

namespace qforge::detail {

// A library that passed every check up to create(): its descriptor is safe to read.
struct OpenedPlugin {
  std::shared_ptr<boost::dll::shared_library> library;
  const qforge_plugin_descriptor* descriptor = nullptr;
};

// ELF check, dlopen, entry symbol and ABI check. `file` should be absolute.
std::variant<OpenedPlugin, PluginFailure> open_plugin(const std::filesystem::path& file);

// Calls the descriptor's create(). The returned shared_ptr destroys the object through the
// descriptor's destroy() and keeps the library loaded until then.
std::variant<std::shared_ptr<QuantizationOps>, PluginFailure> create_plugin_ops(
    const OpenedPlugin& plugin, const std::filesystem::path& file);

}  // namespace qforge::detail
