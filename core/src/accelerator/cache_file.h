// File mechanics of the tuning cache: an advisory lock shared by every process that uses the
// file, atomic replacement (and the removal of temporary files a killed writer left), and
// setting a damaged file aside. Reads go through qforge::read_input_file (qforge/input_file.h).
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

// The prefix of write_atomically()'s temporary files for `file`: "<name>.tmp-" (then
// "<pid>-<random>").
std::string temporary_prefix(const std::filesystem::path& file);

// Removes temporary files of `file` (temporary_prefix) last modified more than `min_age_s`
// seconds ago: left by a writer killed between create and rename. A live writer's file is
// seconds old at most. Each removal is logged at info; failures are ignored.
void remove_stale_temporaries(const std::filesystem::path& file, double min_age_s = 60);

// Writes a temporary file next to `file`, fsyncs it, renames it over `file` and fsyncs the
// directory, so that readers see the old contents or the new, never a mix, even after a crash.
void write_atomically(const std::filesystem::path& file, const std::string& contents);

// Renames `file` to "<file>.<what>-<UTC timestamp>" (with a counter if taken); returns the new
// name, or an empty path when the rename failed.
std::filesystem::path set_aside(const std::filesystem::path& file, const std::string& what);

// "2024-06-11T10:15:00Z" and the compact "20240611T101500Z".
std::string utc_now_iso();
std::string utc_now_compact();

}  // namespace qforge::accel
