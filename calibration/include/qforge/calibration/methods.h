// Calibration methods: choose the range to quantize from a Histogram.
//
// Each method follows a named reference; docs/CALIBRATION.md gives the details and where qforge
// departs from it (and why).
//
//   minmax      the observed [min, max] (PyTorch MinMaxObserver on the same data).
//   percentile  NVIDIA pytorch-quantization _compute_amax_percentile: the |x| value below which
//               `percentile` % (default 99.99) of the |x| histogram lies. Symmetric targets clip
//               to [-T, T]. Affine targets follow ONNX Runtime's calibrate.py (non-symmetric
//               HistogramCollector.compute_percentile): cut (100 - p) / 2 % from each tail of
//               the signed histogram.
//   entropy     NVIDIA pytorch-quantization _compute_amax_entropy (TensorRT's entropy
//               calibrator): KL divergence between the |x| histogram clipped at bin i (the
//               clipped mass added to bin i - 1) and its quantization into N bins, for i from
//               start_bin (128) to the last bin; the threshold is bin i's left edge for the
//               last minimal divergence. N = 128 for int8 (2^(bits - 1 + unsigned) in NVIDIA's
//               code), generalised to the target's levels on [0, T]: see quantized_bins().
//   mse         NVIDIA pytorch-quantization _compute_amax_mse's candidates (the |x| bin centres
//               from start_bin, plus the observed max|x|), scoring each with the expected
//               squared quantization error over the histogram (expected_mse) rather than the
//               error at bin centres, which vanishes once a step is finer than a bin.
//   adaptive    runs minmax, percentile, entropy and mse and keeps the range with the least
//               expected_mse; reports the choice and every error.
//
// Symmetric targets quantize [-T, T]; affine targets quantize the observed [min, max] clipped to
// [-T, T] (for one-sided data, [0, T] or [-T, 0]: the whole dtype covers the threshold).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "qforge/calibration/export.h"
#include "qforge/calibration/histogram.h"
#include "qforge/calibration/observer.h"

namespace qforge::calibration {

enum class Method : std::uint8_t { minmax, percentile, entropy, mse, adaptive };

QFORGE_CALIBRATION_API std::string_view to_string(Method m) noexcept;
QFORGE_CALIBRATION_API std::optional<Method> parse_method(std::string_view text) noexcept;

struct MethodOptions {
  Method method = Method::entropy;
  double percentile = 99.99;  // percent, in (0, 100]
  // true: interpolate linearly inside the bin where the percentile falls (values uniform in a
  // bin, as re-binning assumes). false: NVIDIA's bin_edges[idx], the bin's left edge, which is 0
  // when the percentile falls in the first bin (e.g. a bulk dwarfed by a huge outlier).
  bool percentile_interpolate = true;
  int start_bin = 128;  // first candidate bin of entropy and mse (NVIDIA's default)
  int stride = 1;       // candidate step of entropy and mse (NVIDIA's default)
  friend bool operator==(const MethodOptions&, const MethodOptions&) = default;
};

// Throws qforge::Error naming the field when an option is out of range.
QFORGE_CALIBRATION_API void validate(const MethodOptions& options);

// ---- building blocks on an |x| histogram (counts[i] for |x| in [i * w, (i + 1) * w)) ----

// NVIDIA's percentile: the first bin whose cumulative share reaches percentile / 100; returns
// its left edge, or with `interpolate` the point inside it where the share is reached.
QFORGE_CALIBRATION_API double percentile_threshold(std::span<const double> counts, double bin_width,
                                                   double percentile, bool interpolate);

// NVIDIA's entropy search on `counts` (a copy; bin 0 is replaced by bin 1 as NVIDIA does, to
// discount a spike of zeros). Returns the chosen threshold i * bin_width. Candidates whose
// divergence is undefined (no mass below the threshold) are skipped, and so are candidates that
// would clip more than half of the values (qforge's guard: for data away from zero NVIDIA's
// search collapses onto a one-bin histogram with divergence 0 and clips everything); when no
// candidate has a finite divergence the top edge is returned.
QFORGE_CALIBRATION_API double entropy_threshold(std::span<const double> counts, double bin_width,
                                                std::int64_t quantized_bins, int start_bin,
                                                int stride);

// The number of quantized bins the entropy search uses for a target: the number of levels that
// cover [0, T]. Symmetric: narrow_qmax - zero_point + 1 (128 for int8 and uint8, 8 for int4,
// 32768 for int16, 2 for binary). Affine: all qmax - qmin + 1 levels when the data is one-sided
// (NVIDIA's unsigned case: 256 for 8 bits), half of them otherwise.
QFORGE_CALIBRATION_API std::int64_t quantized_bins(const Target& target, bool one_sided);

// ---- on a Histogram ----

// The expected squared quantization error per value of quantizing the histogram's values with
// per-tensor `params` (affine or symmetric, any dtype including binary), taking each bin's
// values as uniform over the bin; computed in closed form. Throws for logarithmic params.
QFORGE_CALIBRATION_API double expected_mse(const Histogram& histogram,
                                           const QuantizationParams& params);

// The range one method (not adaptive) chooses for a target. Throws before data.
QFORGE_CALIBRATION_API Range select_range(const Histogram& histogram, const Target& target,
                                          const MethodOptions& options);

struct MethodScore {
  Method method;
  Range range;
  double mse;  // expected_mse of the params for this range
};

struct AdaptiveChoice {
  Method chosen;                    // the method with the least mse (the first on a tie)
  Range range;                      // its range
  std::vector<MethodScore> scores;  // minmax, percentile, entropy, mse in this order
};

// Adaptive selection for one histogram (options.method is ignored).
QFORGE_CALIBRATION_API AdaptiveChoice select_adaptive(const Histogram& histogram,
                                                      const Target& target,
                                                      const MethodOptions& options);

}  // namespace qforge::calibration
