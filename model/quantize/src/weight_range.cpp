#include "qforge/model/weight_range.h"

#include <algorithm>
#include <cmath>

#include "qforge/params.h"
#include "qforge/reference.h"

namespace qforge::model {

WeightRange minmax_range(std::span<const float> values) {
  WeightRange r;
  for (float v : values) {
    r.lo = std::min(r.lo, v);
    r.hi = std::max(r.hi, v);
  }
  return r;
}

double range_squared_error(DType dtype, Mapping mapping, WeightRange r,
                           std::span<const float> values) {
  const QuantizationParams p = reference::params_from_range(dtype, mapping, r.lo, r.hi);
  const float scale = p.scales()[0];
  const std::int32_t zero_point = p.zero_points()[0];
  const std::int32_t qmin = p.qmin(), qmax = p.qmax();
  double sum = 0;
  for (float v : values) {
    const std::int32_t q = reference::quantize_value(v, scale, zero_point, qmin, qmax);
    const double e = static_cast<double>(reference::dequantize_value(q, scale, zero_point)) - v;
    sum += e * e;
  }
  return sum;
}

namespace {

struct Candidate {
  double a = 1.0, b = 1.0;  // the factors of the min/max range's lo and hi
  double error = 0;
};

// Tries a = center.a + k * step and b = center.b + l * step for |k|, |l| <= steps, within
// [0.5, 1] (b = a when `joint`), and keeps the first strictly better candidate in `best`.
void scan(DType dtype, Mapping mapping, WeightRange full, std::span<const float> values,
          Candidate center, double step, int steps, bool joint, Candidate& best) {
  const auto in_grid = [](double f) { return f >= 0.5 - 1e-9 && f <= 1.0 + 1e-9; };
  for (int k = steps; k >= -steps; --k) {
    const double a = center.a + k * step;
    if (!in_grid(a)) continue;
    for (int l = joint ? 0 : steps; l >= (joint ? 0 : -steps); --l) {
      const double b = joint ? a : center.b + l * step;
      if (!in_grid(b)) continue;
      const WeightRange r{static_cast<float>(a * full.lo), static_cast<float>(b * full.hi)};
      const double e = range_squared_error(dtype, mapping, r, values);
      if (e < best.error) best = {a, b, e};
    }
  }
}

}  // namespace

WeightRange mse_range(DType dtype, Mapping mapping, std::span<const float> values) {
  const WeightRange full = minmax_range(values);
  if (!std::isfinite(full.lo) || !std::isfinite(full.hi)) return full;
  Candidate best{1.0, 1.0, range_squared_error(dtype, mapping, full, values)};
  if (!(best.error > 0)) return full;  // exact already, or NaN values: min/max reports them
  const bool joint = mapping != Mapping::affine;
  // Coarse: 1, 0.875, 0.75, 0.625, 0.5. Fine: steps of 0.025 within 0.075 of the best so far,
  // which covers the coarse grid's gaps either side.
  scan(dtype, mapping, full, values, {0.75, 0.75}, 0.125, 2, joint, best);
  scan(dtype, mapping, full, values, best, 0.025, 3, joint, best);
  if (best.a == 1.0 && best.b == 1.0) return full;
  return {static_cast<float>(best.a * full.lo), static_cast<float>(best.b * full.hi)};
}

}  // namespace qforge::model
