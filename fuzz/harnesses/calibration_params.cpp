// Calibration params JSON (load_params reads files through it): any text gives params or a
// qforge::Error; any other exception, crash or sanitizer report is a finding.
#include <string_view>

#include "qforge/calibration/serialize.h"
#include "qforge/error.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    qforge::calibration::params_from_json(
        std::string_view(reinterpret_cast<const char*>(data), size));
  } catch (const qforge::Error&) {
  }
  return 0;
}
