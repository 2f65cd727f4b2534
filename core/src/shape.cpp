#include "qforge/shape.h"

#include "qforge/error.h"

namespace qforge {

std::int64_t element_count(const Shape& shape) {
  std::int64_t n = 1;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] < 0)
      throw Error(ErrorCode::shape_mismatch, "shape " + to_string(shape) + ": extent " +
                                                 std::to_string(i) + " is " +
                                                 std::to_string(shape[i]) + "; expected >= 0");
    n *= shape[i];
  }
  return n;
}

std::string to_string(const Shape& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

}  // namespace qforge
