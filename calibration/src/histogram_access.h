// Private access to Histogram's storage for the observer's per-channel kernels.
#pragma once

#include "qforge/calibration/histogram.h"

namespace qforge::calibration {

struct HistogramAccess {
  // The 2 * bins counters, [negative | positive] by |x| bin.
  static double* counts(Histogram& h) noexcept { return h.counts_.data(); }
  // Folds a batch's finite extremes in: grows the range to max(|lo|, |hi|) (re-binning the
  // counts so far) and updates min / max. lo > hi (a batch without finite values) is a no-op.
  static void include(Histogram& h, float lo, float hi);
};

}  // namespace qforge::calibration
