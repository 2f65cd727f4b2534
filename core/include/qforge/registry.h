// The plugin registry: finds, loads and keeps backend plugins.
//
// Search path, in order (first hit of a plugin name wins; later copies are reported as shadowed):
//   1. QFORGE_PLUGIN_PATH, colon-separated directories (or files)
//   2. the installed plugin directory (<prefix>/lib/qforge/plugins, fixed at configure time),
//      then <directory of libqforge_runtime>/qforge/plugins when that differs (a moved install)
//   3. the directory of the running executable
// In each directory every file named libqforge_plugin_*.so is a candidate.
//
// Loading never takes the process down or hangs it. Only regular files are opened (a FIFO, a
// device or a directory named like a plugin is reported, never read), and before dlopen() the
// whole ELF header, the program header table, every segment's file contents and the section
// header table must lie inside the file (a truncated plugin would otherwise die in the loader
// with SIGBUS). Each failure — a truncated or damaged file, not a shared library, a library for
// another architecture, a missing dependency library (named), a missing entry symbol, an ABI
// version or struct size mismatch (both named), a create() that fails or throws, a symbolic
// link loop, a search directory that cannot be read — is logged once and kept as a
// PluginFailure; the other plugins keep working. A deferred plugin (one that exports
// qforge_plugin_deferred_identity) is created on first use instead: a create() that fails then
// makes it unusable, with the same message in availability() and every call's error. Libraries are
// never unloaded while the registry lives (buffers and ops objects may point into them).
#pragma once

#include <cstddef>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "qforge/export.h"
#include "qforge/ops.h"

namespace qforge {

enum class PluginFailureKind {
  not_shared_library,
  wrong_architecture,
  missing_dependency,
  load_failed,  // any other dlopen failure (message from the loader)
  missing_entry,
  abi_mismatch,
  create_failed,
  shadowed,  // a plugin of the same name was already loaded from an earlier path
};
QFORGE_API std::string_view to_string(PluginFailureKind kind) noexcept;

struct PluginFailure {
  std::filesystem::path path;
  PluginFailureKind kind;
  std::string message;  // complete sentence: what was wrong and what was expected
};

struct LoadedPlugin {
  std::filesystem::path path;
  std::string name;
  std::string version;
  std::shared_ptr<QuantizationOps> ops;  // keeps the library loaded
  // Non-empty for a deferred plugin (qforge/plugin/abi.h): `ops` calls the plugin's create()
  // on first use of anything but name() and version(), so a program that never asks this
  // plugin anything never starts its device runtime. The text is the plugin's cheap identity of
  // that runtime's devices and drivers, which the tuning cache's fingerprint uses in place of
  // devices().
  std::string deferred_identity;
};

// The check the registry runs on a candidate file before dlopen(), on an image in memory (the
// whole file's bytes): nullopt when it is an ELF shared object for this machine whose headers
// and segments lie inside it, else the failure (kind not_shared_library or wrong_architecture)
// with `name` as its path. Never throws, whatever the bytes; meant for fuzzing and for tools.
QFORGE_API std::optional<PluginFailure> check_plugin_image(
    std::span<const std::byte> bytes, const std::filesystem::path& name = "<memory>");

class QFORGE_API PluginRegistry {
 public:
  PluginRegistry();
  ~PluginRegistry();
  PluginRegistry(const PluginRegistry&) = delete;
  PluginRegistry& operator=(const PluginRegistry&) = delete;

  // The search path described above, in order.
  static std::vector<std::filesystem::path> default_search_path();

  // Scans the directories (or plugin files) and loads every candidate not loaded yet.
  void load_from(const std::vector<std::filesystem::path>& paths);
  void load_default();
  // Loads one file; returns false and records a PluginFailure when it fails.
  bool load_file(const std::filesystem::path& file);

  // Plugins loaded from now on whose name is not in `names` are skipped: opened to read their
  // name, never created, neither listed nor reported as failures (a debug log says so). An
  // empty list lifts the restriction. For programs told which plugins to use (`--plugins`).
  void restrict_to(std::vector<std::string> names);

  const std::vector<LoadedPlugin>& plugins() const noexcept;
  const std::vector<PluginFailure>& failures() const noexcept;
  // The plugin named `name`, or nullptr.
  QuantizationOps* find(std::string_view name) const;

  // A process-wide registry loaded from the default search path on first use.
  static PluginRegistry& global();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace qforge
