// Atomic file replacement (POSIX): write a temporary file in the target's directory, fsync it,
// rename it over the target, fsync the directory. rename() within one file system is atomic, so
// readers see the old file or the new one; on any failure the temporary file is removed and the
// target is untouched.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>

#include "qforge/calibration/serialize.h"
#include "qforge/error.h"

namespace qforge::calibration {
namespace {

[[noreturn]] void io_error(const std::string& what, int err) {
  throw Error(ErrorCode::io, what + ": " + std::strerror(err));
}

std::string temporary_name(const std::filesystem::path& target) {
  std::random_device rd;
  const auto tag = (static_cast<unsigned long long>(rd()) << 32) ^ rd();
  char suffix[64];
  std::snprintf(suffix, sizeof suffix, ".tmp-%ld-%016llx", static_cast<long>(::getpid()), tag);
  // Built by appending: GCC 12 at -O3 warns (-Wrestrict, a false positive) on "." + s + t.
  std::string name = ".";
  name += target.filename().string();
  name += suffix;
  return name;
}

// Closes the descriptor and removes the temporary file unless released (success).
struct PendingFile {
  int fd = -1;
  std::filesystem::path path;
  bool keep = false;
  ~PendingFile() {
    if (fd >= 0) ::close(fd);
    if (!keep) ::unlink(path.c_str());
  }
};

}  // namespace

void write_file_atomically(const std::filesystem::path& path, std::string_view content) {
  const std::string who = "write_file_atomically(" + path.string() + ")";
  if (path.filename().empty())
    throw Error(ErrorCode::invalid_argument, who + ": no file name; expected a path to a file");
  const std::filesystem::path dir = path.has_parent_path() ? path.parent_path() : ".";
  PendingFile tmp;
  tmp.path = dir / temporary_name(path);
  tmp.fd = ::open(tmp.path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (tmp.fd < 0) {
    const int err = errno;
    tmp.keep = true;  // nothing was created
    io_error(who + ": cannot create the temporary file " + tmp.path.string(), err);
  }
  const char* p = content.data();
  std::size_t left = content.size();
  while (left > 0) {
    const ssize_t n = ::write(tmp.fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      io_error(who + ": writing the temporary file " + tmp.path.string() + " failed", errno);
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  if (::fsync(tmp.fd) != 0)
    io_error(who + ": fsync of the temporary file " + tmp.path.string() + " failed", errno);
  const int fd = tmp.fd;
  tmp.fd = -1;
  if (::close(fd) != 0)
    io_error(who + ": closing the temporary file " + tmp.path.string() + " failed", errno);
  if (::rename(tmp.path.c_str(), path.c_str()) != 0)
    io_error(who + ": renaming " + tmp.path.string() + " over the target failed", errno);
  tmp.keep = true;
  // Make the rename itself durable; a failure here leaves a complete file in place, so it is
  // not reported.
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

}  // namespace qforge::calibration
