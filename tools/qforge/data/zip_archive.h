// The entries of a zip archive, as numpy's savez and savez_compressed write .npz files, read
// through libzip (which checks the archive's structure on open and each entry's CRC when the
// entry has been read to its end). Encrypted entries and compression methods other than stored
// and deflate are refused.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "byte_stream.h"
#include "stored_array.h"

namespace qforge::cli {

struct ZipEntry {
  std::string name;
  std::uint64_t index = 0;  // libzip's index of the entry
  int method = 0;           // 0 stored, 8 deflated
  std::uint64_t uncompressed_size = 0;
};

// Throws qforge::Error: io when the file cannot be opened; corrupt_data naming the archive when
// it is not a zip archive or is inconsistent (entries or a central directory outside the file),
// or holds more than limits.max_files entries.
std::vector<ZipEntry> list_zip(const std::filesystem::path& path, const DataLimits& limits = {});

// The entry's uncompressed bytes. Throws qforge::Error: unsupported for encryption or a method
// other than stored and deflate; corrupt_data (while reading) for damaged data or a CRC that
// does not match.
std::unique_ptr<ByteStream> open_zip_entry(const std::filesystem::path& path,
                                           const ZipEntry& entry);

}  // namespace qforge::cli
