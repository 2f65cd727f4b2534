// Expected squared quantization error over a histogram, in closed form.
//
// Values are taken as uniform within each bin (the assumption re-binning makes too), so a bin
// [a, b] holding c values contributes c / (b - a) * integral_a^b (x - Q(x))^2 dx.
//
// Levels are m * s for m = q - z in [m_lo, m_hi] (m_lo <= 0 <= m_hi for every valid params).
// For x >= 0 only the top matters: Q(x) = s * min(round(x / s), m_hi); a negative value -x is
// quantized like x with top -m_lo. So each side is one integral over [0, A] with its own top M:
//   inside  (x <= (M + 1/2) s):  G(x) = s^3 H(x / s),  H(u) = n / 12 + ((u - n)^3 + 1/8) / 3,
//                                n = floor(u + 1/2)  (H' = (u - n)^2, continuous at cell edges,
//                                where H = (n + 1) / 12)
//   clipped (x > (M + 1/2) s):   G(x) = s^3 (M + 1) / 12 + ((x - M s)^3 - (s / 2)^3) / 3
// Binary (levels -s and +s, x < 0 -> -s, as the reference): G(x) = ((x - s)^3 + s^3) / 3 for
// x >= 0, and the same for the mirrored negative side.
// Ties and the float32 rounding of x / s in the real quantizer differ from this real-number
// model only on sets of measure zero or by one ulp.
//
// The edges of one side are evaluated in two branch-free loops (inside, then clipped), which
// the compiler vectorises; this runs once per candidate of the MSE search (~1900 per tensor).
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "error_model.h"
#include "qforge/calibration/methods.h"
#include "qforge/error.h"

namespace qforge::calibration {
namespace {

inline double cube(double v) { return v * v * v; }

// floor(v) for 0 <= v < 2^31: truncation, without a libm call (SSE2 has no rounding
// instruction), so that the loop vectorises.
inline double floor_nonnegative(double v) {
  return static_cast<double>(static_cast<std::int32_t>(v));
}

// sum_j counts[j] * integral over [j w, (j + 1) w] of the squared error, for levels up to top * s.
double side_integral(std::span<const double> counts, double w, double s, double top, bool binary,
                     std::vector<double>& g) {
  std::size_t used = counts.size();
  while (used > 0 && counts[used - 1] == 0.0) --used;
  if (used == 0) return 0.0;
  g.resize(used + 1);
  // int indices (histograms have at most INT_MAX bins): int -> double converts in vector code.
  const int last = static_cast<int>(used);
  if (binary) {
    const double s3 = cube(s);
    for (int j = 0; j <= last; ++j) g[static_cast<std::size_t>(j)] = (cube(j * w - s) + s3) / 3.0;
  } else {
    const double s3 = cube(s), inv_s = 1.0 / s;
    const double x_clip = (top + 0.5) * s;
    // Edges j * w <= x_clip are inside; the cell count (top + 1/2) keeps u far below 2^31.
    const auto inside = static_cast<int>(std::min(std::floor(x_clip / w) + 1.0, last + 1.0));
    for (int j = 0; j < inside; ++j) {
      const double u = j * w * inv_s;
      const double n = floor_nonnegative(u + 0.5);  // u >= 0 on a side
      g[static_cast<std::size_t>(j)] = s3 * (n / 12.0 + (cube(u - n) + 0.125) / 3.0);
    }
    const double base = s3 * (top + 1.0) / 12.0 - cube(0.5 * s) / 3.0, level = top * s;
    for (int j = inside; j <= last; ++j)
      g[static_cast<std::size_t>(j)] = base + cube(j * w - level) / 3.0;
  }
  // Four partial sums: the compiler may not reorder a floating-point reduction itself.
  double acc[4] = {0.0, 0.0, 0.0, 0.0};
  std::size_t j = 0;
  for (; j + 4 <= used; j += 4)
    for (std::size_t k = 0; k < 4; ++k) acc[k] += counts[j + k] * (g[j + k + 1] - g[j + k]);
  for (; j < used; ++j) acc[0] += counts[j] * (g[j + 1] - g[j]);
  return (acc[0] + acc[1]) + (acc[2] + acc[3]);
}

}  // namespace

ErrorModel::ErrorModel(const Histogram& h)
    : positive_(h.positive()),
      negative_(h.negative()),
      magnitude_(h.magnitude()),
      total_(h.total()),
      width_(h.bin_width()) {}

double ErrorModel::mse(const QuantizationParams& params) {
  if (params.count() != 1)
    throw Error(ErrorCode::invalid_argument,
                "expected_mse: params with " + std::to_string(params.count()) +
                    " (scale, zero point) pairs; expected per-tensor params (one pair)");
  if (params.scheme().mapping == Mapping::logarithmic)
    throw Error(ErrorCode::unsupported,
                "expected_mse: logarithmic params; expected an affine or symmetric mapping (the "
                "closed-form error assumes uniform levels)");
  if (!(total_ > 0.0)) return 0.0;
  const bool binary = params.dtype() == DType::binary;
  const auto s = static_cast<double>(params.scale());
  const auto top_pos = static_cast<double>(params.qmax() - params.zero_point());
  const auto top_neg = static_cast<double>(params.zero_point() - params.qmin());
  if (!(width_ > 0.0)) return binary ? s * s : 0.0;  // a zero limit: every value is exactly 0
  double sum = 0.0;
  if (top_pos == top_neg || binary) {
    // The same quantizer on both sides: fold into the |x| histogram, one integral.
    sum = side_integral(magnitude_, width_, s, top_pos, binary, g_);
  } else {
    sum = side_integral(positive_, width_, s, top_pos, binary, g_) +
          side_integral(negative_, width_, s, top_neg, binary, g_);
  }
  return std::max(sum / width_, 0.0) / total_;
}

double expected_mse(const Histogram& histogram, const QuantizationParams& params) {
  return ErrorModel(histogram).mse(params);
}

}  // namespace qforge::calibration
