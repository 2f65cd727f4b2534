// Observers: feed batches of float32 tensors, then ask for QuantizationParams.
//
// An observer watches one tensor (per tensor) or each index along one axis of it (per
// channel). observe() is one virtual call per batch; the per-element work is a vectorised pass
// over memory in the library, never a per-element virtual call. The same observer can be asked
// for params of several dtypes, mappings and conventions without observing again.
//
// Bad and edge input:
//   - NaN and +/-inf are skipped and counted in stats().non_finite, never folded into a range.
//   - Batches with no elements are ignored (counted in stats().empty_batches).
//   - Asking for params before any finite value was observed throws qforge::Error.
//   - A constant or all-zero tensor gives valid params (the range always holds 0, and a zero
//     range gives scale 1 in qforge's convention, never 0 or NaN).
// Observers are not thread-safe: one observer is fed from one thread at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "qforge/calibration/export.h"
#include "qforge/dtype.h"
#include "qforge/params.h"
#include "qforge/scheme.h"
#include "qforge/shape.h"

namespace qforge::calibration {

// How a range becomes (scale, zero point).
enum class Convention : std::uint8_t {
  // qforge core's reference::params_from_range(s) (DESIGN.md): symmetric s = max|x| / 127 for
  // int8 with the narrow range [-127, 127] and z = 0 (uint8: z = 128, [1, 255]); a zero range
  // gives s = 1. Returns params with the requested mapping.
  qforge,
  // PyTorch's torch.ao.quantization ObserverBase._calculate_qparams (reduce_range off, eps =
  // float32 epsilon): affine s = max(range / (qmax - qmin), eps), z = qmin - round(lo / s);
  // symmetric s = max(max|x| / ((qmax - qmin) / 2), eps) = max|x| / 127.5 for int8, z = 0 for
  // signed types and the midpoint (qmin + qmax + 1) / 2 for unsigned ones (128 for uint8),
  // quantizing to the full range [-128, 127]. PyTorch's quantized tensors from a symmetric
  // observer are per_tensor_affine with that fixed zero point, and so are these params
  // (Mapping::affine), so that qforge's ops reproduce PyTorch's values exactly. Affine and
  // symmetric only; binary and logarithmic have no PyTorch counterpart.
  pytorch,
};

// What params to produce.
struct Target {
  DType dtype = DType::int8;
  Mapping mapping = Mapping::affine;
  Convention convention = Convention::qforge;
};

// A closed interval of real values: the range a method chose (before params_from_range adds 0).
struct Range {
  float lo = 0.0f;
  float hi = 0.0f;
  friend bool operator==(const Range&, const Range&) = default;
};

struct ObserverStats {
  std::int64_t batches = 0;        // batches with at least one element
  std::int64_t empty_batches = 0;  // batches with no elements (ignored)
  std::int64_t values = 0;         // finite values folded in
  std::int64_t non_finite = 0;     // NaN / +inf / -inf values skipped
  friend bool operator==(const ObserverStats&, const ObserverStats&) = default;
};

// A batch seen as [outer, channels, inner] row-major: channel c's elements are `outer` runs of
// `inner` contiguous values. Per tensor: outer = 1, channels = 1, inner = numel.
struct BatchLayout {
  std::int64_t outer = 1;
  std::int64_t channels = 1;
  std::int64_t inner = 0;
};

// Params for one range (per tensor, axis empty) or one range per channel (per channel along
// `axis`), in the target's convention. In qforge's convention this is exactly
// reference::params_from_range / params_from_ranges, so calibration and core agree.
QFORGE_CALIBRATION_API QuantizationParams params_for_ranges(std::span<const Range> ranges,
                                                            const Target& target,
                                                            std::optional<int> axis);

class QFORGE_CALIBRATION_API Observer {
 public:
  virtual ~Observer();

  // One batch: the elements of a row-major float32 tensor of this shape. Per-channel observers
  // need the axis to exist in the shape and the same number of channels in every batch.
  void observe(std::span<const float> data, const Shape& shape);
  // One batch given as a flat list of values (per-tensor observers only).
  void observe(std::span<const float> data);

  // Params for the target: per tensor, or per channel along axis() (Scheme::per_channel_*).
  // Throws qforge::Error before any finite value was observed (or, per channel, naming the
  // first channel that saw none).
  virtual QuantizationParams params(const Target& target) const = 0;

  virtual std::string_view kind() const noexcept = 0;  // "minmax", "moving_average_minmax", ...
  virtual std::unique_ptr<Observer> clone() const = 0;

  // The axis given at construction (may be negative: counted from the end); empty per tensor.
  const std::optional<int>& axis() const noexcept { return axis_; }
  // Channels: 1 per tensor; per channel, the extent of the axis (0 before the first batch).
  std::int64_t channels() const noexcept { return channels_; }
  const ObserverStats& stats() const noexcept { return stats_; }
  bool has_data() const noexcept { return stats_.values > 0; }

 protected:
  explicit Observer(std::optional<int> axis);
  Observer(const Observer&) = default;
  Observer& operator=(const Observer&) = default;

  // Called once per non-empty batch, after the layout was checked against earlier batches.
  // Returns the number of non-finite values it skipped.
  virtual std::int64_t observe_batch(const float* data, const BatchLayout& layout) = 0;

  // Throws the "no data yet" error naming `who`.
  void require_data(std::string_view who) const;
  // Restores the base state (deserialisation).
  void restore(std::int64_t channels, const ObserverStats& stats);

 private:
  std::optional<int> axis_;
  std::int64_t channels_;
  ObserverStats stats_;
};

}  // namespace qforge::calibration
