// HistogramObserver: collects a Histogram per tensor (or per channel along an axis) and turns it
// into params with one of the methods of methods.h. The method given at construction is the one
// params(target) uses; params(target, options) asks for another without observing again.
#pragma once

#include <optional>
#include <vector>

#include "qforge/calibration/histogram.h"
#include "qforge/calibration/methods.h"
#include "qforge/calibration/observer.h"

namespace qforge::calibration {

// What adaptive selection chose, per channel (one entry per tensor).
struct AdaptiveResult {
  QuantizationParams params;
  std::vector<AdaptiveChoice> channels;
};

class QFORGE_CALIBRATION_API HistogramObserver final : public Observer {
 public:
  // Throws when bins is outside [1, Histogram::kMaxBins] or an option is out of range.
  explicit HistogramObserver(MethodOptions method = {}, int bins = Histogram::kDefaultBins,
                             std::optional<int> axis = std::nullopt);
  static HistogramObserver per_channel(int axis, MethodOptions method = {},
                                       int bins = Histogram::kDefaultBins) {
    return HistogramObserver(method, bins, axis);
  }

  QuantizationParams params(const Target& target) const override;
  QuantizationParams params(const Target& target, const MethodOptions& method) const;
  // The range the method chooses for each channel (before params_from_range adds 0).
  std::vector<Range> ranges(const Target& target, const MethodOptions& method) const;
  // Adaptive selection with the choice and the error of every method, per channel.
  AdaptiveResult adaptive(const Target& target, const MethodOptions& method) const;
  AdaptiveResult adaptive(const Target& target) const { return adaptive(target, method_); }

  const MethodOptions& method() const noexcept { return method_; }
  int bins() const noexcept { return bins_; }
  // One histogram per channel (one per tensor); empty before the first batch per channel.
  const std::vector<Histogram>& histograms() const noexcept { return hist_; }

  std::string_view kind() const noexcept override { return "histogram"; }
  std::unique_ptr<Observer> clone() const override;

  static HistogramObserver restored(MethodOptions method, int bins, std::optional<int> axis,
                                    std::int64_t channels, const ObserverStats& stats,
                                    std::vector<Histogram> histograms);

 protected:
  std::int64_t observe_batch(const float* data, const BatchLayout& layout) override;

 private:
  void require_channels_with_data() const;

  MethodOptions method_;
  int bins_;
  std::vector<Histogram> hist_;
};

}  // namespace qforge::calibration
