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
  if (bins < 1 || bins > kMaxBins)
    throw Error(ErrorCode::invalid_argument, "Histogram: bins = " + std::to_string(bins) +
                                                 "; expected 1 to " + std::to_string(kMaxBins));
  counts_.assign(2 * size(), 0.0);
}

Histogram Histogram::from_parts(int bins, float limit, float min, float max,
                                std::vector<double> negative, std::vector<double> positive) {
  auto bad = [](const std::string& what) {
    throw Error(ErrorCode::corrupt_data, "Histogram::from_parts: " + what);
  };
  if (bins < 1 || bins > kMaxBins)
    bad("bins = " + std::to_string(bins) + "; expected 1 to " + std::to_string(kMaxBins));
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
    throw Error(ErrorCode::invalid_argument, "Histogram::grow: limit " + text::number(new_limit) +
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

namespace {

// A batch's counts at one limit, in four interleaved copies of 16-bit counters (fast to
// increment, and in L1), summed into doubles every 65535 values so that no counter can
// overflow (each value increments one counter). Kept apart from the histogram until the batch is
// done, so that counting can start before the batch's range is known and be thrown away if the
// range must grow.
class BatchCounts {
 public:
  explicit BatchCounts(int bins)
      : bins_(bins),
        stride_(2 * static_cast<std::size_t>(bins) + 1),
        scratch_(4 * stride_, 0),
        sums_(2 * static_cast<std::size_t>(bins), 0.0) {}

  // Counts x[0, n) in 4096-value pieces. With `ahead`, the piece at offset i first asks for
  // ahead[i, i + 4096) (clipped to ahead_n values), so that memory streams the next data while
  // the (compute-bound) counting runs.
  void count(const float* x, std::size_t n, float inv_width, bool all_finite,
             const float* ahead = nullptr, std::size_t ahead_n = 0) {
    for (std::size_t at = 0; at < n;) {
      const std::size_t m = std::min({n - at, kFlushEvery - pending_, kPiece});
      for (std::size_t i = at; i < std::min(at + m, ahead_n); i += 16)
        __builtin_prefetch(ahead + i);
      kernels::bin_counts(x + at, m, inv_width, bins_, all_finite, scratch_.data());
      pending_ += m;
      at += m;
      if (pending_ == kFlushEvery) flush();
    }
  }

  void reset() {
    std::fill(scratch_.begin(), scratch_.end(), std::uint16_t{0});
    std::fill(sums_.begin(), sums_.end(), 0.0);
    pending_ = 0;
  }

  // Adds the counts so far to `counts`; with `and_reset`, starts over (the histogram is about
  // to be re-binned, and what follows is counted at the new range).
  void add_to(double* counts, bool and_reset = false) {
    flush();
    for (std::size_t i = 0; i < sums_.size(); ++i) counts[i] += sums_[i];
    if (and_reset) std::fill(sums_.begin(), sums_.end(), 0.0);
  }

 private:
  static constexpr std::size_t kFlushEvery = 65535;
  static constexpr std::size_t kPiece = 4096;

  void flush() {
    const std::uint16_t* c = scratch_.data();
    for (std::size_t i = 0; i < sums_.size(); ++i)
      sums_[i] +=
          static_cast<double>(c[i] + c[stride_ + i] + c[2 * stride_ + i] + c[3 * stride_ + i]);
    std::fill(scratch_.begin(), scratch_.end(), std::uint16_t{0});
    pending_ = 0;
  }

  int bins_;
  std::size_t stride_;
  std::vector<std::uint16_t> scratch_;
  std::vector<double> sums_;
  std::size_t pending_ = 0;
};

// Values scanned, then counted while still in L1 (steady state: one pass over memory).
constexpr std::size_t kChunk = 4096;

// The first batch's chunks (256 KiB): each is scanned, the range grown to it, then counted from
// L2 while the next chunk is prefetched. Larger than kChunk so that data whose range keeps
// widening (sorted or drifting values) re-bins at most once per 64 Ki values (|x| rising
// through 64 MiB, 256 growths, measured as fast as the former two passes).
constexpr std::size_t kFirstChunk = 65536;

void merge(kernels::Extremes& into, const kernels::Extremes& e) {
  into.lo = std::min(into.lo, e.lo);
  into.hi = std::max(into.hi, e.hi);
  into.non_finite += e.non_finite;
}

}  // namespace

std::int64_t Histogram::add(std::span<const float> values) {
  const std::size_t n = values.size();
  const float* x = values.data();
  if (n == 0) return 0;
  if (n < kScratchThreshold) {
    // Small batches: one pass for the extremes, one counting straight into the doubles.
    const kernels::Extremes e = kernels::scan(x, n);
    HistogramAccess::include(*this, e.lo, e.hi);
    if (e.lo > e.hi) return e.non_finite;  // nothing finite to count
    kernels::bin_run(x, n, kernels::inverse_width(limit_, bins_), bins_, counts_.data());
    total_ += static_cast<double>(n - static_cast<std::size_t>(e.non_finite));
    return e.non_finite;
  }
  BatchCounts batch(bins_);
  auto finish = [&](const kernels::Extremes& seen) {
    batch.add_to(counts_.data());
    total_ += static_cast<double>(n - static_cast<std::size_t>(seen.non_finite));
    return seen.non_finite;
  };
  // The whole batch at the range it needs: a pass for the extremes, a pass to count. A later
  // batch that turns out to widen the range goes this way (after the chunks counted so far are
  // thrown away), as PyTorch counts each batch at its own final range.
  auto two_pass = [&](kernels::Extremes seen) {
    HistogramAccess::include(*this, seen.lo, seen.hi);
    batch.reset();
    if (seen.lo <= seen.hi)
      batch.count(x, n, kernels::inverse_width(limit_, bins_), seen.non_finite == 0, x + kChunk,
                  n > kChunk ? n - kChunk : 0);
    return finish(seen);
  };
  if (empty()) {
    // The first batch in one pass over memory: there is no range to count against until a
    // value was seen, so each 64 Ki-value chunk is scanned, the range grown to it (re-binning
    // what the batch counted so far, exactly as a later batch re-bins the histogram), then
    // counted while in cache. The result is the histogram of observing the chunks as separate
    // batches (docs/CALIBRATION.md, "Histogram collection").
    kernels::Extremes seen{kInf, -kInf, 0};
    float inv = 0.0f;
    for (std::size_t at = 0; at < n; at += kFirstChunk) {
      const std::size_t m = std::min(kFirstChunk, n - at);
      const kernels::Extremes e = kernels::scan(x + at, m);
      merge(seen, e);
      if (!(e.lo <= e.hi)) continue;  // nothing finite in this chunk
      if (empty() || std::max(-e.lo, e.hi) > limit_) {
        batch.add_to(counts_.data(), true);
        HistogramAccess::include(*this, e.lo, e.hi);
        inv = kernels::inverse_width(limit_, bins_);
      }
      const std::size_t next = n - at - m;
      batch.count(x + at, m, inv, e.non_finite == 0, x + at + m, std::min(next, kFirstChunk));
    }
    HistogramAccess::include(*this, seen.lo, seen.hi);  // min / max within the range
    return finish(seen);
  }

  // Steady state: scan a chunk; while it fits the current range, count it at once.
  const float inv = kernels::inverse_width(limit_, bins_);
  kernels::Extremes seen{std::numeric_limits<float>::infinity(),
                         -std::numeric_limits<float>::infinity(), 0};
  for (std::size_t at = 0; at < n; at += kChunk) {
    const std::size_t m = std::min(kChunk, n - at);
    const kernels::Extremes e = kernels::scan(x + at, m);
    if (e.lo <= e.hi && std::max(-e.lo, e.hi) > limit_) {
      merge(seen, kernels::scan(x + at, n - at));
      return two_pass(seen);
    }
    merge(seen, e);
    // Ask for the next chunk now: it arrives while this one is counted (compute-bound), so the
    // next scan finds it in cache instead of waiting on memory.
    const std::size_t next = std::min(kChunk, n - std::min(n, at + m));
    for (std::size_t i = 0; i < next; i += 16) __builtin_prefetch(x + at + m + i);
    batch.count(x + at, m, inv, e.non_finite == 0);
  }
  HistogramAccess::include(*this, seen.lo, seen.hi);  // within the range: min / max only
  return finish(seen);
}

}  // namespace qforge::calibration
