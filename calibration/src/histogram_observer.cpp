#include "qforge/calibration/histogram_observer.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "histogram_access.h"
#include "kernels.h"
#include "qforge/error.h"

namespace qforge::calibration {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

}  // namespace

HistogramObserver::HistogramObserver(MethodOptions method, int bins, std::optional<int> axis)
    : Observer(axis), method_(method), bins_(bins) {
  validate(method_);
  // Checked here too: with an axis the histograms are only made by the first batch.
  if (bins < 1 || bins > Histogram::kMaxBins)
    throw Error(ErrorCode::invalid_argument, "HistogramObserver: bins = " + std::to_string(bins) +
                                                 "; expected 1 to " +
                                                 std::to_string(Histogram::kMaxBins));
  if (!axis) hist_.emplace_back(bins_);
}

std::int64_t HistogramObserver::observe_batch(const float* data, const BatchLayout& layout) {
  if (!axis()) return hist_[0].add({data, static_cast<std::size_t>(layout.inner)});

  const auto channels = static_cast<std::size_t>(layout.channels);
  if (hist_.empty()) hist_.assign(channels, Histogram(bins_));
  // Pass 1: each channel's extremes, so each histogram grows once before any value is counted.
  std::vector<float> lo(channels, kInf), hi(channels, -kInf);
  const std::int64_t bad = kernels::scan_channels(data, layout, lo.data(), hi.data());
  std::vector<float> inv(channels);
  std::vector<double*> counts(channels);
  for (std::size_t c = 0; c < channels; ++c) {
    HistogramAccess::include(hist_[c], lo[c], hi[c]);
    inv[c] = kernels::inverse_width(hist_[c].limit(), bins_);
    counts[c] = HistogramAccess::counts(hist_[c]);
  }
  // Pass 2: count (without per-value finiteness tests when the scan found no other values).
  std::vector<double> added(channels, 0.0);
  const auto inner = static_cast<std::size_t>(layout.inner);
  if (bad == 0) {
    if (inner == 1) {
      kernels::bin_rows_finite(data, layout.outer, layout.channels, inv.data(), bins_,
                               counts.data());
    } else {
      for (std::int64_t o = 0; o < layout.outer; ++o)
        for (std::size_t c = 0; c < channels; ++c)
          kernels::bin_run_finite(data + (static_cast<std::size_t>(o) * channels + c) * inner,
                                  inner, inv[c], bins_, counts[c]);
    }
    std::fill(added.begin(), added.end(), static_cast<double>(layout.outer * layout.inner));
  } else if (inner == 1) {
    kernels::bin_rows(data, layout.outer, layout.channels, inv.data(), bins_, counts.data(),
                      added.data());
  } else {
    for (std::int64_t o = 0; o < layout.outer; ++o)
      for (std::size_t c = 0; c < channels; ++c)
        added[c] += static_cast<double>(
            kernels::bin_run(data + (static_cast<std::size_t>(o) * channels + c) * inner, inner,
                             inv[c], bins_, counts[c]));
  }
  for (std::size_t c = 0; c < channels; ++c) HistogramAccess::add_total(hist_[c], added[c]);
  return bad;
}

void HistogramObserver::require_channels_with_data() const {
  require_data("histogram observer");
  for (std::size_t c = 0; c < hist_.size(); ++c)
    if (hist_[c].empty())
      throw Error(ErrorCode::invalid_argument,
                  "histogram observer: channel " + std::to_string(c) + " of " +
                      std::to_string(hist_.size()) +
                      " has seen no finite value; expected every channel to hold data before "
                      "asking for per-channel params");
}

std::vector<Range> HistogramObserver::ranges(const Target& target,
                                             const MethodOptions& method) const {
  validate(method);
  require_channels_with_data();
  std::vector<Range> out;
  out.reserve(hist_.size());
  for (const Histogram& h : hist_) out.push_back(select_range(h, target, method));
  return out;
}

QuantizationParams HistogramObserver::params(const Target& target) const {
  return params(target, method_);
}

QuantizationParams HistogramObserver::params(const Target& target,
                                             const MethodOptions& method) const {
  if (method.method == Method::adaptive) return adaptive(target, method).params;
  return params_for_ranges(ranges(target, method), target, axis());
}

AdaptiveResult HistogramObserver::adaptive(const Target& target,
                                           const MethodOptions& method) const {
  validate(method);
  require_channels_with_data();
  std::vector<AdaptiveChoice> choices;
  std::vector<Range> chosen;
  for (const Histogram& h : hist_) {
    choices.push_back(select_adaptive(h, target, method));
    chosen.push_back(choices.back().range);
  }
  return {params_for_ranges(chosen, target, axis()), std::move(choices)};
}

std::unique_ptr<Observer> HistogramObserver::clone() const {
  return std::make_unique<HistogramObserver>(*this);
}

HistogramObserver HistogramObserver::restored(MethodOptions method, int bins,
                                              std::optional<int> axis, std::int64_t channels,
                                              const ObserverStats& stats,
                                              std::vector<Histogram> histograms) {
  HistogramObserver o(method, bins, axis);
  const std::string who = "histogram observer state";
  if ((axis && channels < 0) || (!axis && channels != 1))
    throw Error(ErrorCode::invalid_argument, who + ": " + std::to_string(channels) +
                                                 " channels; expected " +
                                                 (axis ? ">= 0" : "1 (per tensor)"));
  const std::size_t expected =
      axis && stats.values == 0 && histograms.empty() ? 0 : static_cast<std::size_t>(channels);
  if (histograms.size() != expected)
    throw Error(ErrorCode::invalid_argument, who + ": " + std::to_string(histograms.size()) +
                                                 " histograms for " + std::to_string(channels) +
                                                 " channels; expected one per channel");
  double total = 0.0;
  for (const Histogram& h : histograms) {
    if (h.bins() != bins)
      throw Error(ErrorCode::invalid_argument, who + ": a histogram of " +
                                                   std::to_string(h.bins()) + " bins; expected " +
                                                   std::to_string(bins));
    total += h.total();
  }
  // Re-binning moves fractions of counts around but keeps the total.
  if (std::abs(total - static_cast<double>(stats.values)) > 1e-6 * (1.0 + total))
    throw Error(ErrorCode::invalid_argument,
                who + ": histograms hold " + std::to_string(total) + " values but the stats say " +
                    std::to_string(stats.values) + "; expected them to agree");
  o.restore(channels, stats);
  o.hist_ = std::move(histograms);
  return o;
}

}  // namespace qforge::calibration
