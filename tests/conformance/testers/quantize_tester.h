// QuantizeTester: quantize and dequantize of one tensor, after XNNPACK's tester classes.
//
//   QuantizeTester().dtype(DType::int4).scheme(Scheme::block_affine(3)).shape({2, 17})
//       .float_type(FloatType::f16).specials(true).test_quantize(target, rng);
//
// Each call draws fresh params and data from rng, runs qforge::reference for the expected
// result and the plugin through run_case(): the codes must be equal bit for bit, and
// dequantize's float32 output too (tolerances.h).
#pragma once

#include "harness/op_case.h"
#include "harness/seed.h"
#include "qforge/half.h"
#include "qforge/scheme.h"
#include "qforge/shape.h"

namespace qforge::conformance {

class QuantizeTester {
 public:
  QuantizeTester& dtype(DType v) {
    dtype_ = v;
    return *this;
  }
  QuantizeTester& scheme(const Scheme& v) {
    scheme_ = v;
    return *this;
  }
  QuantizeTester& shape(Shape v) {
    shape_ = std::move(v);
    return *this;
  }
  // The type of quantize's float input.
  QuantizeTester& float_type(FloatType v) {
    float_type_ = v;
    return *this;
  }
  // Mix NaN, +-inf and huge values into quantize's input.
  QuantizeTester& specials(bool v) {
    specials_ = v;
    return *this;
  }

  void test_quantize(Target& target, Rng& rng) const;
  void test_dequantize(Target& target, Rng& rng) const;

 private:
  DType dtype_ = DType::int8;
  Scheme scheme_ = Scheme::per_tensor_affine();
  Shape shape_ = {8};
  FloatType float_type_ = FloatType::f32;
  bool specials_ = false;
};

}  // namespace qforge::conformance
