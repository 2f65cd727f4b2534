// "Fastest within an accuracy budget" (precision.h).
#include "qforge/calibration/precision.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "qforge/checked_size.h"
#include "qforge/error.h"
#include "qforge/reference.h"

namespace qforge::calibration {
namespace {

void check_data(const char* what, std::span<const float> x, std::size_t expected) {
  if (x.size() != expected)
    throw Error(ErrorCode::shape_mismatch, std::string("recommend: ") + what + " has " +
                                               std::to_string(x.size()) + " values; expected " +
                                               std::to_string(expected));
  for (std::size_t i = 0; i < x.size(); ++i)
    if (!std::isfinite(x[i]))
      throw Error(ErrorCode::invalid_argument,
                  std::string("recommend: ") + what + "[" + std::to_string(i) +
                      "] = " + std::to_string(x[i]) + "; expected finite values");
}

// Params from the observed ranges of `x` (row-major `shape`) for one (dtype, scheme).
QuantizationParams params_from_data(DType dtype, const Scheme& scheme, const Shape& shape,
                                    std::span<const float> x) {
  if (scheme.granularity == Granularity::per_tensor) {
    const auto [lo, hi] = std::minmax_element(x.begin(), x.end());
    return x.empty() ? reference::params_from_range(dtype, scheme.mapping, 0, 0)
                     : reference::params_from_range(dtype, scheme.mapping, *lo, *hi);
  }
  // One (lo, hi) per pair, through the same index mapping the params use (param_index).
  const QuantizationParams layout = workload_params(dtype, scheme, shape);
  std::vector<float> lo(layout.count(), std::numeric_limits<float>::infinity());
  std::vector<float> hi(layout.count(), -std::numeric_limits<float>::infinity());
  for (std::size_t i = 0; i < x.size(); ++i) {
    const std::size_t p = layout.param_index(shape, static_cast<std::int64_t>(i));
    lo[p] = std::min(lo[p], x[i]);
    hi[p] = std::max(hi[p], x[i]);
  }
  for (std::size_t p = 0; p < lo.size(); ++p)
    if (lo[p] > hi[p]) lo[p] = hi[p] = 0;
  return reference::params_from_ranges(dtype, scheme, lo, hi);
}

double nmse(std::span<const float> got, std::span<const double> ref) {
  double err = 0, norm = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    const double d = static_cast<double>(got[i]) - ref[i];
    err += d * d;
    norm += ref[i] * ref[i];
  }
  return norm == 0 ? (err == 0 ? 0 : std::numeric_limits<double>::infinity()) : err / norm;
}

// Times a path of workloads; fills seconds and winners, or message when one cannot be tuned.
void time_path(Accelerator& acc, const std::vector<Workload>& path, PrecisionResult& r) {
  try {
    for (const auto& w : path) {
      const TuneReport t = acc.tune(w);
      r.seconds += t.winner_seconds;
      r.winners.push_back(t.winner);
    }
  } catch (const Error& e) {
    r.seconds = 0;
    r.winners.clear();
    r.message = e.what();
  }
}

int storage_bits(DType t) { return traits(t).bits; }

std::optional<std::size_t> pick(const std::vector<PrecisionResult>& tried,
                                const std::vector<int>& bits) {
  std::optional<std::size_t> best;
  for (std::size_t i = 0; i < tried.size(); ++i) {
    const auto& r = tried[i];
    if (!r.meets || r.winners.empty()) continue;
    if (!best) {
      best = i;
      continue;
    }
    const auto& b = tried[*best];
    // Measured times decide; untimed choices (a fallback decision) lose to timed ones, and
    // among equals the narrower dtype wins (less memory traffic everywhere else).
    const bool r_timed = r.seconds > 0, b_timed = b.seconds > 0;
    if (r_timed != b_timed) {
      if (r_timed) best = i;
      continue;
    }
    if (r_timed && r.seconds != b.seconds) {
      if (r.seconds < b.seconds) best = i;
      continue;
    }
    if (bits[i] < bits[*best]) best = i;
  }
  return best;
}

}  // namespace

std::string QuantizationChoice::label() const {
  return std::string(name(dtype)) + " " + to_string(scheme);
}

std::string MatmulChoice::label() const {
  return "a=" + std::string(name(a)) + "/" + to_string(a_scheme) + " b=" + std::string(name(b)) +
         "/" + to_string(b_scheme);
}

std::vector<QuantizationChoice> default_quantization_choices() {
  return {{DType::int8, Scheme::per_tensor_symmetric()},
          {DType::int8, Scheme::per_channel_symmetric(0)},
          {DType::uint8, Scheme::per_tensor_affine()},
          {DType::int4, Scheme::block_symmetric(32)},
          {DType::int4, Scheme::per_channel_symmetric(0)},
          {DType::uint4, Scheme::block_affine(32)},
          {DType::int16, Scheme::per_tensor_symmetric()}};
}

std::vector<MatmulChoice> default_matmul_choices() {
  return {
      {DType::int8, Scheme::per_tensor_symmetric(), DType::int8, Scheme::per_tensor_symmetric()},
      {DType::int8, Scheme::per_tensor_symmetric(), DType::int8, Scheme::per_channel_symmetric(1)},
      {DType::uint8, Scheme::per_tensor_affine(), DType::int8, Scheme::per_channel_symmetric(1)},
      {DType::int8, Scheme::per_tensor_symmetric(), DType::int4, Scheme::per_channel_symmetric(1)},
      {DType::int8, Scheme::per_tensor_symmetric(), DType::int4, Scheme::block_symmetric(32)}};
}

