// Estimates shared by the kinds' OpInfo::work: in double, so that they never throw or overflow.
#pragma once

#include "qforge/dtype.h"
#include "qforge/shape.h"

namespace qforge::op_table_detail {

inline double element_estimate(const Shape& s) {
  double n = 1;
  for (const auto e : s) n *= static_cast<double>(e < 0 ? 0 : e);
  return n;
}

inline double bytes_per(DType t) { return traits(t).bits / 8.0; }

}  // namespace qforge::op_table_detail
