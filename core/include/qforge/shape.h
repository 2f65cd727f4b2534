// Tensor shapes: row-major, the last axis contiguous.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "qforge/export.h"

namespace qforge {

using Shape = std::vector<std::int64_t>;

// Number of elements; 1 for a scalar (rank 0), 0 when any extent is 0. Throws qforge::Error on a
// negative extent and on one beyond qforge's size limit (checked_size.h: extents and element
// counts of at most 2^48; checked_element_count names the operand in its messages).
QFORGE_API std::int64_t element_count(const Shape& shape);
// "[2, 3, 4]"
QFORGE_API std::string to_string(const Shape& shape);

}  // namespace qforge
