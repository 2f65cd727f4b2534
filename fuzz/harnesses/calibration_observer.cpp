// Calibration observer JSON (load_observer reads files through it): any text gives an observer
// or a qforge::Error. A restored observer must also be usable: asking it for params either
// works or throws qforge::Error. Any other exception, crash or sanitizer report is a finding.
#include <string_view>

#include "qforge/calibration/serialize.h"
#include "qforge/error.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    const auto observer = qforge::calibration::observer_from_json(
        std::string_view(reinterpret_cast<const char*>(data), size));
    observer->params(qforge::calibration::Target{});
  } catch (const qforge::Error&) {
  }
  return 0;
}
