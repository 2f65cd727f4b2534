#include "qforge/calibration/histogram.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>

#include "histogram_access.h"
#include "kernels.h"
#include "qforge/error.h"
#include "text.h"

namespace qforge::calibration {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// Batches below this size are counted straight into the double counters; above it the
// interleaved 32-bit counters pay for their zeroing and summing.
constexpr std::size_t kScratchThreshold = 16384;
// bin_counts' 32-bit counters take at most this many values per call.
constexpr std::size_t kMaxScratchRun = std::size_t{1} << 31;

// Spreads one side's counts from bins of width `old_w` into bins of width `new_w` >= old_w,
// each old bin's count uniformly over its width (the limit of PyTorch's upsampling).
std::vector<double> rebin(std::span<const double> old, double old_w, double new_w) {
  const auto n = static_cast<std::int64_t>(old.size());
  std::vector<double> out(old.size(), 0.0);
  for (std::int64_t j = 0; j < n; ++j) {
    const double c = old[static_cast<std::size_t>(j)];
    if (c == 0.0) continue;
    const double a = static_cast<double>(j) * old_w;
    const double b = a + old_w;
    auto k = std::min(static_cast<std::int64_t>(a / new_w), n - 1);
    const auto k_end = std::min(static_cast<std::int64_t>(b / new_w), n - 1);
    for (double from = a; k <= k_end; ++k) {
      const double to = k == k_end ? b : std::min(b, static_cast<double>(k + 1) * new_w);
      out[static_cast<std::size_t>(k)] += c * ((to - from) / old_w);
      from = to;
    }
  }
  return out;
}

}  // namespace

Histogram::Histogram(int bins) : bins_(bins), min_(kInf), max_(-kInf) {
  if (bins < 1)
    throw Error(ErrorCode::invalid_argument,
                "Histogram: bins = " + std::to_string(bins) + "; expected at least 1");
  counts_.assign(2 * size(), 0.0);
}

Histogram Histogram::from_parts(int bins, float limit, float min, float max,
                                std::vector<double> negative, std::vector<double> positive) {
  auto bad = [](const std::string& what) {
    throw Error(ErrorCode::corrupt_data, "Histogram::from_parts: " + what);
  };
  if (bins < 1) bad("bins = " + std::to_string(bins) + "; expected at least 1");
  if (negative.size() != static_cast<std::size_t>(bins) ||
      positive.size() != static_cast<std::size_t>(bins))
    bad(std::to_string(negative.size()) + " negative and " + std::to_string(positive.size()) +
        " positive counts; expected " + std::to_string(bins) + " each");
  if (!std::isfinite(limit) || limit < 0.0f)
    bad("limit = " + text::number(limit) + "; expected a finite value >= 0");
  Histogram h(bins);
  std::copy(negative.begin(), negative.end(), h.counts_.begin());
  std::copy(positive.begin(), positive.end(), h.counts_.begin() + bins);
  for (double c : h.counts_)
    if (!std::isfinite(c) || c < 0.0) bad("a count of " + text::number(c) + "; expected >= 0");
  h.total_ = std::accumulate(h.counts_.begin(), h.counts_.end(), 0.0);
  const bool has_counts = h.total_ > 0.0;
  const bool has_range = min <= max;
  if (has_counts != has_range)
    bad("min = " + text::number(min) + ", max = " + text::number(max) + " with total count " +
        text::number(h.total()) + "; expected min <= max exactly when counts are present");
  if (has_range && (!std::isfinite(min) || !std::isfinite(max) || std::fabs(min) > limit ||
                    std::fabs(max) > limit || std::max(-min, max) != limit))
    bad("min = " + text::number(min) + ", max = " + text::number(max) + " with limit " +
        text::number(limit) + "; expected finite extremes with max(|min|, |max|) = limit");
  h.limit_ = limit;
  h.min_ = has_range ? min : kInf;
  h.max_ = has_range ? max : -kInf;
  return h;
}

std::vector<double> Histogram::magnitude() const {
  std::vector<double> m(size());
  for (std::size_t i = 0; i < size(); ++i) m[i] = counts_[i] + counts_[size() + i];
  return m;
}

void Histogram::grow(float new_limit) {
  if (!std::isfinite(new_limit) || new_limit < 0.0f)
    throw Error(ErrorCode::invalid_argument, "Histogram::grow: limit " +
                                                 text::number(new_limit) +
                                                 "; expected a finite value >= 0");
  if (new_limit <= limit_) return;
  // With a zero limit every count sits at exactly 0, which stays in bin 0 of any range (PyTorch
  // special-cases a histogram whose min equals its max the same way).
  if (limit_ > 0.0f) {
    const double old_w = bin_width();
    const double new_w = static_cast<double>(new_limit) / bins_;
    const auto neg = rebin(negative(), old_w, new_w);
    const auto pos = rebin(positive(), old_w, new_w);
    std::copy(neg.begin(), neg.end(), counts_.begin());
    std::copy(pos.begin(), pos.end(), counts_.begin() + bins_);
  }
  limit_ = new_limit;
}

void HistogramAccess::include(Histogram& h, float lo, float hi) {
  if (!(lo <= hi)) return;
  h.grow(std::max(-lo, hi));
  h.min_ = std::min(h.min_, lo);
  h.max_ = std::max(h.max_, hi);
}

std::int64_t Histogram::add(std::span<const float> values) {
  if (values.empty()) return 0;
  const kernels::Extremes e = kernels::scan(values.data(), values.size());
  HistogramAccess::include(*this, e.lo, e.hi);
  if (e.lo > e.hi) return e.non_finite;  // nothing finite to count
  total_ += static_cast<double>(values.size()) - static_cast<double>(e.non_finite);
  const float inv = kernels::inverse_width(limit_, bins_);
  if (values.size() < kScratchThreshold) {
    kernels::bin_run(values.data(), values.size(), inv, bins_, counts_.data());
    return e.non_finite;
  }
  const std::size_t stride = 2 * size() + 1;
  std::vector<std::uint32_t> scratch(4 * stride);
  for (std::size_t at = 0; at < values.size(); at += kMaxScratchRun) {
    const std::size_t n = std::min(kMaxScratchRun, values.size() - at);
    std::fill(scratch.begin(), scratch.end(), 0u);
    kernels::bin_counts(values.data() + at, n, inv, bins_, scratch.data());
    for (std::size_t i = 0; i < 2 * size(); ++i)
      counts_[i] += static_cast<double>(scratch[i]) + scratch[stride + i] +
                    scratch[2 * stride + i] + scratch[3 * stride + i];
  }
  return e.non_finite;
}

}  // namespace qforge::calibration
