// Min-max observers, after PyTorch's torch.ao.quantization observers.
//
//   MinMaxObserver                running min and max of every batch: PyTorch's MinMaxObserver
//                                 (per tensor) and PerChannelMinMaxObserver (with an axis).
//   MovingAverageMinMaxObserver   PyTorch's MovingAverageMinMaxObserver and
//                                 MovingAveragePerChannelMinMaxObserver: the first batch sets
//                                 the range, each later one moves it by
//                                 min += c * (batch_min - min), max += c * (batch_max - max),
//                                 computed in float32 as PyTorch does, c = 0.01 by default.
//
// Unlike PyTorch, non-finite values are skipped (and counted) rather than folded into the range.
// Per channel, a channel whose batch holds no finite value keeps its range; a channel's first
// finite batch sets its moving-average range.
#pragma once

#include <optional>
#include <vector>

#include "qforge/calibration/observer.h"

namespace qforge::calibration {

// Shared state of the two: one [lo, hi] per channel (lo = +inf, hi = -inf until a channel
// sees a finite value).
class QFORGE_CALIBRATION_API RangeObserver : public Observer {
 public:
  QuantizationParams params(const Target& target) const override;
  // The tracked range of each channel (one entry per tensor). Throws before data.
  std::vector<Range> ranges() const;

  // Raw per-channel bounds, +inf / -inf for channels without data (serialisation, tests).
  const std::vector<float>& lows() const noexcept { return lo_; }
  const std::vector<float>& highs() const noexcept { return hi_; }

 protected:
  explicit RangeObserver(std::optional<int> axis) : Observer(axis) {}
  // Scans the batch into per-channel batch ranges (`blo`, `bhi`; +inf/-inf where a channel saw
  // no finite value) and returns the number of non-finite values.
  std::int64_t scan(const float* data, const BatchLayout& layout, std::vector<float>& blo,
                    std::vector<float>& bhi);
  void restore_ranges(std::int64_t channels, const ObserverStats& stats, std::vector<float> lo,
                      std::vector<float> hi);

  std::vector<float> lo_, hi_;
};

class QFORGE_CALIBRATION_API MinMaxObserver final : public RangeObserver {
 public:
  explicit MinMaxObserver(std::optional<int> axis = std::nullopt) : RangeObserver(axis) {}
  static MinMaxObserver per_channel(int axis) { return MinMaxObserver(axis); }

  std::string_view kind() const noexcept override { return "minmax"; }
  std::unique_ptr<Observer> clone() const override;

  // Rebuilds an observer from saved state (see serialize.h); validates it.
  static MinMaxObserver restored(std::optional<int> axis, std::int64_t channels,
                                 const ObserverStats& stats, std::vector<float> lo,
                                 std::vector<float> hi);

 protected:
  std::int64_t observe_batch(const float* data, const BatchLayout& layout) override;
};

class QFORGE_CALIBRATION_API MovingAverageMinMaxObserver final : public RangeObserver {
 public:
  static constexpr float kDefaultAveragingConstant = 0.01f;  // PyTorch's default

  // Throws unless 0 < averaging_constant <= 1.
  explicit MovingAverageMinMaxObserver(float averaging_constant = kDefaultAveragingConstant,
                                       std::optional<int> axis = std::nullopt);
  static MovingAverageMinMaxObserver per_channel(
      int axis, float averaging_constant = kDefaultAveragingConstant) {
    return MovingAverageMinMaxObserver(averaging_constant, axis);
  }

  float averaging_constant() const noexcept { return c_; }
  std::string_view kind() const noexcept override { return "moving_average_minmax"; }
  std::unique_ptr<Observer> clone() const override;

  static MovingAverageMinMaxObserver restored(float averaging_constant, std::optional<int> axis,
                                              std::int64_t channels, const ObserverStats& stats,
                                              std::vector<float> lo, std::vector<float> hi);

 protected:
  std::int64_t observe_batch(const float* data, const BatchLayout& layout) override;

 private:
  float c_;
};

}  // namespace qforge::calibration
