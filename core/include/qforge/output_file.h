// Writing a whole output file so that nothing is ever lost or half-written: the tuning cache,
// calibration files, benchmark outputs and every exported model go through here.
//
// The contents go to a temporary file next to the target ("<name>.tmp-<pid>-<random>"), which is
// fsync'ed and renamed over the target; then the directory is fsync'ed. rename() within one file
// system is atomic, so a reader, or the file system after a crash, sees the previous file or the
// new one, never a mix. When any step fails the temporary file is removed, the target is left
// as it was, and qforge::Error (io) names the file's role, the path and the system's reason.
// Temporary files of the same target older than a minute, left by a writer that was killed
// between create and rename, are removed first (a live writer's is seconds old at most).
// The replacement keeps the replaced file's permissions. A symbolic link is followed: the link
// stays and the file it names is replaced. A character device, FIFO or socket (/dev/null,
// /dev/stdout, a pipe) is written in place, as a stream, never renamed over; a directory is an
// error.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "qforge/export.h"

namespace qforge {

// `what` names the file's role in messages ("tuning cache", "calibration file").
QFORGE_API void write_file_atomically(const std::filesystem::path& path, std::string_view contents,
                                      std::string_view what = "output file");

// "<name>.tmp-": the prefix of the temporary files write_file_atomically() makes for `path`.
QFORGE_API std::string temporary_file_prefix(const std::filesystem::path& path);

// Removes temporary files of `path` (temporary_file_prefix) last modified more than
// `min_age_s` seconds ago; returns how many. Each removal is logged at info; failures are
// ignored (another process may be removing the same file).
QFORGE_API int remove_stale_temporary_files(const std::filesystem::path& path,
                                            double min_age_s = 60);

}  // namespace qforge
