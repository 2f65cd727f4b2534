// Private access to Histogram's storage for the observer's per-channel kernels.
#pragma once

#include "qforge/calibration/histogram.h"

namespace qforge::calibration {

struct HistogramAccess {
  // The 2 * bins counters, [negative | positive] by |x| bin.
  static double* counts(Histogram& h) noexcept { return h.counts_.data(); }
  // Records that `n` more values were counted into counts() directly.
  static void add_total(Histogram& h, double n) noexcept { h.total_ += n; }
  // Folds a batch's finite extremes in: grows the range to max(|lo|, |hi|) (re-binning the
  // counts so far) and updates min / max. lo > hi (a batch without finite values) is a no-op.
  static void include(Histogram& h, float lo, float hi);
};

}  // namespace qforge::calibration
