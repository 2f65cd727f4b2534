// The grids tests are instantiated over. The shape grids (DESIGN.md "Correctness method"):
// extents 1..8, powers of two +-1, primes, M = 1 (GEMV), N = 1, and K not a multiple of any tile.
// Shapes are fixed so that test names (which carry them) are the same in every run; the data is
// what changes from run to run.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "qforge/dtype.h"
#include "qforge/shape.h"

namespace qforge::conformance {

struct MatmulShape {
  std::int64_t m, n, k;
  std::string name() const {
    return "m" + std::to_string(m) + "_n" + std::to_string(n) + "_k" + std::to_string(k);
  }
};

// K runs over {1, 3, 7, 16, 17, 31, 33, 64, 65, 127, 129}: odd, prime, 2^j +- 1, so no kernel
// tile (4, 8, 16, 32, 64) divides most of them and every remainder path runs.
inline const std::vector<MatmulShape>& matmul_shapes() {
  static const std::vector<MatmulShape> shapes = {
      {1, 1, 1},   {1, 17, 33}, {1, 64, 129}, {2, 3, 3},    {3, 5, 7},    {5, 8, 16},  {7, 31, 17},
      {4, 16, 31}, {8, 7, 64},  {3, 13, 65},  {16, 9, 127}, {33, 1, 129}, {13, 17, 33}};
  return shapes;
}

// An (A, B) dtype pair of a matmul, named as XNNPACK does: u8xs8, s8xs4, s16xs16.
struct DTypePair {
  DType a, b;
  std::string name() const { return short_name(a) + "x" + short_name(b); }
  static std::string short_name(DType t) {
    switch (t) {
      case DType::int8: return "s8";
      case DType::uint8: return "u8";
      case DType::int16: return "s16";
      case DType::uint16: return "u16";
      case DType::int4: return "s4";
      case DType::uint4: return "u4";
      case DType::binary: return "b1";
    }
    return "?";
  }
};

}  // namespace qforge::conformance
