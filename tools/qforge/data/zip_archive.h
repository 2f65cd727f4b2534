// The entries of a zip archive, as numpy's savez and savez_compressed write .npz files: the end
// of central directory record (zip64 too), the central directory, and each entry's local
// header, read from a regular file with every offset and size checked against the file.
// Entries are stored (method 0) or deflated (method 8, inflated by zlib); encrypted entries and
// other methods are refused. CRCs are not verified: the .npy inside checks its own length.
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
  int method = 0;  // 0 stored, 8 deflated
  std::uint64_t compressed_size = 0;
  std::uint64_t uncompressed_size = 0;
  std::uint64_t local_header_offset = 0;
};

// Throws qforge::Error (corrupt_data) naming the archive for a missing end record, a central
// directory outside the file, a bad signature, or more than limits.max_files entries.
std::vector<ZipEntry> list_zip(const std::filesystem::path& path, const DataLimits& limits = {});

// The entry's uncompressed bytes. Throws qforge::Error: unsupported for encryption or a method
// other than stored and deflate; corrupt_data for a local header that disagrees or data
// outside the file.
std::unique_ptr<ByteStream> open_zip_entry(const std::filesystem::path& path,
                                           const ZipEntry& entry);

}  // namespace qforge::cli
