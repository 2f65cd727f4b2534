// The tuner's bookkeeping (after highway's hwy/auto_tune.h): per candidate a median of its
// samples that counts as settled once it stops moving; candidates are measured one after the
// other and the lowest median wins. The median, not the mean, because shared machines produce
// one-sided outliers (a preempted sample is slower, never faster).
#include <algorithm>
#include <cmath>

#include "qforge/accelerator.h"
#include "qforge/error.h"

namespace qforge {
namespace {

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  const std::size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
  const double hi = v[mid];
  if (v.size() % 2) return hi;
  const double lo = *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid));
  return (lo + hi) / 2;
}

}  // namespace

void CostEstimate::add(double cost) {
  samples_.push_back(cost);
  medians_.push_back(median_of(samples_));
}

double CostEstimate::median() const { return medians_.empty() ? 0 : medians_.back(); }

bool CostEstimate::stable(const TunerSettings& s) const {
  const std::size_t n = samples_.size();
  if (n < static_cast<std::size_t>(std::max(s.min_samples, 1))) return false;
  const std::size_t checks = static_cast<std::size_t>(std::max(s.stable_checks, 0));
  if (n <= checks) return false;
  const double now = medians_.back();
  for (std::size_t i = n - 1 - checks; i < n - 1; ++i)
    if (std::abs(medians_[i] - now) > s.tolerance * std::abs(now)) return false;
  return true;
}

AutoTune::AutoTune(std::size_t candidates, TunerSettings settings)
    : settings_(settings), estimates_(candidates), done_(candidates, false) {}

std::optional<std::size_t> AutoTune::next() const {
  for (std::size_t i = 0; i < estimates_.size(); ++i)
    if (!done_[i]) return i;
  return std::nullopt;
}

void AutoTune::notify_cost(double cost) {
  const auto i = next();
  if (!i) throw Error(ErrorCode::internal, "AutoTune::notify_cost: every candidate is done");
  if (!std::isfinite(cost) || cost < 0)
    throw Error(ErrorCode::invalid_argument, "AutoTune::notify_cost: cost " + std::to_string(cost) +
                                                 "; expected a finite value >= 0");
  CostEstimate& e = estimates_[*i];
  e.add(cost);
  if (e.stable(settings_) ||
      e.count() >= static_cast<std::size_t>(std::max(settings_.max_samples, 1)))
    done_[*i] = true;
}

void AutoTune::skip() {
  if (const auto i = next()) done_[*i] = true;
}

std::optional<std::size_t> AutoTune::best() const {
  std::optional<std::size_t> best;
  for (std::size_t i = 0; i < estimates_.size(); ++i) {
    if (estimates_[i].count() == 0) continue;
    if (!best || estimates_[i].median() < estimates_[*best].median()) best = i;
  }
  return best;
}

}  // namespace qforge
