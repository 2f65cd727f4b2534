// The calibration library's atomic write is core's (qforge/output_file.h), kept under this name
// because it is part of the calibration API.
#include "qforge/calibration/serialize.h"
#include "qforge/output_file.h"

namespace qforge::calibration {

void write_file_atomically(const std::filesystem::path& path, std::string_view content) {
  qforge::write_file_atomically(path, content, "calibration file");
}

}  // namespace qforge::calibration
