// Pieces of a device plugin's deferred identity (qforge/plugin/abi.h,
// QFORGE_PLUGIN_DEFERRED_IDENTITY_SYMBOL): each returns lines of text, read from files and the
// environment only, so that computing them starts no device runtime. Together they must change
// whenever the devices or drivers the runtime would find change: a driver upgrade replaces its
// library files (another size, modification time or inode), a new GPU shows on the PCI bus or
// in the NVIDIA driver's /proc files, and the variables that select drivers and devices are
// named with their values.
#pragma once

#include <filesystem>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace qforge::device_identity {

// "file PATH -> TARGET size=N mtime=NS inode=I" (TARGET: symbolic links resolved), or
// "file PATH absent".
std::string file(const std::filesystem::path& path);

// The text of a small file (at most 64 KiB are read), "" when it cannot be read.
std::string text_of(const std::filesystem::path& path);

// "env NAME=VALUE" or "env NAME unset", one line per name.
std::string environment(std::initializer_list<const char*> names);

// One line per PCI function of class display controller (0x03....): its address, vendor,
// device, subsystem and revision ids.
std::string pci_display_devices();

// The directories a library named without a path is looked for in: LD_LIBRARY_PATH's entries,
// then the usual system ones.
std::vector<std::filesystem::path> library_dirs();

// file() of every copy of `soname` in library_dirs() that exists, "library SONAME absent" when
// none does.
std::string library(std::string_view soname);

// The files of `dir` (not recursive) whose extension is `ext` (".json"; "" for every one), sorted;
// none when the directory does not exist.
std::vector<std::filesystem::path> files_in(const std::filesystem::path& dir, std::string_view ext);

}  // namespace qforge::device_identity
