// Range selection: turns the building blocks (percentile, entropy, expected_mse) into the range
// each method quantizes for a target, and adaptive selection among them.
#include "qforge/calibration/methods.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <string>

#include "error_model.h"
#include "qforge/error.h"
#include "text.h"

namespace qforge::calibration {
namespace {

constexpr std::array<std::string_view, 5> kMethodNames = {"minmax", "percentile", "entropy", "mse",
                                                          "adaptive"};

bool one_sided(const Histogram& h) { return h.min() >= 0.0f || h.max() <= 0.0f; }

// The range quantized for a threshold T: [-T, T] for symmetric targets; the observed range
// clipped to [-T, T] for affine ones (so one-sided data spends every level on [0, T]).
Range clip(const Histogram& h, const Target& target, double threshold) {
  const auto t = static_cast<float>(std::min(threshold, static_cast<double>(h.limit())));
  if (target.mapping != Mapping::affine) return {-t, t};
  return {std::clamp(h.min(), -t, t), std::clamp(h.max(), -t, t)};
}

// The signed histogram's quantile q (ONNX Runtime: searchsorted over the cumulative share of
// bins in ascending x; the bin's left edge, or the interpolated point inside it).
double signed_quantile(const Histogram& h, double q, bool interpolate) {
  const auto bins = static_cast<std::size_t>(h.bins());
  const double total = h.total(), w = h.bin_width();
  double cdf = 0.0;
  for (std::size_t s = 0; s < 2 * bins; ++s) {
    // Ascending x: negative |x| bins from the largest, then positive ones from 0.
    const double c = s < bins ? h.negative()[bins - 1 - s] : h.positive()[s - bins];
    const double share = c / total;
    const double before = cdf;
    cdf += share;
    if (cdf >= q) {
      double frac = 0.0;
      if (interpolate && share > 0.0) frac = std::clamp((q - before) / share, 0.0, 1.0);
      return (static_cast<double>(s) - static_cast<double>(bins) + frac) * w;
    }
  }
  return static_cast<double>(h.limit());
}

Range percentile_range(const Histogram& h, const Target& target, const MethodOptions& o) {
  if (target.mapping != Mapping::affine)
    return clip(
        h, target,
        percentile_threshold(h.magnitude(), h.bin_width(), o.percentile, o.percentile_interpolate));
  // ONNX Runtime, non-symmetric: cut (100 - p) / 200 of the values from each tail.
  const double cut = (100.0 - o.percentile) / 200.0;
  const auto lo = static_cast<float>(signed_quantile(h, cut, o.percentile_interpolate));
  const auto hi = static_cast<float>(signed_quantile(h, 1.0 - cut, o.percentile_interpolate));
  const float clo = std::clamp(lo, h.min(), h.max());
  return {clo, std::clamp(hi, clo, h.max())};
}

Range entropy_range(const Histogram& h, const Target& target, const MethodOptions& o) {
  const double t = entropy_threshold(h.magnitude(), h.bin_width(),
                                     quantized_bins(target, one_sided(h)), o.start_bin, o.stride);
  return clip(h, target, t);
}

QuantizationParams params_of(const Range& r, const Target& target) {
  return params_for_ranges(std::span<const Range>(&r, 1), target, std::nullopt);
}

// NVIDIA's _compute_amax_mse candidates: bin centres from start_bin (stride), plus max|x| so
// that the search never does worse than min-max. The first minimum wins (np.argmin).
Range mse_range(const Histogram& h, const Target& target, const MethodOptions& o) {
  ErrorModel model(h);
  double best = std::numeric_limits<double>::infinity();
  Range best_range = clip(h, target, h.limit());
  auto consider = [&](double threshold) {
    const Range r = clip(h, target, threshold);
    const double e = model.mse(params_of(r, target));
    if (e < best) {
      best = e;
      best_range = r;
    }
  };
  const double w = h.bin_width();
  for (int i = std::max(o.start_bin, 0); i < h.bins(); i += o.stride)
    consider((static_cast<double>(i) + 0.5) * w);
  consider(h.limit());
  return best_range;
}

void require_histogram(const Histogram& h, const char* who) {
  if (h.empty())
    throw Error(ErrorCode::invalid_argument,
                std::string(who) +
                    ": the histogram holds no values; observe at least one batch with a finite "
                    "value before asking for params");
}

}  // namespace

std::string_view to_string(Method m) noexcept {
  const auto i = static_cast<std::size_t>(m);
  return i < kMethodNames.size() ? kMethodNames[i] : "unknown";
}

std::optional<Method> parse_method(std::string_view text) noexcept {
  for (std::size_t i = 0; i < kMethodNames.size(); ++i)
    if (kMethodNames[i] == text) return static_cast<Method>(i);
  return std::nullopt;
}

void validate(const MethodOptions& o) {
  auto bad = [](const std::string& what) {
    throw Error(ErrorCode::invalid_argument, "MethodOptions: " + what);
  };
  if (static_cast<std::size_t>(o.method) >= kMethodNames.size())
    bad("method " + std::to_string(static_cast<int>(o.method)) +
        "; expected minmax, percentile, entropy, mse or adaptive");
  if (!(o.percentile > 0.0 && o.percentile <= 100.0))
    bad("percentile = " + text::number(o.percentile) + "; expected a value in (0, 100]");
  if (o.start_bin < 0) bad("start_bin = " + std::to_string(o.start_bin) + "; expected >= 0");
  if (o.stride < 1) bad("stride = " + std::to_string(o.stride) + "; expected >= 1");
}

std::int64_t quantized_bins(const Target& target, bool one_sided_data) {
  const auto& tr = traits(target.dtype);
  switch (target.mapping) {
    case Mapping::symmetric: {
      if (target.convention == Convention::pytorch) {
        const std::int32_t z = tr.is_signed ? 0 : (tr.qmin + tr.qmax + 1) / 2;
        return tr.qmax - z + 1;
      }
      return tr.narrow_qmax - symmetric_zero_point(target.dtype) + 1;
    }
    case Mapping::affine: {
      const std::int64_t levels = std::int64_t{tr.qmax} - tr.qmin + 1;
      return one_sided_data ? levels : levels / 2;
    }
    case Mapping::logarithmic: break;
  }
  throw Error(ErrorCode::unsupported,
              "quantized_bins: the logarithmic mapping; expected affine or symmetric (the "
              "entropy search counts uniform levels)");
}

Range select_range(const Histogram& h, const Target& target, const MethodOptions& o) {
  validate(o);
  require_histogram(h, "select_range");
  switch (o.method) {
    case Method::minmax: return {h.min(), h.max()};
    case Method::percentile: return percentile_range(h, target, o);
    case Method::entropy: return entropy_range(h, target, o);
    case Method::mse: return mse_range(h, target, o);
    case Method::adaptive: return select_adaptive(h, target, o).range;
  }
  return {h.min(), h.max()};
}

AdaptiveChoice select_adaptive(const Histogram& h, const Target& target,
                               const MethodOptions& options) {
  validate(options);
  require_histogram(h, "select_adaptive");
  AdaptiveChoice out{Method::minmax, {}, {}};
  ErrorModel model(h);
  double best = std::numeric_limits<double>::infinity();
  for (Method m : {Method::minmax, Method::percentile, Method::entropy, Method::mse}) {
    MethodOptions o = options;
    o.method = m;
    const Range r = select_range(h, target, o);
    const double e = model.mse(params_of(r, target));
    out.scores.push_back({m, r, e});
    if (e < best) {
      best = e;
      out.chosen = m;
      out.range = r;
    }
  }
  return out;
}

}  // namespace qforge::calibration
