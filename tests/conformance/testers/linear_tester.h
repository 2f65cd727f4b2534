// LinearTester: the quantized nn.Linear of LinearDesc, forward and backward.
//
//   LinearTester().m(3).n(7).k(17).per_channel(true).bias(true).test_forward(target, rng);
//
// Forward: Xq (int8) and the returned Xq params must be identical to the reference's, Y within
// tolerance::kLinearForward. Backward (fed the reference forward's Xq and params): dX, dW and
// db within tolerance::kLinearBackward.
#pragma once

#include "harness/op_case.h"
#include "harness/seed.h"

namespace qforge::conformance {

class LinearTester {
 public:
  LinearTester& m(std::int64_t v) {
    m_ = v;
    return *this;
  }
  LinearTester& n(std::int64_t v) {
    n_ = v;
    return *this;
  }
  LinearTester& k(std::int64_t v) {
    k_ = v;
    return *this;
  }
  // W's params per output channel (axis 0) instead of per tensor.
  LinearTester& per_channel(bool v) {
    per_channel_ = v;
    return *this;
  }
  LinearTester& bias(bool v) {
    bias_ = v;
    return *this;
  }

  void test_forward(Target& target, Rng& rng) const;
  void test_backward(Target& target, Rng& rng) const;

 private:
  struct Weights;
  Weights make_weights(Rng& rng) const;

  std::int64_t m_ = 1, n_ = 1, k_ = 1;
  bool per_channel_ = false;
  bool bias_ = false;
};

}  // namespace qforge::conformance
