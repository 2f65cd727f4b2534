// The histogram methods against hand-computed cases and against a line-by-line port of NVIDIA
// pytorch-quantization's Python (entropy), and the closed-form expected error against numeric
// integration with core's reference quantizer.
#include "qforge/calibration/methods.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <vector>

#include "qforge/error.h"
#include "qforge/reference.h"
#include "test_support.h"

namespace qforge::calibration {
namespace {

constexpr double kInfD = std::numeric_limits<double>::infinity();

// ---- percentile ----

TEST(Percentile, HandComputedNvidiaAndInterpolated) {
  const std::vector<double> counts = {10, 20, 30, 40};             // cdf 0.1, 0.3, 0.6, 1.0; w = 1
  EXPECT_EQ(percentile_threshold(counts, 1.0, 50.0, false), 2.0);  // bin_edges[2]
  EXPECT_NEAR(percentile_threshold(counts, 1.0, 50.0, true), 2.0 + 0.2 / 0.3, 1e-12);
  EXPECT_EQ(percentile_threshold(counts, 1.0, 100.0, false), 3.0);
  EXPECT_NEAR(percentile_threshold(counts, 1.0, 100.0, true), 4.0, 1e-12);
  EXPECT_EQ(percentile_threshold(counts, 0.5, 5.0, false), 0.0);
  EXPECT_NEAR(percentile_threshold(counts, 0.5, 5.0, true), 0.25, 1e-12);
  EXPECT_EQ(percentile_threshold(std::vector<double>{0, 0}, 1.0, 99.0, true), 0.0);
}

TEST(Percentile, SymmetricAndAffineRanges) {
  // |x| uniform: 2 values per |x| bin of width 1 up to 10, one per side.
  const auto h = Histogram::from_parts(10, 10.0f, -10.0f, 10.0f, std::vector<double>(10, 1.0),
                                       std::vector<double>(10, 1.0));
  MethodOptions o{Method::percentile, 85.0, true};
  // Symmetric: |x| cdf reaches 0.85 in bin 8 (0.8 -> 0.9): 8.5.
  EXPECT_EQ(select_range(h, {DType::int8, Mapping::symmetric}, o), (Range{-8.5f, 8.5f}));
  // Affine (ONNX Runtime): cut 7.5% from each tail of the signed histogram: bins [-9, -8] and
  // [8, 9], halfway in.
  EXPECT_EQ(select_range(h, {DType::int8, Mapping::affine}, o), (Range{-8.5f, 8.5f}));
  o.percentile_interpolate = false;  // left edges, as NVIDIA / ONNX Runtime
  EXPECT_EQ(select_range(h, {DType::int8, Mapping::symmetric}, o), (Range{-8.0f, 8.0f}));
  EXPECT_EQ(select_range(h, {DType::int8, Mapping::affine}, o), (Range{-9.0f, 8.0f}));
}

// ---- entropy: NVIDIA's _compute_amax_entropy, transcribed statement by statement ----

struct NvidiaEntropy {
  double amax;
  std::vector<double> divergences;  // per candidate, in order
  std::vector<std::int64_t> arguments;
};

NvidiaEntropy nvidia_entropy(const std::vector<double>& calib_hist, double width, int nbins,
                             int start_bin, int stride) {
  std::vector<double> bins = calib_hist;  // bins = calib_hist[:]
  bins[0] = bins[1];
  const double total_data = std::accumulate(bins.begin(), bins.end(), 0.0);
  NvidiaEntropy out{};
  const int stop = static_cast<int>(bins.size());
  // qforge's guard (not NVIDIA's): start no lower than the first i whose bins[:i] hold half the
  // values.
  int half = 1;
  while (half < stop && std::accumulate(bins.begin(), bins.begin() + half, 0.0) < 0.5 * total_data)
    ++half;
  if (half > start_bin) start_bin += (half - start_bin + stride - 1) / stride * stride;
  for (int i = start_bin; i <= stop; i += stride) {
    std::vector<double> new_density_counts(static_cast<std::size_t>(nbins), 0.0);
    // space = np.linspace(0, i, num=nbins + 1)
    std::vector<double> space(static_cast<std::size_t>(nbins) + 1);
    const double step = static_cast<double>(i) / nbins;
    for (int j = 0; j < nbins; ++j) space[static_cast<std::size_t>(j)] = j * step;
    space[static_cast<std::size_t>(nbins)] = i;
    // digitized_space = np.digitize(range(i), space) - 1
    std::vector<int> digitized(static_cast<std::size_t>(i));
    for (int idx = 0; idx < i; ++idx)
      digitized[static_cast<std::size_t>(idx)] =
          static_cast<int>(std::upper_bound(space.begin(), space.end(), double(idx)) -
                           space.begin()) -
          1;
    // digitized_space[bins[:i] == 0] = -1
    for (int idx = 0; idx < i; ++idx)
      if (bins[static_cast<std::size_t>(idx)] == 0) digitized[static_cast<std::size_t>(idx)] = -1;
    for (int idx = 0; idx < i; ++idx)
      if (digitized[static_cast<std::size_t>(idx)] != -1)
        new_density_counts[static_cast<std::size_t>(digitized[static_cast<std::size_t>(idx)])] +=
            bins[static_cast<std::size_t>(idx)];
    std::map<int, int> counter;
    for (int d : digitized) ++counter[d];
    for (const auto& [key, val] : counter)
      if (key != -1) new_density_counts[static_cast<std::size_t>(key)] /= val;
    std::vector<double> new_density(static_cast<std::size_t>(i), 0.0);
    for (int idx = 0; idx < i; ++idx)
      if (digitized[static_cast<std::size_t>(idx)] != -1)
        new_density[static_cast<std::size_t>(idx)] =
            new_density_counts[static_cast<std::size_t>(digitized[static_cast<std::size_t>(idx)])];
    std::vector<double> reference_density(bins.begin(), bins.begin() + i);
    reference_density.back() += std::accumulate(bins.begin() + i, bins.end(), 0.0);
    EXPECT_NEAR(std::accumulate(reference_density.begin(), reference_density.end(), 0.0),
                total_data, 1e-6 * total_data);
    // scipy.stats.entropy(reference_density, new_density)
    const double sp = std::accumulate(reference_density.begin(), reference_density.end(), 0.0);
    const double sq = std::accumulate(new_density.begin(), new_density.end(), 0.0);
    double ent = 0.0;
    if (sq == 0.0) ent = std::numeric_limits<double>::quiet_NaN();
    for (std::size_t k = 0; k < reference_density.size() && sq != 0.0; ++k) {
      const double p = reference_density[k] / sp, q = new_density[k] / sq;
      if (p > 0.0) ent += q > 0.0 ? p * std::log(p / q) : kInfD;
    }
    out.divergences.push_back(ent);
    out.arguments.push_back(i);
  }
  // last_argmin = len(divergences) - 1 - np.argmin(divergences[::-1]); NaN treated as +inf
  // (qforge skips undefined candidates).
  double best = kInfD;
  std::int64_t best_i = stop;
  for (std::size_t k = 0; k < out.divergences.size(); ++k) {
    const double d = std::isnan(out.divergences[k]) ? kInfD : out.divergences[k];
    if (d <= best && d < kInfD) {
      best = d;
      best_i = out.arguments[k];
    }
  }
  out.amax = static_cast<double>(best_i) * width;  // calib_bin_edges[i]
  return out;
}

TEST(Entropy, MatchesNvidiaOnRandomHistograms) {
  SCOPED_TRACE(test::seed_text());
  auto gen = test::rng(21);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (int trial = 0; trial < 24; ++trial) {
    const int n = 160 + trial * 4;
    std::vector<double> hist(static_cast<std::size_t>(n));
    const double decay = 5.0 + 40.0 * u(gen);
    const double sparsity = trial % 3 == 0 ? 0.0 : 0.3 * u(gen);
    for (int k = 0; k < n; ++k)
      hist[static_cast<std::size_t>(k)] =
          u(gen) < sparsity ? 0.0 : std::floor(1000.0 * std::exp(-k / decay) * (0.5 + u(gen)));
    if (trial % 4 == 1) hist.back() += 3;  // an outlier at the top
    for (int nbins : {8, 16, 128, 256}) {
      for (int start : {1, 16, 128}) {
        SCOPED_TRACE("trial " + std::to_string(trial) + " nbins " + std::to_string(nbins) +
                     " start " + std::to_string(start));
        const auto ref = nvidia_entropy(hist, 0.5, nbins, start, 1);
        const double got = entropy_threshold(hist, 0.5, nbins, start, 1);
        if (got != ref.amax) {
          // Only a near-tie may differ (different summation order): the divergence at our
          // threshold must equal the minimum to rounding.
          const auto at =
              static_cast<std::size_t>(got / 0.5) - static_cast<std::size_t>(ref.arguments.front());
          const double best = *std::min_element(ref.divergences.begin(), ref.divergences.end());
          EXPECT_NEAR(ref.divergences.at(at), best, 1e-12 * (1.0 + best))
              << "qforge " << got << " nvidia " << ref.amax;
        }
      }
    }
  }
}

TEST(Entropy, StrideAndDegenerateHistograms) {
  std::vector<double> hist(300);
  for (std::size_t k = 0; k < hist.size(); ++k) hist[k] = 500.0 / (1.0 + static_cast<double>(k));
  EXPECT_EQ(entropy_threshold(hist, 1.0, 128, 128, 7), nvidia_entropy(hist, 1.0, 128, 128, 7).amax);
  // A single value at the top: only the last candidate keeps P == Q.
  std::vector<double> single(2048, 0.0);
  single.back() = 1000;
  EXPECT_EQ(entropy_threshold(single, 0.25, 128, 128, 1), 2048 * 0.25);
  // Everything at zero (bins[0] replaced by bins[1] = 0): nothing to go on, the top edge.
  std::vector<double> zeros(64, 0.0);
  zeros[0] = 10;
  EXPECT_EQ(entropy_threshold(zeros, 1.0, 8, 16, 1), 64.0);
  EXPECT_EQ(entropy_threshold({}, 1.0, 8, 16, 1), 0.0);
}

TEST(Entropy, QuantizedBinsPerTarget) {
  EXPECT_EQ(quantized_bins({DType::int8, Mapping::symmetric}, false), 128);  // NVIDIA int8
  EXPECT_EQ(quantized_bins({DType::uint8, Mapping::symmetric}, true), 128);
  EXPECT_EQ(quantized_bins({DType::int8, Mapping::affine}, true), 256);  // NVIDIA unsigned
  EXPECT_EQ(quantized_bins({DType::int8, Mapping::affine}, false), 128);
  EXPECT_EQ(quantized_bins({DType::int4, Mapping::symmetric}, false), 8);
  EXPECT_EQ(quantized_bins({DType::uint4, Mapping::affine}, true), 16);
  EXPECT_EQ(quantized_bins({DType::int16, Mapping::symmetric}, false), 32768);
  EXPECT_EQ(quantized_bins({DType::uint16, Mapping::affine}, true), 65536);
  EXPECT_EQ(quantized_bins({DType::binary, Mapping::symmetric}, false), 2);
  EXPECT_EQ(quantized_bins({DType::int8, Mapping::symmetric, Convention::pytorch}, false), 128);
  EXPECT_THROW((void)quantized_bins({DType::int8, Mapping::logarithmic}, false), Error);
}

// ---- expected squared error ----

// Midpoint-rule integral of the reference quantizer's squared error over each bin.
double numeric_mse(const Histogram& h, const QuantizationParams& p, int samples) {
  const double w = h.bin_width();
  double sum = 0.0;
  auto err = [&](double x) {
    const auto xf = static_cast<float>(x);
    const auto q = reference::quantize_value(xf, p.scale(), p.zero_point(), p.qmin(), p.qmax());
    const double d = x - reference::dequantize_value(q, p.scale(), p.zero_point());
    return d * d;
  };
  for (int j = 0; j < h.bins(); ++j)
    for (int side = 0; side < 2; ++side) {
      const double c = (side ? h.positive() : h.negative())[static_cast<std::size_t>(j)];
      if (c == 0.0) continue;
      double acc = 0.0;
      for (int k = 0; k < samples; ++k) {
        const double x = (j + (k + 0.5) / samples) * w;
        acc += err(side ? x : -x);
      }
      sum += c * acc / samples;
    }
  return sum / h.total();
}

TEST(ExpectedMse, MatchesNumericIntegrationOfTheReferenceQuantizer) {
  SCOPED_TRACE(test::seed_text());
  auto gen = test::rng(31);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<QuantizationParams> params = {
      QuantizationParams::per_tensor_affine(DType::int8, 0.05f, -3),
      QuantizationParams::per_tensor_affine(DType::uint8, 0.02f, 37),
      QuantizationParams::per_tensor_affine(DType::int4, 0.4f, 2),
      QuantizationParams::per_tensor_affine(DType::uint4, 0.3f, 0),
      QuantizationParams::per_tensor_affine(DType::int16, 0.0001f, 10),
      QuantizationParams::per_tensor_symmetric(DType::int8, 0.03f),
      QuantizationParams::per_tensor_symmetric(DType::uint8, 0.07f),
      QuantizationParams::per_tensor_symmetric(DType::int4, 0.5f),
      QuantizationParams::per_tensor_symmetric(DType::binary, 1.2f),
  };
  for (int trial = 0; trial < 3; ++trial) {
    std::vector<double> neg(64), pos(64);
    for (auto& c : neg) c = u(gen) < 0.3 ? 0.0 : std::floor(100 * u(gen));
    for (auto& c : pos) c = u(gen) < 0.3 ? 0.0 : std::floor(100 * u(gen));
    neg[63] = pos[63] = 1;
    const auto h = Histogram::from_parts(64, 6.4f, -6.4f, 6.4f, neg, pos);
    for (const auto& p : params) {
      SCOPED_TRACE(p.to_string());
      const double want = numeric_mse(h, p, 400);
      EXPECT_NEAR(expected_mse(h, p), want, 2e-3 * want + 1e-12);
    }
  }
  // A zero limit: all values are exactly 0, which every non-binary mapping represents.
  const auto zero = Histogram::from_parts(8, 0.0f, 0.0f, 0.0f, std::vector<double>(8, 0.0),
                                          {5, 0, 0, 0, 0, 0, 0, 0});
  EXPECT_EQ(expected_mse(zero, QuantizationParams::per_tensor_symmetric(DType::int8, 1.0f)), 0.0);
  EXPECT_EQ(expected_mse(zero, QuantizationParams::per_tensor_symmetric(DType::binary, 0.5f)),
            0.25);
  EXPECT_THROW((void)expected_mse(zero, QuantizationParams::logarithmic(DType::int8, 1.0f)), Error);
}

// ---- MSE search ----

TEST(MseMethod, NoCandidateOnTheGridDoesBetter) {
  SCOPED_TRACE(test::seed_text());
  auto gen = test::rng(41);
  std::exponential_distribution<float> e(1.0f);
  Histogram h(256);
  std::vector<float> x(20000);
  for (float& v : x) v = (gen() & 1 ? 1.0f : -1.0f) * e(gen);
  x[0] = 40.0f;  // an outlier
  h.add(x);
  for (Target t : {Target{DType::int8, Mapping::symmetric}, Target{DType::int4, Mapping::affine},
                   Target{DType::uint8, Mapping::affine}}) {
    MethodOptions o{Method::mse};
    o.start_bin = 8;
    const Range r = select_range(h, t, o);
    const auto best = expected_mse(h, params_for_ranges(std::span(&r, 1), t, std::nullopt));
    for (int i = o.start_bin; i < h.bins(); ++i) {
      const auto c = static_cast<float>((i + 0.5) * h.bin_width());
      const Range cr = t.mapping == Mapping::symmetric
                           ? Range{-c, c}
                           : Range{std::clamp(h.min(), -c, c), std::clamp(h.max(), -c, c)};
      EXPECT_LE(best, expected_mse(h, params_for_ranges(std::span(&cr, 1), t, std::nullopt)));
    }
    EXPECT_LT(r.hi, 40.0f);  // the outlier is clipped
  }
}

TEST(Methods, OptionsAreValidated) {
  const auto h = Histogram::from_parts(4, 1.0f, 0.0f, 1.0f, {0, 0, 0, 0}, {1, 1, 1, 1});
  const Target t{DType::int8, Mapping::symmetric};
  EXPECT_THROW((void)select_range(h, t, {Method::percentile, 0.0}), Error);
  EXPECT_THROW((void)select_range(h, t, {Method::percentile, 100.5}), Error);
  MethodOptions bad_stride{Method::entropy};
  bad_stride.stride = 0;
  EXPECT_THROW((void)select_range(h, t, bad_stride), Error);
  EXPECT_THROW((void)select_range(Histogram(4), t, {Method::minmax}), Error);  // no data
  EXPECT_EQ(parse_method("entropy"), Method::entropy);
  EXPECT_EQ(to_string(Method::adaptive), "adaptive");
  EXPECT_FALSE(parse_method("kl").has_value());
}

}  // namespace
}  // namespace qforge::calibration
