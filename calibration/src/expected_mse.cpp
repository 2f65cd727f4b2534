// Expected squared quantization error over a histogram, in closed form.
//
// Values are taken as uniform within each bin (the assumption re-binning makes too), so a bin
// [a, b] holding c values contributes c / (b - a) * integral_a^b (x - Q(x))^2 dx. With u = x / s
// and levels m * s for m in [m_lo, m_hi] (m = q - z), the quantizer rounds u to the nearest m
// inside [m_lo - 1/2, m_hi + 1/2] and clamps outside it. An antiderivative G of (x - Q(x))^2:
//   inside:  s^3 * H(u), H(u) = n / 12 + ((u - n)^3 + 1/8) / 3 with n = floor(u + 1/2)
//            (H' = (u - n)^2, continuous at the cell edges where H = (n + 1/2 + 1/2) / 12);
//   below:   G(x_lo) + ((x - m_lo s)^3 - (-s/2)^3) / 3 from x_lo = (m_lo - 1/2) s;
//   above:   G(x_hi) + ((x - m_hi s)^3 - (s/2)^3) / 3 from x_hi = (m_hi + 1/2) s.
// Binary (levels -s and +s, x < 0 -> -s, as the reference): G = ((x -/+ s)^3 +/- s^3) / 3.
// Ties and the float32 rounding of x / s in the real quantizer differ from this real-number
// model only on sets of measure zero or by one ulp.
#include <algorithm>
#include <cmath>
#include <string>

#include "qforge/calibration/methods.h"
#include "qforge/error.h"

namespace qforge::calibration {
namespace {

inline double cube(double v) { return v * v * v; }

struct ErrorIntegral {
  double s;
  double m_lo, m_hi;
  bool binary;

  double H(double u) const {
    const double n = std::floor(u + 0.5);
    return n / 12.0 + (cube(u - n) + 0.125) / 3.0;
  }

  double operator()(double x) const {
    if (binary) return x >= 0.0 ? (cube(x - s) + cube(s)) / 3.0 : (cube(x + s) - cube(s)) / 3.0;
    const double s3 = cube(s);
    const double x_lo = (m_lo - 0.5) * s, x_hi = (m_hi + 0.5) * s;
    if (x < x_lo) return s3 * H(m_lo - 0.5) + (cube(x - m_lo * s) - cube(-0.5 * s)) / 3.0;
    if (x > x_hi) return s3 * H(m_hi + 0.5) + (cube(x - m_hi * s) - cube(0.5 * s)) / 3.0;
    return s3 * H(x / s);
  }

  // Squared error at x itself (for bins of zero width: every value is 0).
  double at(double x) const {
    if (binary) return x < 0.0 ? (x + s) * (x + s) : (x - s) * (x - s);
    const double m = std::clamp(std::round(x / s), m_lo, m_hi);
    return (x - m * s) * (x - m * s);
  }
};

// Sum over one side's bins of count * integral over the bin; sign = +1 for x >= 0 bins
// [j w, (j + 1) w], -1 for negative bins [-(j + 1) w, -j w]. G at a shared edge is reused.
double side_integral(std::span<const double> counts, double w, double sign,
                     const ErrorIntegral& G) {
  double acc = 0.0, g_prev = 0.0;
  bool have_prev = false;
  for (std::size_t j = 0; j < counts.size(); ++j) {
    const double c = counts[j];
    if (c == 0.0) {
      have_prev = false;
      continue;
    }
    const double ga = have_prev ? g_prev : G(sign * static_cast<double>(j) * w);
    const double gb = G(sign * static_cast<double>(j + 1) * w);
    acc += c * (sign > 0.0 ? gb - ga : ga - gb);
    g_prev = gb;
    have_prev = true;
  }
  return acc;
}

}  // namespace

double expected_mse(const Histogram& histogram, const QuantizationParams& params) {
  if (params.count() != 1)
    throw Error(ErrorCode::invalid_argument,
                "expected_mse: params with " + std::to_string(params.count()) +
                    " (scale, zero point) pairs; expected per-tensor params (one pair)");
  if (params.scheme().mapping == Mapping::logarithmic)
    throw Error(ErrorCode::unsupported,
                "expected_mse: logarithmic params; expected an affine or symmetric mapping (the "
                "closed-form error assumes uniform levels)");
  const double total = histogram.total();
  if (!(total > 0.0)) return 0.0;
  const ErrorIntegral G{static_cast<double>(params.scale()),
                        static_cast<double>(params.qmin() - params.zero_point()),
                        static_cast<double>(params.qmax() - params.zero_point()),
                        params.dtype() == DType::binary};
  const double w = histogram.bin_width();
  if (!(w > 0.0)) return G.at(0.0);  // a zero limit: every value is exactly 0
  const double sum = side_integral(histogram.negative(), w, -1.0, G) +
                     side_integral(histogram.positive(), w, 1.0, G);
  return std::max(sum / w, 0.0) / total;
}

}  // namespace qforge::calibration
