// File mechanics of the tuning cache: an advisory lock shared by every process that uses the
// file, and setting a damaged file aside. Reads go through qforge::read_input_file
// (qforge/input_file.h), writes through qforge::write_file_atomically (qforge/output_file.h).
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace qforge::accel {

// flock() on "<cache>.lock" (created if missing), released on destruction. The lock file is
// separate from the cache because the cache itself is replaced by rename on every write, and a
// lock on a replaced inode would protect nothing.
class FileLock {
 public:
  FileLock(const std::filesystem::path& lock_file, bool exclusive);
  ~FileLock();
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_ = -1;
};

std::filesystem::path lock_path(const std::filesystem::path& cache);

// Renames `file` to "<file>.<what>-<UTC timestamp>" (with a counter if taken); returns the new
// name, or an empty path when the rename failed.
std::filesystem::path set_aside(const std::filesystem::path& file, const std::string& what);

// "2024-06-11T10:15:00Z" and the compact "20240611T101500Z".
std::string utc_now_iso();
std::string utc_now_compact();

}  // namespace qforge::accel
