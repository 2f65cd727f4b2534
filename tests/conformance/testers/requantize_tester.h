// RequantizeTester: int32 -> int8/uint8 in either RequantMode, per tensor or per channel.
//
//   RequantizeTester().shape({4, 33}).axis(1).out_dtype(DType::uint8)
//       .mode(RequantMode::fixed_point).test(target, rng);
//
// Inputs mix moderate accumulators, exact ties (power-of-two multipliers on odd values) and the
// int32 extremes; multipliers are log-uniform in [2^-24, 1) for fixed_point (TFLite's domain)
// and [2^-24, 2) for float_multiplier. The output must equal the reference exactly.
#pragma once

#include <optional>

#include "harness/op_case.h"
#include "harness/seed.h"
#include "qforge/shape.h"

namespace qforge::conformance {

class RequantizeTester {
 public:
  RequantizeTester& shape(Shape v) {
    shape_ = std::move(v);
    return *this;
  }
  // Per-channel along `axis`; per tensor when never called.
  RequantizeTester& axis(int v) {
    axis_ = v;
    return *this;
  }
  RequantizeTester& out_dtype(DType v) {
    out_dtype_ = v;
    return *this;
  }
  RequantizeTester& mode(RequantMode v) {
    mode_ = v;
    return *this;
  }
  // Every multiplier 1/2 and every input a small odd value: each product is an exact tie, which
  // the float mode rounds to even and the fixed-point mode rounds up, so the two modes give
  // different bytes on about half the elements whatever the seed.
  RequantizeTester& ties_only(bool v = true) {
    ties_only_ = v;
    return *this;
  }

  void test(Target& target, Rng& rng) const;

 private:
  Shape shape_ = {8};
  std::optional<int> axis_;
  DType out_dtype_ = DType::int8;
  RequantMode mode_ = RequantMode::float_multiplier;
  bool ties_only_ = false;
};

}  // namespace qforge::conformance
