#include "qforge/shape.h"

#include "qforge/checked_size.h"

namespace qforge {

std::int64_t element_count(const Shape& shape) { return checked_element_count("shape", shape); }

std::string to_string(const Shape& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

}  // namespace qforge
