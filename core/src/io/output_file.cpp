#include "qforge/output_file.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <random>
#include <string>
#include <system_error>

#include "log_format.h"
#include "qforge/error.h"

namespace qforge {
namespace {

[[noreturn]] void io_error(std::string_view what, const std::string& step,
                           const std::filesystem::path& p, int err) {
  throw Error(ErrorCode::io, std::string(what) + ": cannot " + step + " " + p.string() + ": " +
                                 std::strerror(err));
}

void write_all(int fd, std::string_view data, std::string_view what,
               const std::filesystem::path& p) {
  std::size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      io_error(what, "write", p, errno);
    }
    done += static_cast<std::size_t>(n);
  }
}

std::filesystem::path directory_of(const std::filesystem::path& path) {
  return path.parent_path().empty() ? std::filesystem::path(".") : path.parent_path();
}

}  // namespace

std::string temporary_file_prefix(const std::filesystem::path& path) {
  return path.filename().string() + ".tmp-";
}

int remove_stale_temporary_files(const std::filesystem::path& path, double min_age_s) {
  const std::string prefix = temporary_file_prefix(path);
  const auto now = std::filesystem::file_time_type::clock::now();
  int removed = 0;
  std::error_code ec;
  std::filesystem::directory_iterator it(directory_of(path), ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind(prefix, 0) != 0) continue;
    std::error_code type_ec;
    if (!it->is_regular_file(type_ec) || type_ec) continue;
    const auto modified = it->last_write_time(type_ec);
    if (type_ec || std::chrono::duration<double>(now - modified).count() < min_age_s) continue;
    if (std::filesystem::remove(it->path(), type_ec) && !type_ec) {
      ++removed;
      log_format(LogLevel::info,
                 "removed {}, a temporary file left by a writer that did not finish",
                 it->path().string());
    }
  }
  return removed;
}

namespace {

// A symbolic link is followed, so that the link stays and the file it names is replaced.
std::filesystem::path resolve_links(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::is_symlink(std::filesystem::symlink_status(path, ec)) || ec) return path;
  std::filesystem::path target = std::filesystem::weakly_canonical(path, ec);
  return ec ? path : target;
}

// Character devices, FIFOs and sockets (/dev/null, /dev/stdout, a pipe) take the contents as a
// stream: renaming over one would replace the device node itself with a regular file.
void write_in_place(const std::filesystem::path& path, std::string_view contents,
                    std::string_view what) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) io_error(what, "open", path, errno);
  try {
    write_all(fd, contents, what, path);
  } catch (...) {
    ::close(fd);
    throw;
  }
  if (::close(fd) != 0) io_error(what, "close", path, errno);
}

}  // namespace

void write_file_atomically(const std::filesystem::path& requested, std::string_view contents,
                           std::string_view what) {
  if (requested.filename().empty())
    throw Error(ErrorCode::invalid_argument, std::string(what) + ": '" + requested.string() +
                                                 "' has no file name; expected a path to a file");
  const std::filesystem::path path = resolve_links(requested);
  struct stat existing {};
  const bool exists = ::stat(path.c_str(), &existing) == 0;
  if (exists && S_ISDIR(existing.st_mode))
    throw Error(ErrorCode::io, std::string(what) + ": " + requested.string() +
                                   " is a directory; expected a path to a file");
  if (exists && !S_ISREG(existing.st_mode)) return write_in_place(path, contents, what);
  remove_stale_temporary_files(path);
  const std::filesystem::path dir = directory_of(path);
  std::random_device rd;
  const auto tag = (static_cast<unsigned long long>(rd()) << 32) ^ rd();
  const std::filesystem::path tmp =
      dir / (temporary_file_prefix(path) + std::to_string(::getpid()) + "-" + std::to_string(tag));
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) io_error(what, "create the temporary file", tmp, errno);
  try {
    // The replacement keeps the permissions of the file it replaces.
    if (exists && ::fchmod(fd, existing.st_mode & 07777) != 0)
      io_error(what, "set the permissions of", tmp, errno);
    write_all(fd, contents, what, tmp);
    if (::fsync(fd) != 0) io_error(what, "fsync", tmp, errno);
  } catch (...) {
    ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
  if (::close(fd) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    io_error(what, "close", tmp, err);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    io_error(what, "replace", path, err);
  }
  // The rename is durable only once the directory entry is; a failure here leaves a complete
  // file in place, so it is not reported.
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

}  // namespace qforge
