#include "qforge/calibration/minmax.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "kernels.h"
#include "qforge/error.h"
#include "text.h"

namespace qforge::calibration {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

}  // namespace

// ---- RangeObserver ----

std::vector<Range> RangeObserver::ranges() const {
  require_data(std::string(kind()) + " observer");
  std::vector<Range> out(lo_.size());
  for (std::size_t c = 0; c < lo_.size(); ++c) {
    if (!(lo_[c] <= hi_[c]))
      throw Error(ErrorCode::invalid_argument,
                  std::string(kind()) + " observer: channel " + std::to_string(c) + " of " +
                      std::to_string(lo_.size()) +
                      " has seen no finite value; expected every channel to hold data before "
                      "asking for per-channel params");
    out[c] = {lo_[c], hi_[c]};
  }
  return out;
}

QuantizationParams RangeObserver::params(const Target& target) const {
  const auto r = ranges();
  return params_for_ranges(r, target, axis());
}

std::int64_t RangeObserver::scan(const float* data, const BatchLayout& layout,
                                 std::vector<float>& blo, std::vector<float>& bhi) {
  const auto channels = static_cast<std::size_t>(layout.channels);
  if (lo_.empty()) {
    lo_.assign(channels, kInf);
    hi_.assign(channels, -kInf);
  }
  blo.assign(channels, kInf);
  bhi.assign(channels, -kInf);
  if (channels == 1 && layout.outer == 1) {
    const auto e = kernels::scan(data, static_cast<std::size_t>(layout.inner));
    blo[0] = e.lo;
    bhi[0] = e.hi;
    return e.non_finite;
  }
  return kernels::scan_channels(data, layout, blo.data(), bhi.data());
}

void RangeObserver::restore_ranges(std::int64_t channels, const ObserverStats& stats,
                                   std::vector<float> lo, std::vector<float> hi) {
  const std::string who = std::string(kind()) + " observer state";
  const std::size_t expected = axis() ? static_cast<std::size_t>(channels) : 1;
  if ((axis() && channels < 0) || (!axis() && channels != 1))
    throw Error(ErrorCode::invalid_argument, who + ": " + std::to_string(channels) +
                                                 " channels; expected " +
                                                 (axis() ? ">= 0" : "1 (per tensor)"));
  if (lo.size() != hi.size() || (!lo.empty() && lo.size() != expected))
    throw Error(ErrorCode::invalid_argument,
                who + ": " + std::to_string(lo.size()) + " lower and " + std::to_string(hi.size()) +
                    " upper bounds; expected " + std::to_string(expected) + " of each");
  bool any = false;
  for (std::size_t c = 0; c < lo.size(); ++c) {
    const bool seen = lo[c] <= hi[c];
    const bool unseen = lo[c] == kInf && hi[c] == -kInf;
    if (!(seen && std::isfinite(lo[c]) && std::isfinite(hi[c])) && !unseen)
      throw Error(ErrorCode::invalid_argument,
                  who + ": channel " + std::to_string(c) + " range [" + text::number(lo[c]) + ", " +
                      text::number(hi[c]) +
                      "]; expected finite bounds with lo <= hi, or none (no data)");
    any = any || seen;
  }
  if (any != (stats.values > 0))
    throw Error(ErrorCode::invalid_argument, who + ": " + std::to_string(stats.values) +
                                                 " values observed but " + (any ? "a" : "no") +
                                                 " range recorded; expected them to agree");
  restore(channels, stats);
  lo_ = std::move(lo);
  hi_ = std::move(hi);
}

// ---- MinMaxObserver ----

std::int64_t MinMaxObserver::observe_batch(const float* data, const BatchLayout& layout) {
  std::vector<float> blo, bhi;
  const std::int64_t bad = scan(data, layout, blo, bhi);
  // torch.min(min_val_cur, self.min_val): channels without finite values keep +inf / -inf.
  for (std::size_t c = 0; c < lo_.size(); ++c) {
    lo_[c] = std::min(lo_[c], blo[c]);
    hi_[c] = std::max(hi_[c], bhi[c]);
  }
  return bad;
}

std::unique_ptr<Observer> MinMaxObserver::clone() const {
  return std::make_unique<MinMaxObserver>(*this);
}

MinMaxObserver MinMaxObserver::restored(std::optional<int> axis, std::int64_t channels,
                                        const ObserverStats& stats, std::vector<float> lo,
                                        std::vector<float> hi) {
  MinMaxObserver o(axis);
  o.restore_ranges(channels, stats, std::move(lo), std::move(hi));
  return o;
}

// ---- MovingAverageMinMaxObserver ----

MovingAverageMinMaxObserver::MovingAverageMinMaxObserver(float averaging_constant,
                                                         std::optional<int> axis)
    : RangeObserver(axis), c_(averaging_constant) {
  if (!(averaging_constant > 0.0f && averaging_constant <= 1.0f))
    throw Error(ErrorCode::invalid_argument, "MovingAverageMinMaxObserver: averaging_constant = " +
                                                 text::number(averaging_constant) +
                                                 "; expected a value in (0, 1]");
}

std::int64_t MovingAverageMinMaxObserver::observe_batch(const float* data,
                                                        const BatchLayout& layout) {
  std::vector<float> blo, bhi;
  const std::int64_t bad = scan(data, layout, blo, bhi);
  for (std::size_t c = 0; c < lo_.size(); ++c) {
    if (!(blo[c] <= bhi[c])) continue;  // no finite value of this channel in the batch
    if (!(lo_[c] <= hi_[c])) {
      // The first batch sets the range (PyTorch: min_val == inf and max_val == -inf).
      lo_[c] = blo[c];
      hi_[c] = bhi[c];
      continue;
    }
    // PyTorch, in float32: min_val + averaging_constant * (min_val_cur - min_val).
    lo_[c] = lo_[c] + c_ * (blo[c] - lo_[c]);
    hi_[c] = hi_[c] + c_ * (bhi[c] - hi_[c]);
  }
  return bad;
}

std::unique_ptr<Observer> MovingAverageMinMaxObserver::clone() const {
  return std::make_unique<MovingAverageMinMaxObserver>(*this);
}

MovingAverageMinMaxObserver MovingAverageMinMaxObserver::restored(
    float averaging_constant, std::optional<int> axis, std::int64_t channels,
    const ObserverStats& stats, std::vector<float> lo, std::vector<float> hi) {
  MovingAverageMinMaxObserver o(averaging_constant, axis);
  o.restore_ranges(channels, stats, std::move(lo), std::move(hi));
  return o;
}

}  // namespace qforge::calibration
