// Reading and parsing untrusted protobuf bytes with a size limit. Private.
#pragma once

#include <google/protobuf/message_lite.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string_view>
#include <vector>

namespace qforge::model::onnx_io {

// The whole file, after checking that it exists, is a regular file and is at most max_bytes.
// Throws qforge::Error (io, or invalid_argument for a file over the limit).
std::vector<std::byte> read_file_limited(const std::filesystem::path& path,
                                         std::uint64_t max_bytes);

// Parses `bytes` into `message` with protobuf's total-bytes limit set to max_bytes; a parse
// failure or trailing garbage is qforge::Error (corrupt_data) naming `source` and `kind`.
void parse_limited(std::span<const std::byte> bytes, std::string_view source, std::string_view kind,
                   std::uint64_t max_bytes, google::protobuf::MessageLite& message);

}  // namespace qforge::model::onnx_io
