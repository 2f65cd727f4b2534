#include "accelerator/cache_file.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <system_error>

#include "qforge/error.h"
#include "qforge/log.h"

namespace qforge::accel {
namespace {

[[noreturn]] void io_error(const std::string& what, const std::filesystem::path& p, int err) {
  throw Error(ErrorCode::io,
              "tuning cache: cannot " + what + " " + p.string() + ": " + std::strerror(err));
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
