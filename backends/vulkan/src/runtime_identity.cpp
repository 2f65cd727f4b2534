#include "runtime_identity.h"

#include <dlfcn.h>
#include <vulkan/vulkan.h>

#include <cstdlib>
#include <filesystem>
#include <vector>

#include "device_identity.h"
#include "qforge/fnv1a.h"

namespace qforge::vulkan {
namespace {

namespace id = qforge::device_identity;
namespace fs = std::filesystem;

std::vector<std::string> split(const char* text, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (const char* p = text; p && *p; ++p) {
    if (*p == sep) {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else {
      cur += *p;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

// The directories the loader reads driver manifests from (its documented search order on
// Linux: XDG_CONFIG_DIRS, SYSCONFDIR, XDG_DATA_DIRS, XDG_DATA_HOME, each + /vulkan/icd.d).
std::vector<fs::path> manifest_dirs() {
  std::vector<fs::path> bases;
  const char* config = std::getenv("XDG_CONFIG_DIRS");
  for (const auto& d : split(config && *config ? config : "/etc/xdg", ':')) bases.emplace_back(d);
  bases.emplace_back("/etc");
  bases.emplace_back("/usr/local/etc");
  const char* data = std::getenv("XDG_DATA_DIRS");
  for (const auto& d : split(data && *data ? data : "/usr/local/share:/usr/share", ':'))
    bases.emplace_back(d);
  if (const char* home = std::getenv("XDG_DATA_HOME"); home && *home) bases.emplace_back(home);
  else if (const char* h = std::getenv("HOME"); h && *h)
    bases.emplace_back(fs::path(h) / ".local/share");
  std::vector<fs::path> dirs;
  for (const auto& b : bases) dirs.push_back(b / "vulkan/icd.d");
  return dirs;
}

// "library_path": "..." of a manifest, or "".
std::string library_path_of(const std::string& manifest) {
  const auto key = manifest.find("\"library_path\"");
  if (key == std::string::npos) return {};
  const auto open = manifest.find('"', manifest.find(':', key) + 1);
  if (open == std::string::npos) return {};
  const auto close = manifest.find('"', open + 1);
  return close == std::string::npos ? std::string() : manifest.substr(open + 1, close - open - 1);
}

std::string manifest(const fs::path& file) {
  const std::string text = id::text_of(file);
  std::string out = id::file(file) + " fnv=" + std::to_string(qforge::fnv1a(text)) + "\n";
  const std::string lib = library_path_of(text);
  if (lib.empty()) return out;
  if (lib.find('/') == std::string::npos) return out + id::library(lib);
  const fs::path p = fs::path(lib).is_absolute() ? fs::path(lib) : file.parent_path() / lib;
  return out + id::file(p) + "\n";
}

}  // namespace

std::string runtime_identity() {
  std::string out =
      id::environment({"VK_ICD_FILENAMES", "VK_DRIVER_FILES", "VK_ADD_DRIVER_FILES",
                       "VK_LOADER_DRIVERS_SELECT", "VK_LOADER_DRIVERS_DISABLE",
                       "VK_INSTANCE_LAYERS", "VK_LOADER_LAYERS_ENABLE", "VK_LOADER_LAYERS_DISABLE",
                       "QFORGE_VULKAN_DEVICE", "QFORGE_VULKAN_VALIDATION", "LP_NUM_THREADS"});
  // The loader itself (linked by this plugin, so already mapped).
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&vkGetInstanceProcAddr), &info) != 0 && info.dli_fname)
    out += id::file(info.dli_fname) + "\n";
  for (const char* var : {"VK_ICD_FILENAMES", "VK_DRIVER_FILES", "VK_ADD_DRIVER_FILES"})
    for (const auto& entry : split(std::getenv(var), ':')) {
      std::error_code ec;
      if (fs::is_directory(entry, ec))
        for (const auto& f : id::files_in(entry, ".json")) out += manifest(f);
      else out += manifest(entry);
    }
  for (const auto& dir : manifest_dirs())
    for (const auto& f : id::files_in(dir, ".json")) out += manifest(f);
  out += id::pci_display_devices();
  // The NVIDIA driver's version, when its kernel module is loaded (its Vulkan driver's library
  // is named in a manifest as well).
  if (const std::string v = id::text_of("/proc/driver/nvidia/version"); !v.empty())
    out += "nvidia " + std::to_string(qforge::fnv1a(v)) + "\n";
  return out;
}

}  // namespace qforge::vulkan
