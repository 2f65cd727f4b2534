// qforge's one error type. Every failure the library reports is a qforge::Error whose message
// says what was wrong and what was expected, e.g.
//   "QuantizationParams: scale[3] = nan; expected a finite value > 0".
// The code lets programs branch without parsing text.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

#include "qforge/export.h"

namespace qforge {

enum class ErrorCode {
  invalid_argument,  // a value outside what the operation accepts (bad param, wrong dtype)
  shape_mismatch,    // shapes that do not fit together
  overflow,          // a result that does not fit the output type (int32 accumulator)
  unsupported,       // a valid request this backend or kernel does not implement
  unavailable,       // the hardware or driver a backend needs is not here
  plugin_load,       // a plugin library could not be loaded or is incompatible
  io,                // a file could not be read or written
  corrupt_data,      // a file or buffer whose contents are malformed
  backend,           // a device API call failed (CUDA, Vulkan, oneDNN); message names the call
  internal,          // a broken invariant inside qforge
};

QFORGE_API std::string_view to_string(ErrorCode code) noexcept;

class QFORGE_API Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message);
  ErrorCode code() const noexcept { return code_; }

 private:
  ErrorCode code_;
};

}  // namespace qforge
