#include "harness/random_data.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "qforge/error.h"

namespace qforge::conformance {

std::int64_t uniform_int(Rng& rng, std::int64_t lo, std::int64_t hi) {
  return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
}

double uniform_real(Rng& rng, double lo, double hi) {
  return std::uniform_real_distribution<double>(lo, hi)(rng);
}

double log_uniform(Rng& rng, double lo, double hi) {
  return std::exp(uniform_real(rng, std::log(lo), std::log(hi)));
}

bool chance(Rng& rng, double p) { return std::bernoulli_distribution(p)(rng); }

float random_scale(Rng& rng) {
  if (chance(rng, 0.25)) return std::ldexp(1.0f, static_cast<int>(uniform_int(rng, -8, 2)));
  return static_cast<float>(log_uniform(rng, 1.0 / 256.0, 4.0));
}

std::size_t param_count(const Scheme& scheme, const Shape& shape) {
  switch (scheme.granularity) {
    case Granularity::per_tensor: return 1;
    case Granularity::per_channel: {
      const int rank = static_cast<int>(shape.size());
      const int axis = scheme.axis < 0 ? scheme.axis + rank : scheme.axis;
      return static_cast<std::size_t>(shape.at(static_cast<std::size_t>(axis)));
    }
    case Granularity::block: {
      const std::int64_t last = shape.empty() ? 1 : shape.back();
      const std::int64_t rows = last == 0 ? 0 : element_count(shape) / last;
      return static_cast<std::size_t>(rows * ((last + scheme.block_size - 1) / scheme.block_size));
    }
  }
  return 1;
}

QuantizationParams random_params(Rng& rng, DType dtype, const Scheme& scheme, const Shape& shape) {
  const std::size_t count = param_count(scheme, shape);
  std::vector<float> scales(count);
  for (auto& s : scales) s = random_scale(rng);
  std::vector<std::int32_t> zero_points;
  if (scheme.mapping == Mapping::affine) {
    zero_points.resize(count);
    for (auto& z : zero_points)
      z = static_cast<std::int32_t>(uniform_int(rng, traits(dtype).qmin, traits(dtype).qmax));
  }
  return QuantizationParams(dtype, scheme, std::move(scales), std::move(zero_points));
}

const std::vector<float>& special_floats() {
  constexpr float inf = std::numeric_limits<float>::infinity();
  constexpr float big = std::numeric_limits<float>::max();
  constexpr float denormal = std::numeric_limits<float>::denorm_min();
  static const std::vector<float> values = {std::numeric_limits<float>::quiet_NaN(),
                                            inf,
                                            -inf,
                                            big,
                                            -big,
                                            1e30f,
                                            -1e30f,
                                            -0.0f,
                                            denormal,
                                            -denormal * 1000.0f};
  return values;
}

namespace {

// A value near code q of the affine/symmetric map x = (q - z) * s.
float linear_value(Rng& rng, const QuantizationParams& params, std::size_t p) {
  const auto& tr = traits(params.dtype());
  const float s = params.scale(p);
  const std::int32_t z = params.zero_point(p);
  const std::int64_t span = static_cast<std::int64_t>(tr.qmax) - tr.qmin;
  // Past both ends by an eighth of the range, so saturation is exercised.
  const std::int64_t q = uniform_int(rng, tr.qmin - span / 8 - 2, tr.qmax + span / 8 + 2);
  const double frac = chance(rng, 0.2) ? (chance(rng, 0.5) ? 0.5 : -0.5)  // a tie
                                       : uniform_real(rng, -0.5, 0.5);
  return static_cast<float>((static_cast<double>(q - z) + frac) * s);
}

// A value of the logarithmic map x = sign * s * 2^(-k): exact powers of two (codes), values
// between them, and magnitudes past both ends.
float log_value(Rng& rng, const QuantizationParams& params, std::size_t p) {
  const float s = params.scale(p);
  const int kmax = std::min(traits(params.dtype()).qmax, 160);
  const double k = chance(rng, 0.3) ? static_cast<double>(uniform_int(rng, -2, kmax + 2))
                                    : uniform_real(rng, -3.0, kmax + 3.0);
  const double sign = chance(rng, 0.5) ? 1.0 : -1.0;
  if (chance(rng, 0.05)) return 0.0f;
  return static_cast<float>(sign * s * std::exp2(-k));
}

}  // namespace

std::vector<float> quantize_inputs(Rng& rng, const QuantizationParams& params, const Shape& shape,
                                   bool specials) {
  const std::size_t n = static_cast<std::size_t>(element_count(shape));
  std::vector<float> x(n);
  const bool log = params.scheme().mapping == Mapping::logarithmic;
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t p = params.param_index(shape, static_cast<std::int64_t>(i));
    x[i] = log ? log_value(rng, params, p) : linear_value(rng, params, p);
  }
  if (specials && n > 0) {
    const auto& sp = special_floats();
    for (std::size_t i = 0; i < n; ++i)
      if (chance(rng, 0.08))
        x[i] = sp[static_cast<std::size_t>(uniform_int(rng, 0, sp.size() - 1))];
    // One of each at distinct random positions, as far as the tensor has room.
    std::vector<std::size_t> positions(n);
    for (std::size_t i = 0; i < n; ++i) positions[i] = i;
    std::shuffle(positions.begin(), positions.end(), rng);
    for (std::size_t j = 0; j < std::min(n, sp.size()); ++j) x[positions[j]] = sp[j];
  }
  return x;
}

std::vector<std::byte> store_floats(FloatType type, const std::vector<float>& values) {
  std::vector<std::byte> out(values.size() * static_cast<std::size_t>(size_of(type)));
  for (std::size_t i = 0; i < values.size(); ++i) store_float(type, out.data(), i, values[i]);
  return out;
}

std::vector<std::byte> random_codes(Rng& rng, DType dtype, std::size_t count, std::int32_t lo,
                                    std::int32_t hi) {
  lo = std::max(lo, traits(dtype).qmin);
  hi = std::min(hi, traits(dtype).qmax);
  std::vector<std::byte> out(storage_bytes(dtype, count));
  for (std::size_t i = 0; i < count; ++i)
    store_element(dtype, out.data(), i, static_cast<std::int32_t>(uniform_int(rng, lo, hi)));
  return out;
}

std::vector<std::byte> extreme_codes(Rng& rng, DType dtype, std::size_t count, std::int32_t lo,
                                     std::int32_t hi) {
  std::vector<std::byte> out(storage_bytes(dtype, count));
  for (std::size_t i = 0; i < count; ++i)
    store_element(dtype, out.data(), i, chance(rng, 0.5) ? lo : hi);
  return out;
}

std::vector<float> normal_floats(Rng& rng, std::size_t count, double sigma) {
  std::normal_distribution<double> dist(0.0, sigma);
  std::vector<float> out(count);
  for (auto& v : out) v = static_cast<float>(dist(rng));
  return out;
}

}  // namespace qforge::conformance
