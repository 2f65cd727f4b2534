// NVIDIA pytorch-quantization, calib/histogram.py _compute_amax_percentile:
//   total = calib_hist.sum(); cdf = np.cumsum(calib_hist / total)
//   idx = np.searchsorted(cdf, percentile / 100); calib_amax = calib_bin_edges[idx]
#include <algorithm>

#include "qforge/calibration/methods.h"

namespace qforge::calibration {

double percentile_threshold(std::span<const double> counts, double bin_width, double percentile,
                            bool interpolate) {
  double total = 0.0;
  for (double c : counts) total += c;
  if (!(total > 0.0)) return 0.0;
  const double target = percentile / 100.0;
  double cdf = 0.0;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    const double share = counts[i] / total;
    const double before = cdf;
    cdf += share;
    if (cdf >= target) {  // searchsorted(side='left'): the first i with cdf[i] >= target
      double frac = 0.0;
      if (interpolate && share > 0.0) frac = std::clamp((target - before) / share, 0.0, 1.0);
      return (static_cast<double>(i) + frac) * bin_width;
    }
  }
  // Rounding left the cumulative share just below 1: the top edge (bin_edges[len]).
  return static_cast<double>(counts.size()) * bin_width;
}

}  // namespace qforge::calibration
