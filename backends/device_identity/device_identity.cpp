#include "device_identity.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <system_error>

namespace qforge::device_identity {
namespace {

constexpr std::size_t kMaxText = 64 * 1024;

std::vector<std::string> split(std::string_view text, char sep) {
  std::vector<std::string> out;
  std::size_t begin = 0;
  while (begin <= text.size()) {
    std::size_t end = text.find(sep, begin);
    if (end == std::string_view::npos) end = text.size();
    if (end > begin) out.emplace_back(text.substr(begin, end - begin));
    begin = end + 1;
  }
  return out;
}

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

}  // namespace

std::string file(const std::filesystem::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return "file " + path.string() + " absent";
  std::error_code ec;
  const auto target = std::filesystem::canonical(path, ec);
  return "file " + path.string() + " -> " + (ec ? path.string() : target.string()) +
         " size=" + std::to_string(static_cast<long long>(st.st_size)) + " mtime=" +
         std::to_string(static_cast<long long>(st.st_mtim.tv_sec) * 1000000000LL +
                        st.st_mtim.tv_nsec) +
         " inode=" + std::to_string(static_cast<unsigned long long>(st.st_ino));
}

std::string text_of(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  std::string text(kMaxText, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(in.gcount()));
  return text;
}

std::string environment(std::initializer_list<const char*> names) {
  std::string out;
  for (const char* name : names) {
    const char* value = std::getenv(name);
    out += value ? "env " + std::string(name) + "=" + value + "\n"
                 : "env " + std::string(name) + " unset\n";
  }
  return out;
}

std::string pci_display_devices() {
  std::vector<std::string> lines;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/sys/bus/pci/devices", ec)) {
    const std::string cls = trimmed(text_of(entry.path() / "class"));
    if (cls.rfind("0x03", 0) != 0) continue;
    std::string line = "pci " + entry.path().filename().string() + " class=" + cls;
    for (const char* field :
         {"vendor", "device", "subsystem_vendor", "subsystem_device", "revision"})
      line += std::string(" ") + field + "=" + trimmed(text_of(entry.path() / field));
    lines.push_back(std::move(line));
  }
  std::sort(lines.begin(), lines.end());
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out.empty() ? "pci no display devices visible\n" : out;
}

std::vector<std::filesystem::path> library_dirs() {
  std::vector<std::filesystem::path> dirs;
  if (const char* env = std::getenv("LD_LIBRARY_PATH"))
    for (const auto& d : split(env, ':')) dirs.emplace_back(d);
  for (const char* d :
       {"/usr/local/lib", "/usr/local/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu",
        "/lib/x86_64-linux-gnu", "/usr/lib64", "/lib64", "/usr/lib", "/lib",
        "/usr/local/cuda/lib64", "/usr/local/cuda/compat", "/usr/lib/wsl/lib"})
    dirs.emplace_back(d);
  return dirs;
}

std::string library(std::string_view soname) {
  std::string out;
  std::vector<std::filesystem::path> seen;
  for (const auto& dir : library_dirs()) {
    const auto candidate = dir / soname;
    std::error_code ec;
    if (!std::filesystem::exists(candidate, ec)) continue;
    const auto target = std::filesystem::canonical(candidate, ec);
    if (!ec && std::find(seen.begin(), seen.end(), target) != seen.end()) continue;
    if (!ec) seen.push_back(target);
    out += file(candidate) + "\n";
  }
  return out.empty() ? "library " + std::string(soname) + " absent\n" : out;
}

std::vector<std::filesystem::path> files_in(const std::filesystem::path& dir,
                                            std::string_view ext) {
  std::vector<std::filesystem::path> files;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec))
    if (ext.empty() || entry.path().extension() == ext) files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace qforge::device_identity
