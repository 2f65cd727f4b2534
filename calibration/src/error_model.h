// The expected squared quantization error over one histogram (methods.h, expected_mse), set up
// once per histogram so that the MSE search can score ~1900 candidates cheaply.
#pragma once

#include <span>
#include <vector>

#include "qforge/calibration/histogram.h"
#include "qforge/params.h"

namespace qforge::calibration {

class ErrorModel {
 public:
  explicit ErrorModel(const Histogram& histogram);
  // Expected squared error per value of per-tensor affine / symmetric params (throws otherwise).
  double mse(const QuantizationParams& params);

 private:
  std::span<const double> positive_, negative_;
  std::vector<double> magnitude_;
  double total_, width_;
  std::vector<double> g_;  // scratch: the antiderivative at each bin edge
};

}  // namespace qforge::calibration
