// Whole-file reads for the loaders (the atomic write is public: serialize.h).
#pragma once

#include <filesystem>
#include <string>

namespace qforge::calibration {

// The file's bytes; throws qforge::Error (io) naming `who`, the path and the system's reason.
std::string read_file(const std::filesystem::path& path, const std::string& who);

}  // namespace qforge::calibration
