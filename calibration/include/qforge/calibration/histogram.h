// A histogram of observed values for the histogram calibration methods.
//
// Layout: `bins` bins of |x| over [0, A] (A = limit() = the largest |x| seen, bin width
// w = A / bins), kept separately for negative and positive values. Summing the two sides gives
// exactly the |x| histogram that NVIDIA's pytorch-quantization HistogramCalibrator collects
// (2048 bins of |x| from 0 to amax; torch.histc, the top edge in the last bin), on which the
// entropy, percentile and MSE searches run; keeping the sign lets asymmetric (affine) methods
// see each side. A value goes to |x| bin min(floor(|x| / w), bins - 1) of its side; -0.0 and
// +0.0 count as positive.
//
// Range growth: when a batch holds a larger |x|, the histogram is re-binned to the new limit
// like PyTorch's HistogramObserver (torch.ao.quantization, _combine_histograms): the number of
// bins stays fixed and each old bin's count is spread uniformly over its width into the new
// bins. PyTorch approximates the uniform spread by 128 sub-bins per bin (upsample_rate); qforge
// computes the overlaps exactly. No count is lost: the total is unchanged by growth. (NVIDIA's
// calibrator instead appends bins of the first batch's width, which grows without bound when a
// later batch holds an outlier: a 10^6 outlier after a batch with max 1 would need 2*10^9 bins.)
//
// Counts are doubles because re-binning splits them. min() and max() are the exact extremes of
// the finite values seen (the min-max method and the clip ranges of affine methods use them).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "qforge/calibration/export.h"

namespace qforge::calibration {

class QFORGE_CALIBRATION_API Histogram {
 public:
  static constexpr int kDefaultBins = 2048;  // PyTorch's HistogramObserver and NVIDIA's default
  // The most bins a histogram may have: 2^20 (16 MiB of counts per histogram, 512 times the
  // default). Checked by the constructors and by files that are loaded, so that a typo or a
  // damaged file (bins = 2e9) is refused at once, not by the first batch failing to allocate.
  static constexpr int kMaxBins = 1 << 20;

  // Throws unless 1 <= bins <= kMaxBins.
  explicit Histogram(int bins = kDefaultBins);
  // Rebuilds a histogram from saved state; throws qforge::Error (corrupt_data) when the parts
  // do not fit together (sizes, negative or non-finite counts, min/max outside [-A, A]...).
  static Histogram from_parts(int bins, float limit, float min, float max,
                              std::vector<double> negative, std::vector<double> positive);

  // Adds the finite values of a batch (growing the range first when needed); returns how many
  // non-finite values it skipped.
  std::int64_t add(std::span<const float> values);
  // Re-bins to [0, new_limit]; no-op when new_limit <= limit(). Throws on a non-finite limit.
  void grow(float new_limit);

  int bins() const noexcept { return bins_; }
  float limit() const noexcept { return limit_; }
  double bin_width() const noexcept { return static_cast<double>(limit_) / bins_; }
  float min() const noexcept { return min_; }       // +inf while empty
  float max() const noexcept { return max_; }       // -inf while empty
  double total() const noexcept { return total_; }  // values counted (growth keeps it)
  bool empty() const noexcept { return !(max_ >= min_); }

  // Counts by |x| bin, negative values and positive values.
  std::span<const double> negative() const noexcept { return {counts_.data(), size()}; }
  std::span<const double> positive() const noexcept { return {counts_.data() + size(), size()}; }
  // The |x| histogram: negative()[i] + positive()[i].
  std::vector<double> magnitude() const;

 private:
  friend struct HistogramAccess;  // the observer's kernels (src/)
  std::size_t size() const noexcept { return static_cast<std::size_t>(bins_); }

  int bins_;
  float limit_ = 0.0f;
  float min_, max_;
  double total_ = 0.0;
  std::vector<double> counts_;  // [negative | positive], bins_ each
};

}  // namespace qforge::calibration
