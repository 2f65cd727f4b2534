// read_input_file(): see qforge/input_file.h.
#include "qforge/input_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include "qforge/error.h"

namespace qforge {
namespace {

// Closes the descriptor on every path out.
struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

[[noreturn]] void io_error(std::string_view what, const std::filesystem::path& p,
                           std::string_view step, int err) {
  throw Error(ErrorCode::io,
              fmt::format("{} {}: cannot {}: {}", what, p.string(), step, std::strerror(err)));
}

std::string size_text(std::size_t bytes) {
  if (bytes >= (std::size_t{1} << 20) && bytes % (std::size_t{1} << 20) == 0)
    return fmt::format("{} MiB", bytes >> 20);
  return fmt::format("{} bytes", bytes);
}

[[noreturn]] void too_large(std::string_view what, const std::filesystem::path& p,
                            std::string_view size, std::size_t max_bytes) {
  throw Error(ErrorCode::corrupt_data,
              fmt::format("{} {} holds {}; expected at most {} (a damaged file or not a {})", what,
                          p.string(), size, size_text(max_bytes), what));
}

std::optional<std::string> read_impl(const std::filesystem::path& path, std::string_view what,
                                     std::size_t max_bytes, bool missing_ok) {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer forever.
  Fd f{::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)};
  if (f.fd < 0) {
    const int err = errno;
    if (err == ENOENT && missing_ok) return std::nullopt;
    if (err == ELOOP)
      throw Error(ErrorCode::io, fmt::format("{} {}: cannot open: it is a symbolic link loop ({})",
                                             what, path.string(), std::strerror(err)));
    io_error(what, path, "open", err);
  }
  struct stat st {};
  if (::fstat(f.fd, &st) != 0) io_error(what, path, "stat", errno);
  if (!S_ISREG(st.st_mode))
    throw Error(ErrorCode::io, fmt::format("{} {} is {}; expected a regular file", what,
                                           path.string(), file_type_name(st.st_mode)));
  if (st.st_size < 0 || static_cast<std::uint64_t>(st.st_size) > max_bytes)
    too_large(what, path, fmt::format("{} bytes", static_cast<long long>(st.st_size)), max_bytes);
  std::string data;
  data.reserve(static_cast<std::size_t>(st.st_size));
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(f.fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      io_error(what, path, "read", errno);
    }
    if (n == 0) break;
    // The file may grow while it is read: the limit holds for what is actually read.
    if (data.size() + static_cast<std::size_t>(n) > max_bytes)
      too_large(what, path, "more than " + size_text(max_bytes), max_bytes);
    data.append(buf, static_cast<std::size_t>(n));
  }
  return data;
}

}  // namespace

std::string_view file_type_name(unsigned mode) noexcept {
  switch (mode & S_IFMT) {
    case S_IFREG: return "a regular file";
    case S_IFDIR: return "a directory";
    case S_IFIFO: return "a FIFO (named pipe)";
    case S_IFCHR: return "a character device";
    case S_IFBLK: return "a block device";
    case S_IFSOCK: return "a socket";
    case S_IFLNK: return "a symbolic link";
    default: return "a file of unknown type";
  }
}

std::string read_input_file(const std::filesystem::path& path, std::string_view what,
                            std::size_t max_bytes) {
  return *read_impl(path, what, max_bytes, false);
}

std::optional<std::string> read_input_file_if_exists(const std::filesystem::path& path,
                                                     std::string_view what, std::size_t max_bytes) {
  return read_impl(path, what, max_bytes, true);
}

}  // namespace qforge
