// ConvTester: conv_integer, qlinear_conv and conv_dequant on one convolution geometry.
//
//   ConvTester().geometry(g).x_dtype(DType::uint8).w_per_channel(true)
//       .bias(ConvBias::int32).activation(ConvActivation::relu6).test(OpKind::qlinear_conv,
//       target, rng);
//
// Zero points and scales are drawn afresh for every case, codes uniform over each dtype's range;
// qlinear_conv's output scale is chosen from the accumulator's spread so that most outputs land
// inside the code range and some saturate. Integer outputs must equal the reference exactly,
// conv_dequant's within tolerance::kConvDequant.
#pragma once

#include <string>

#include "harness/op_case.h"
#include "harness/seed.h"
#include "qforge/op_desc.h"

namespace qforge::conformance {

// A convolution's geometry, everything but params: applied to a ConvDesc by apply().
struct ConvGeometry {
  std::string label;  // test-name part
  ConvLayout layout = ConvLayout::nchw;
  std::int64_t n = 1, c = 1, h = 1, w = 1, o = 1, kh = 1, kw = 1;
  std::int64_t stride_h = 1, stride_w = 1, dilation_h = 1, dilation_w = 1;
  std::int64_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
  AutoPad auto_pad = AutoPad::notset;  // overrides the pads when set
  std::int64_t groups = 1;
  std::string name() const { return label + "_" + std::string(to_string(layout)); }
  void apply(ConvDesc& d) const;
};

class ConvTester {
 public:
  ConvTester& geometry(ConvGeometry v) {
    geometry_ = std::move(v);
    return *this;
  }
  ConvTester& x_dtype(DType v) {
    x_dtype_ = v;
    return *this;
  }
  ConvTester& w_dtype(DType v) {
    w_dtype_ = v;
    return *this;
  }
  // One (scale, zero point) pair per output channel; per tensor otherwise.
  ConvTester& w_per_channel(bool v) {
    w_per_channel_ = v;
    return *this;
  }
  ConvTester& bias(ConvBias v) {
    bias_ = v;
    return *this;
  }
  ConvTester& y_dtype(DType v) {
    y_dtype_ = v;
    return *this;
  }
  ConvTester& requant_mode(RequantMode v) {
    mode_ = v;
    return *this;
  }
  ConvTester& activation(ConvActivation v) {
    activation_ = v;
    return *this;
  }

  void test(OpKind op, Target& target, Rng& rng) const;

 private:
  ConvGeometry geometry_;
  DType x_dtype_ = DType::uint8;
  DType w_dtype_ = DType::int8;
  bool w_per_channel_ = false;
  ConvBias bias_ = ConvBias::none;
  DType y_dtype_ = DType::uint8;
  RequantMode mode_ = RequantMode::float_multiplier;
  ConvActivation activation_ = ConvActivation::none;
};

}  // namespace qforge::conformance
