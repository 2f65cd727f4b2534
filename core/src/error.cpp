#include "qforge/error.h"

namespace qforge {

std::string_view to_string(ErrorCode code) noexcept {
  switch (code) {
    case ErrorCode::invalid_argument: return "invalid_argument";
    case ErrorCode::shape_mismatch: return "shape_mismatch";
    case ErrorCode::overflow: return "overflow";
    case ErrorCode::unsupported: return "unsupported";
    case ErrorCode::unavailable: return "unavailable";
    case ErrorCode::plugin_load: return "plugin_load";
    case ErrorCode::io: return "io";
    case ErrorCode::corrupt_data: return "corrupt_data";
    case ErrorCode::backend: return "backend";
    case ErrorCode::internal: return "internal";
  }
  return "unknown";
}

Error::Error(ErrorCode code, const std::string& message)
    : std::runtime_error(message), code_(code) {}

}  // namespace qforge
