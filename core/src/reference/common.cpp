// Error helpers shared by the reference ops.
#include <cstdio>

#include "reference/detail.h"

namespace qforge::reference::detail {

std::string float_text(float v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(v));
  return buf;
}

void fail(ErrorCode code, const std::string& op, const std::string& what) {
  throw Error(code, "reference::" + op + ": " + what);
}

void require_data(const std::string& op, const char* what, const void* p, std::int64_t count) {
  if (p == nullptr && count > 0)
    fail(ErrorCode::invalid_argument, op,
         std::string(what) + " is null for " + std::to_string(count) +
             " elements; expected a valid host pointer");
}

void require_non_negative(const std::string& op, const char* what, std::int64_t v) {
  if (v < 0)
    fail(ErrorCode::invalid_argument, op,
         std::string(what) + " = " + std::to_string(v) + "; expected >= 0");
}

}  // namespace qforge::reference::detail
