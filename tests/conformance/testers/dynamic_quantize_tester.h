// DynamicQuantizeTester: ONNX DynamicQuantizeLinear (float32 -> uint8 with computed s, z).
//
//   DynamicQuantizeTester().shape({4, 17}).data(DynamicData::all_negative).test(target, rng);
//
// The codes must equal the reference's and the returned params must be identical (same scale
// bits, same zero point): s and z are defined by a handful of float32 operations.
#pragma once

#include "harness/op_case.h"
#include "harness/seed.h"
#include "qforge/shape.h"

namespace qforge::conformance {

enum class DynamicData {
  mixed,         // normal values of random size, both signs
  all_positive,  // min(0, min x) = 0: z must be 0
  all_negative,  // max(0, max x) = 0: z must be 255
  all_zero,      // zero range: s = 1 by DESIGN.md
  constant,      // one repeated value
  tiny,          // magnitudes around 1e-30
  non_finite,    // NaN and inf mixed in: whatever the reference does (throw or not), match it
};
std::string_view to_string(DynamicData d);

class DynamicQuantizeTester {
 public:
  DynamicQuantizeTester& shape(Shape v) {
    shape_ = std::move(v);
    return *this;
  }
  DynamicQuantizeTester& data(DynamicData v) {
    data_ = v;
    return *this;
  }

  void test(Target& target, Rng& rng) const;

 private:
  Shape shape_ = {8};
  DynamicData data_ = DynamicData::mixed;
};

}  // namespace qforge::conformance
