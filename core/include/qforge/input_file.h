// Reading a whole input file that may be hostile (a tuning cache, a workload file, a calibration
// file): only a regular file is read, and no more than a stated number of bytes.
//
// The file is opened with O_NONBLOCK and checked with fstat() on the opened descriptor before
// any read, so a FIFO, a device (/dev/zero), a socket or a directory is refused at once instead
// of blocking in open() or read() or growing without bound. A symlink loop is reported as one
// (ELOOP: "Too many levels of symbolic links").
#pragma once

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "qforge/export.h"

namespace qforge {

// The default size limit for input files: 64 MiB. A tuning cache holds at most 16 machines'
// entries (a few hundred KiB), workload and calibration files are smaller still, so anything
// larger is damaged or not what it claims to be.
inline constexpr std::size_t kMaxInputFileBytes = std::size_t{64} << 20;

// The file's bytes. `what` names the file's role in messages ("tuning cache", "workload file").
// Throws qforge::Error:
//   io           the file cannot be opened or read (the system's reason: missing, permission,
//                symlink loop), or it is not a regular file (names what it is: a FIFO, ...);
//   corrupt_data it holds more than `max_bytes` bytes (both sizes named).
QFORGE_API std::string read_input_file(const std::filesystem::path& path, std::string_view what,
                                       std::size_t max_bytes = kMaxInputFileBytes);

// The same, but nullopt when the file does not exist (ENOENT) instead of an error.
QFORGE_API std::optional<std::string> read_input_file_if_exists(
    const std::filesystem::path& path, std::string_view what,
    std::size_t max_bytes = kMaxInputFileBytes);

// "a FIFO", "a character device", "a directory", ... for a stat() st_mode; "a regular file"
// for S_IFREG.
QFORGE_API std::string_view file_type_name(unsigned mode) noexcept;

}  // namespace qforge