PrecisionRecommendation recommend_quantization(Accelerator& accelerator, const Shape& shape,
                                               std::span<const float> x, double tolerance,
                                               std::vector<QuantizationChoice> choices) {
  check_data("x", x, static_cast<std::size_t>(element_count(shape)));
  if (choices.empty()) choices = default_quantization_choices();
  std::vector<double> exact(x.begin(), x.end());
  PrecisionRecommendation rec;
  std::vector<int> bits;
  for (const auto& c : choices) {
    PrecisionResult r;
    r.label = c.label();
    bits.push_back(storage_bits(c.dtype));
    try {
      const QuantizeDesc d{shape, params_from_data(c.dtype, c.scheme, shape, x), FloatType::f32};
      std::vector<std::byte> q(storage_bytes(c.dtype, x.size()));
      std::vector<float> back(x.size());
      reference::quantize(d, x.data(), q.data());
      reference::dequantize(d, q.data(), back.data());
      r.nmse = nmse(back, exact);
      r.meets = r.nmse <= tolerance;
      if (r.meets) time_path(accelerator, {{{OpKind::quantize, d}}, {{OpKind::dequantize, d}}}, r);
      else r.message = "error above the tolerance; not timed";
    } catch (const Error& e) {
      r.message = e.what();
    }
    rec.tried.push_back(std::move(r));
  }
  rec.best = pick(rec.tried, bits);
  return rec;
}

PrecisionRecommendation recommend_matmul(Accelerator& accelerator, std::int64_t m, std::int64_t n,
                                         std::int64_t k, std::span<const float> a,
                                         std::span<const float> b, double tolerance,
                                         std::vector<MatmulChoice> choices) {
  if (m < 0 || n < 0 || k < 0)
    throw Error(ErrorCode::invalid_argument,
                "recommend_matmul: negative extent; expected m, n, k >= 0");
  check_data("a", a,
             static_cast<std::size_t>(checked_element_count("recommend_matmul: a [M, K]", {m, k})));
  check_data("b", b,
             static_cast<std::size_t>(checked_element_count("recommend_matmul: b [K, N]", {k, n})));
  if (choices.empty()) choices = default_matmul_choices();

  // The float answer, in double.
  std::vector<double> exact(
      static_cast<std::size_t>(checked_element_count("recommend_matmul: output [M, N]", {m, n})),
      0.0);
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t p = 0; p < k; ++p) {
      const double av = a[static_cast<std::size_t>(i * k + p)];
      for (std::int64_t j = 0; j < n; ++j)
        exact[static_cast<std::size_t>(i * n + j)] += av * b[static_cast<std::size_t>(p * n + j)];
    }
  // B transposed to [n, k] for block-wise weights, which run along K (the nk layout).
  std::vector<float> bt(b.size());
  for (std::int64_t p = 0; p < k; ++p)
    for (std::int64_t j = 0; j < n; ++j)
      bt[static_cast<std::size_t>(j * k + p)] = b[static_cast<std::size_t>(p * n + j)];

  PrecisionRecommendation rec;
  std::vector<int> bits;
  for (const auto& c : choices) {
    PrecisionResult r;
    r.label = c.label();
    bits.push_back(storage_bits(c.a) + storage_bits(c.b));
    try {
      const bool nk = c.b_scheme.granularity == Granularity::block;
      Scheme bs = c.b_scheme;
      if (bs.granularity == Granularity::per_channel) bs.axis = nk ? 0 : 1;  // the N axis
      const Shape b_shape = nk ? Shape{n, k} : Shape{k, n};
      std::span<const float> bdata = nk ? std::span<const float>(bt) : b;
      const MatmulDesc d{m,
                         n,
                         k,
                         params_from_data(c.a, c.a_scheme, {m, k}, a),
                         params_from_data(c.b, bs, b_shape, bdata),
                         nk ? MatrixLayout::nk : MatrixLayout::kn,
                         /*has_bias=*/false,
                         FloatType::f32,
                         std::nullopt,
                         RequantMode::float_multiplier};
      std::vector<std::byte> qa(storage_bytes(c.a, a.size())), qb(storage_bytes(c.b, b.size()));
      reference::quantize({{m, k}, d.a, FloatType::f32}, a.data(), qa.data());
      reference::quantize({b_shape, d.b, FloatType::f32}, bdata.data(), qb.data());
      std::vector<float> y(exact.size());
      reference::matmul_dequant(d, qa.data(), qb.data(), nullptr, y.data());
      r.nmse = nmse(y, exact);
      r.meets = r.nmse <= tolerance;
      if (r.meets)
        time_path(accelerator,
                  {{{OpKind::quantize, QuantizeDesc{{m, k}, d.a, FloatType::f32}}},
                   {{OpKind::matmul_dequant, d}}},
                  r);
      else r.message = "error above the tolerance; not timed";
    } catch (const Error& e) {
      r.message = e.what();
    }
    rec.tried.push_back(std::move(r));
  }
  rec.best = pick(rec.tried, bits);
  return rec;
}

}  // namespace qforge::calibration
