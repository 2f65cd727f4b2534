#include "accelerator/cache_file.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <random>
#include <system_error>

#include <chrono>

#include <spdlog/spdlog.h>

#include "qforge/error.h"
#include "qforge/log.h"

namespace qforge::accel {
namespace {

[[noreturn]] void io_error(const std::string& what, const std::filesystem::path& p, int err) {
  throw Error(ErrorCode::io, "tuning cache: cannot " + what + " " + p.string() + ": " +
                                 std::strerror(err));
}

void write_all(int fd, const std::string& data, const std::filesystem::path& p) {
  std::size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      io_error("write", p, errno);
    }
    done += static_cast<std::size_t>(n);
  }
}

std::string utc_format(const char* format) {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char text[32];
  std::strftime(text, sizeof text, format, &tm);
  return text;
}

}  // namespace

std::filesystem::path lock_path(const std::filesystem::path& cache) {
  return std::filesystem::path(cache.string() + ".lock");
}

FileLock::FileLock(const std::filesystem::path& lock_file, bool exclusive) {
  fd_ = ::open(lock_file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) io_error("open the lock file", lock_file, errno);
  while (::flock(fd_, exclusive ? LOCK_EX : LOCK_SH) != 0) {
    if (errno == EINTR) continue;
    const int err = errno;
    ::close(fd_);
    io_error("lock", lock_file, err);
  }
}

FileLock::~FileLock() {
  if (fd_ >= 0) ::close(fd_);  // closing releases the flock
}

std::string temporary_prefix(const std::filesystem::path& file) {
  return file.filename().string() + ".tmp-";
}

void remove_stale_temporaries(const std::filesystem::path& file, double min_age_s) {
  const std::filesystem::path dir = file.parent_path().empty() ? "." : file.parent_path();
  const std::string prefix = temporary_prefix(file);
  const auto now = std::filesystem::file_time_type::clock::now();
  std::error_code ec;
  std::filesystem::directory_iterator it(dir, ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind(prefix, 0) != 0) continue;
    std::error_code type_ec;
    if (!it->is_regular_file(type_ec) || type_ec) continue;
    const auto modified = it->last_write_time(type_ec);
    if (type_ec || std::chrono::duration<double>(now - modified).count() < min_age_s) continue;
    if (std::filesystem::remove(it->path(), type_ec) && !type_ec)
      logger().info("tuning cache: removed {}, a temporary file left by a writer that did not "
                    "finish",
                    it->path().string());
  }
}

void write_atomically(const std::filesystem::path& file, const std::string& contents) {
  const std::filesystem::path dir = file.parent_path().empty() ? "." : file.parent_path();
  std::random_device rd;
  const std::filesystem::path tmp =
      dir / (temporary_prefix(file) + std::to_string(::getpid()) + "-" + std::to_string(rd()));
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) io_error("create", tmp, errno);
  try {
    write_all(fd, contents, tmp);
    if (::fsync(fd) != 0) io_error("fsync", tmp, errno);
  } catch (...) {
    ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
  ::close(fd);
  if (::rename(tmp.c_str(), file.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    io_error("replace", file, err);
  }
  // The rename is durable only once the directory entry is.
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

std::filesystem::path set_aside(const std::filesystem::path& file, const std::string& what) {
  const std::string base = file.string() + "." + what + "-" + utc_now_compact();
  std::filesystem::path target = base;
  std::error_code ec;
  for (int i = 2; std::filesystem::exists(target, ec) && i < 1000; ++i)
    target = base + "-" + std::to_string(i);
  if (::rename(file.c_str(), target.c_str()) != 0) return {};
  return target;
}

std::string utc_now_iso() { return utc_format("%Y-%m-%dT%H:%M:%SZ"); }
std::string utc_now_compact() { return utc_format("%Y%m%dT%H%M%SZ"); }

}  // namespace qforge::accel
