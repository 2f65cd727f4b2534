// (scale, zero point) from an observed range [lo, hi], in float32 arithmetic (the same
// expressions ONNX Runtime's DynamicQuantizeLinear evaluates, so params_from_range(uint8,
// affine, min, max) equals the params dynamic_quantize_linear computes).
#include "qforge/reference.h"
#include "reference/detail.h"

namespace qforge::reference {
namespace {

struct Pair {
  float scale;
  std::int32_t zero_point;
};

Pair pair_from_range(const std::string& op, DType dtype, Mapping mapping, float lo, float hi) {
  if (!std::isfinite(lo) || !std::isfinite(hi))
    detail::fail(ErrorCode::invalid_argument, op,
                 "range [" + detail::float_text(lo) + ", " + detail::float_text(hi) +
                     "]; expected finite bounds");
  if (lo > hi)
    detail::fail(ErrorCode::invalid_argument, op,
                 "range [" + detail::float_text(lo) + ", " + detail::float_text(hi) +
                     "]; expected lo <= hi");
  if (dtype == DType::binary && mapping != Mapping::symmetric)
    detail::fail(ErrorCode::invalid_argument, op,
                 "binary with the " + std::string(to_string(mapping)) +
                     " mapping; expected symmetric (binary values are -1 and +1)");
  lo = std::min(lo, 0.0f);  // the range always holds 0.0, so 0.0 is exactly representable
  hi = std::max(hi, 0.0f);
  const auto& tr = traits(dtype);
  Pair p{1.0f, 0};
  switch (mapping) {
    case Mapping::affine: {
      const auto levels = static_cast<float>(tr.qmax - tr.qmin);
      const float span = hi - lo;
      // hi - lo overflows only for ranges wider than FLT_MAX; the quotient itself is finite.
      p.scale = std::isfinite(span) ? span / levels : hi / levels - lo / levels;
      // A zero range, or one so narrow that s underflows to 0, gets s = 1: every value in it
      // then quantizes to the zero point, i.e. to 0.0, within the range's own width.
      if (!(p.scale > 0.0f)) p.scale = 1.0f;
      const float z = static_cast<float>(tr.qmin) - lo / p.scale;
      p.zero_point =
          detail::saturate(static_cast<double>(detail::round_half_even(z)), tr.qmin, tr.qmax);
      break;
    }
    case Mapping::symmetric: {
      const std::int32_t z = symmetric_zero_point(dtype);
      // 127 for int8 and for uint8 (zero point 128, narrow range [1, 255]); 1 for binary.
      const auto half_levels = static_cast<float>(tr.narrow_qmax - z);
      p.scale = std::max(-lo, hi) / half_levels;
      if (!(p.scale > 0.0f)) p.scale = 1.0f;
      p.zero_point = z;
      break;
    }
    case Mapping::logarithmic:
      p.scale = std::max(-lo, hi);  // the largest magnitude is code +/-1 (k = 0)
      if (!(p.scale > 0.0f)) p.scale = 1.0f;
      p.zero_point = 0;
      break;
  }
  return p;
}

}  // namespace

QuantizationParams params_from_range(DType dtype, Mapping mapping, float lo, float hi) {
  const Pair p = pair_from_range("params_from_range", dtype, mapping, lo, hi);
  return QuantizationParams(dtype, Scheme{mapping, Granularity::per_tensor}, {p.scale},
                            {p.zero_point});
}

QuantizationParams params_from_ranges(DType dtype, const Scheme& scheme, std::span<const float> lo,
                                      std::span<const float> hi) {
  const std::string op = "params_from_ranges";
  if (lo.size() != hi.size())
    detail::fail(ErrorCode::invalid_argument, op,
                 std::to_string(lo.size()) + " lower bounds and " + std::to_string(hi.size()) +
                     " upper bounds; expected one pair per channel or block");
  if (lo.empty()) detail::fail(ErrorCode::invalid_argument, op, "no ranges; expected at least one");
  if (scheme.granularity == Granularity::per_tensor && lo.size() != 1)
    detail::fail(ErrorCode::invalid_argument, op,
                 std::to_string(lo.size()) + " ranges for a per_tensor scheme; expected 1");
  std::vector<float> scales;
  std::vector<std::int32_t> zero_points;
  for (std::size_t i = 0; i < lo.size(); ++i) {
    const Pair p = pair_from_range(op + " (range " + std::to_string(i) + ")", dtype, scheme.mapping,
                                   lo[i], hi[i]);
    scales.push_back(p.scale);
    zero_points.push_back(p.zero_point);
  }
  return QuantizationParams(dtype, scheme, std::move(scales), std::move(zero_points));
}

}  // namespace qforge::reference
