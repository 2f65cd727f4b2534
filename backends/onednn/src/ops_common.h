// Small checks shared by the ops_*.cpp files.
#pragma once

#include <cstdint>
#include <string>

#include "qforge/error.h"

namespace qforge::onednn {

// Throws invalid_argument when a tensor of `count` elements comes with a null pointer (the
// reference accepts null only for empty tensors).
inline void require_data(const char* op, const char* what, const void* p, std::int64_t count) {
  if (count > 0 && p == nullptr)
    throw Error(ErrorCode::invalid_argument, std::string("onednn: ") + op + ": " + what +
                                                 " is null for " + std::to_string(count) +
                                                 " elements; expected a host pointer");
}

}  // namespace qforge::onednn
