// Params from ranges in either convention (observer.h, Convention).
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <string>
#include <vector>

#include "qforge/calibration/observer.h"
#include "qforge/error.h"
#include "qforge/reference.h"
#include "text.h"

namespace qforge::calibration {
namespace {

// torch.round: half to even, written out (as core's reference does) so that the result does
// not depend on the thread's floating-point rounding mode.
float round_half_even(float v) {
  const float a = std::fabs(v);
  if (!(a < 8388608.0f)) return v;  // already integral (or inf / NaN)
  const float f = std::floor(a);
  const float d = a - f;
  const float r = (d > 0.5f || (d == 0.5f && std::fmod(f, 2.0f) != 0.0f)) ? f + 1.0f : f;
  return std::copysign(r, v);
}

struct Pair {
  float scale;
  std::int32_t zero_point;
};

// PyTorch's ObserverBase._calculate_qparams for one channel, in float32 as PyTorch computes it.
Pair pytorch_pair(const DTypeTraits& tr, Mapping mapping, float lo, float hi) {
  const float eps = FLT_EPSILON;  // torch.finfo(torch.float32).eps, PyTorch's default
  const float min_neg = std::min(lo, 0.0f);
  const float max_pos = std::max(hi, 0.0f);
  if (mapping == Mapping::symmetric) {
    const float amax = std::max(-min_neg, max_pos);
    // scale = max_val_pos / (float(quant_max - quant_min) / 2)
    const float half = static_cast<float>(static_cast<double>(tr.qmax - tr.qmin) / 2.0);
    const float scale = std::max(amax / half, eps);
    // PyTorch: 0 for qint8, 128 for quint8; generalised as the midpoint of unsigned types.
    const std::int32_t z = tr.is_signed ? 0 : (tr.qmin + tr.qmax + 1) / 2;
    return {scale, z};
  }
  const float scale = std::max((max_pos - min_neg) / static_cast<float>(tr.qmax - tr.qmin), eps);
  const float z = static_cast<float>(tr.qmin) - round_half_even(min_neg / scale);
  return {scale, static_cast<std::int32_t>(
                     std::clamp(z, static_cast<float>(tr.qmin), static_cast<float>(tr.qmax)))};
}

}  // namespace

QuantizationParams params_for_ranges(std::span<const Range> ranges, const Target& target,
                                     std::optional<int> axis) {
  if (ranges.empty())
    throw Error(ErrorCode::invalid_argument, "params_for_ranges: no ranges; expected at least one");
  if (!axis && ranges.size() != 1)
    throw Error(ErrorCode::invalid_argument,
                "params_for_ranges: " + std::to_string(ranges.size()) +
                    " ranges without a channel axis; expected 1 (per tensor)");
  const Scheme scheme = axis ? Scheme{target.mapping, Granularity::per_channel, *axis}
                             : Scheme{target.mapping, Granularity::per_tensor};
  std::vector<float> lo(ranges.size()), hi(ranges.size());
  for (std::size_t i = 0; i < ranges.size(); ++i) {
    lo[i] = ranges[i].lo;
    hi[i] = ranges[i].hi;
  }
  if (target.convention == Convention::qforge)
    return reference::params_from_ranges(target.dtype, scheme, lo, hi);

  const auto& tr = traits(target.dtype);
  if (target.mapping == Mapping::logarithmic || target.dtype == DType::binary)
    throw Error(ErrorCode::unsupported,
                "params_for_ranges: PyTorch's convention for " + std::string(tr.name) + " " +
                    std::string(to_string(target.mapping)) +
                    "; expected an affine or symmetric mapping of an integer dtype (PyTorch has "
                    "no binary or logarithmic observer)");
  std::vector<float> scales(ranges.size());
  std::vector<std::int32_t> zero_points(ranges.size());
  for (std::size_t i = 0; i < ranges.size(); ++i) {
    if (!std::isfinite(lo[i]) || !std::isfinite(hi[i]) || lo[i] > hi[i])
      throw Error(ErrorCode::invalid_argument,
                  "params_for_ranges: range " + std::to_string(i) + " [" + text::number(lo[i]) +
                      ", " + text::number(hi[i]) + "]; expected finite bounds with lo <= hi");
    const Pair p = pytorch_pair(tr, target.mapping, lo[i], hi[i]);
    scales[i] = p.scale;
    zero_points[i] = p.zero_point;
  }
  // Both of PyTorch's mappings quantize to the full range: affine params in qforge's terms.
  Scheme affine = scheme;
  affine.mapping = Mapping::affine;
  return QuantizationParams(target.dtype, affine, std::move(scales), std::move(zero_points));
}

}  // namespace qforge::calibration
