#include "qforge/calibration/observer.h"

#include <string>

#include "qforge/error.h"

namespace qforge::calibration {

Observer::Observer(std::optional<int> axis) : axis_(axis), channels_(axis ? 0 : 1) {}

Observer::~Observer() = default;

void Observer::observe(std::span<const float> data) {
  if (axis_)
    throw Error(ErrorCode::invalid_argument,
                std::string(kind()) + " observer (per channel, axis " + std::to_string(*axis_) +
                    "): a batch without a shape; expected observe(data, shape) so that the "
                    "channel axis can be found");
  observe(data, Shape{static_cast<std::int64_t>(data.size())});
}

void Observer::observe(std::span<const float> data, const Shape& shape) {
  const std::int64_t numel = element_count(shape);
  if (static_cast<std::int64_t>(data.size()) != numel)
    throw Error(ErrorCode::shape_mismatch, std::string(kind()) +
                                               " observer: " + std::to_string(data.size()) +
                                               " values for shape " + to_string(shape) +
                                               "; expected " + std::to_string(numel));
  BatchLayout layout{1, 1, numel};
  if (axis_) {
    const int rank = static_cast<int>(shape.size());
    const int a = *axis_ < 0 ? *axis_ + rank : *axis_;
    if (a < 0 || a >= rank)
      throw Error(ErrorCode::shape_mismatch,
                  std::string(kind()) + " observer: channel axis " + std::to_string(*axis_) +
                      " for a batch of shape " + to_string(shape) + "; expected an axis in [" +
                      std::to_string(-rank) + ", " + std::to_string(rank - 1) + "]");
    layout.channels = shape[static_cast<std::size_t>(a)];
    layout.outer = 1;
    for (int i = 0; i < a; ++i) layout.outer *= shape[static_cast<std::size_t>(i)];
    layout.inner = 1;
    for (int i = a + 1; i < rank; ++i) layout.inner *= shape[static_cast<std::size_t>(i)];
    if (numel > 0 && channels_ != 0 && layout.channels != channels_)
      throw Error(ErrorCode::shape_mismatch,
                  std::string(kind()) + " observer: a batch of shape " + to_string(shape) +
                      " has " + std::to_string(layout.channels) + " channels along axis " +
                      std::to_string(*axis_) + "; expected " + std::to_string(channels_) +
                      " as in the earlier batches");
  }
  if (numel == 0) {
    ++stats_.empty_batches;
    return;
  }
  if (channels_ == 0) channels_ = layout.channels;
  const std::int64_t skipped = observe_batch(data.data(), layout);
  ++stats_.batches;
  stats_.non_finite += skipped;
  stats_.values += numel - skipped;
}

void Observer::require_data(std::string_view who) const {
  if (has_data()) return;
  throw Error(ErrorCode::invalid_argument,
              std::string(who) + ": no data observed yet (" + std::to_string(stats_.batches) +
                  " batches, " + std::to_string(stats_.empty_batches) + " empty, " +
                  std::to_string(stats_.non_finite) +
                  " non-finite values skipped); observe at least one batch with a finite value "
                  "before asking for params");
}

void Observer::restore(std::int64_t channels, const ObserverStats& stats) {
  channels_ = channels;
  stats_ = stats;
}

}  // namespace qforge::calibration
