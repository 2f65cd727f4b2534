#include "qforge/model/gptq.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "lapack_cholesky.h"
#include "qforge/error.h"
#include "qforge/params.h"
#include "qforge/reference.h"

namespace qforge::model {
namespace {

// Inputs rounded before their corrections reach the later inputs as one GEMM. Whole blocks, so
// that a block's range is chosen on values that every earlier correction has reached.
std::int64_t lazy_width(const WeightQuantization& rule) {
  constexpr std::int64_t kWidth = 128;
  if (rule.granularity != Granularity::block) return kWidth;
  return rule.block_size >= kWidth ? rule.block_size : kWidth / rule.block_size * rule.block_size;
}

WeightRange observed_range(const WeightQuantization& rule, std::span<const float> values) {
  return rule.observer == calibration::Method::mse ? mse_range(rule.dtype, rule.mapping, values)
                                                   : minmax_range(values);
}

// One group's params as reference::params_from_range gives them.
struct GroupParams {
  float scale = 1.0f;
  std::int32_t zero_point = 0;
};

// H + damping on the diagonal, then U with (H + damping I)^-1 = U^T U, in `a` (row-major; see
// lapack_cholesky.h: LAPACK's column-major lower triangle is the row-major upper one). False
// when a factorisation fails (not positive definite).
bool factor_inverse(std::vector<double>& a, const std::vector<double>& h, std::int64_t k,
                    double damping) {
  a = h;
  for (std::int64_t i = 0; i < k; ++i) a[static_cast<std::size_t>(i * k + i)] += damping;
  const int n = static_cast<int>(k);
  int info = 0;
  qforge_dpotrf('L', n, a.data(), n, &info);
  if (info != 0) return false;
  qforge_dpotri('L', n, a.data(), n, &info);
  if (info != 0) return false;
  for (std::int64_t i = 0; i < k; ++i)  // the inverse is in the upper triangle: mirror it
    for (std::int64_t j = i + 1; j < k; ++j)
      a[static_cast<std::size_t>(j * k + i)] = a[static_cast<std::size_t>(i * k + j)];
  qforge_dpotrf('L', n, a.data(), n, &info);
  if (info != 0) return false;
  for (std::int64_t i = 0; i < k; ++i)  // below the diagonal: the inverse's mirror, not U
    for (std::int64_t j = 0; j < i; ++j) a[static_cast<std::size_t>(i * k + j)] = 0.0;
  return true;
}

}  // namespace

HessianAccumulator::HessianAccumulator(std::int64_t k) : k_(k) {
  if (k <= 0)
    throw Error(ErrorCode::invalid_argument,
                "HessianAccumulator: K is " + std::to_string(k) + "; expected > 0");
  sum_.assign(static_cast<std::size_t>(k * k), 0.0);
}

void HessianAccumulator::add(std::span<const float> rows) {
  if (rows.size() % static_cast<std::size_t>(k_) != 0)
    throw Error(ErrorCode::invalid_argument,
                "HessianAccumulator: " + std::to_string(rows.size()) +
                    " values are not whole rows of K = " + std::to_string(k_));
  const auto m = static_cast<std::int64_t>(rows.size()) / k_;
  if (m == 0) return;
  std::vector<float> batch(sum_.size());
  cblas_ssyrk(CblasRowMajor, CblasUpper, CblasTrans, static_cast<blasint>(k_),
              static_cast<blasint>(m), 1.0f, rows.data(), static_cast<blasint>(k_), 0.0f,
              batch.data(), static_cast<blasint>(k_));
  for (std::int64_t i = 0; i < k_; ++i)
    for (std::int64_t j = i; j < k_; ++j) {
      const auto at = static_cast<std::size_t>(i * k_ + j);
      sum_[at] += batch[at];
    }
  rows_ += m;
}

GptqFactor gptq_factor(const HessianAccumulator& h, const GptqOptions& options) {
  return gptq_factor(h.upper(), h.k(), h.rows(), options);
}

GptqFactor gptq_factor(std::span<const double> h_upper, std::int64_t k, std::int64_t rows,
                       const GptqOptions& options) {
  if (k <= 0 || h_upper.size() != static_cast<std::size_t>(k * k))
    throw Error(ErrorCode::invalid_argument,
                "gptq_factor: H has " + std::to_string(h_upper.size()) +
                    " values; expected K x K for K = " + std::to_string(k) + " > 0");
  if (!(options.damping >= 0.0) || !std::isfinite(options.damping))
    throw Error(ErrorCode::invalid_argument, "gptq_factor: damping " +
                                                 std::to_string(options.damping) +
                                                 "; expected a finite value >= 0");
  GptqFactor f;
  f.k = k;
  f.rows = rows;
  std::vector<double> h(h_upper.size());
  for (std::int64_t i = 0; i < k; ++i)
    for (std::int64_t j = i; j < k; ++j) {
      const double v = h_upper[static_cast<std::size_t>(i * k + j)];
      if (!std::isfinite(v))
        throw Error(ErrorCode::invalid_argument,
                    "gptq_factor: H (" + std::to_string(k) + " x " + std::to_string(k) +
                        ") holds a non-finite value at (" + std::to_string(i) + ", " +
                        std::to_string(j) + "); the calibration inputs are not all finite");
      h[static_cast<std::size_t>(i * k + j)] = h[static_cast<std::size_t>(j * k + i)] = v;
    }
  double trace = 0;
  for (std::int64_t i = 0; i < k; ++i) {
    double& d = h[static_cast<std::size_t>(i * k + i)];
    if (d <= 0.0) {  // a sum of squares: only exactly 0 reaches here, an input never nonzero
      f.dead.push_back(i);
      d = 1.0;
    }
    trace += d;
  }
  const double mean = trace / static_cast<double>(k);
  double damping = options.damping * mean;
  for (int attempt = 0; attempt < 5; ++attempt) {
    if (factor_inverse(f.u, h, k, damping)) {
      f.damping = damping;
      return f;
    }
    damping = damping > 0 ? 10 * damping : 0.01 * mean;
  }
  throw Error(ErrorCode::invalid_argument,
              "gptq_factor: H (" + std::to_string(k) + " x " + std::to_string(k) + ", " +
                  std::to_string(rows) +
                  " rows) is not positive definite even with dampening grown to " +
                  std::to_string(damping / 10) + " on its diagonal");
}

std::vector<WeightRange> gptq_round(const WeightQuantization& rule, std::span<float> w,
                                    std::int64_t n, std::int64_t k, const GptqFactor& factor) {
  if (n <= 0 || k <= 0 || w.size() != static_cast<std::size_t>(n * k))
    throw Error(ErrorCode::invalid_argument, "gptq_round: " + std::to_string(w.size()) +
                                                 " weights; expected N x K = " + std::to_string(n) +
                                                 " x " + std::to_string(k));
  if (factor.k != k || factor.u.size() != static_cast<std::size_t>(k * k))
    throw Error(ErrorCode::invalid_argument,
                "gptq_round: the factor is for K = " + std::to_string(factor.k) +
                    ", the weight has K = " + std::to_string(k) +
                    "; calibrate the layer's input with the graph the weight belongs to");
  for (float v : w)
    if (!std::isfinite(v))
      throw Error(ErrorCode::invalid_argument, "gptq_round: the weight holds a non-finite value");

  const bool block = rule.granularity == Granularity::block;
  const std::int64_t block_size = block ? rule.block_size : k;
  const std::int64_t blocks = block ? (k + block_size - 1) / block_size : 1;
  const QuantizationParams probe = reference::params_from_range(rule.dtype, rule.mapping, 0, 1);
  const std::int32_t qmin = probe.qmin(), qmax = probe.qmax();
  std::vector<WeightRange> ranges;
  std::vector<GroupParams> params(static_cast<std::size_t>(n * blocks));
  const auto set_params = [&](std::size_t group, WeightRange r) {
    const QuantizationParams p = reference::params_from_range(rule.dtype, rule.mapping, r.lo, r.hi);
    params[group] = {p.scales()[0], p.zero_points()[0]};
  };
  switch (rule.granularity) {
    case Granularity::per_tensor:
      ranges = {observed_range(rule, w)};
      for (std::size_t g = 0; g < params.size(); ++g) set_params(g, ranges[0]);
      break;
    case Granularity::per_channel:
      for (std::int64_t r = 0; r < n; ++r) {
        ranges.push_back(observed_range(
            rule, w.subspan(static_cast<std::size_t>(r * k), static_cast<std::size_t>(k))));
        set_params(static_cast<std::size_t>(r), ranges.back());
      }
      break;
    case Granularity::block:
      ranges.resize(static_cast<std::size_t>(n * blocks));  // chosen as the pass reaches each
      break;
  }

  std::vector<double> x(w.begin(), w.end());
  const std::vector<double>& u = factor.u;
  const std::int64_t width = lazy_width(rule);
  std::vector<double> err(static_cast<std::size_t>(n * width));
  std::vector<float> values(static_cast<std::size_t>(block_size));
  for (std::int64_t i1 = 0; i1 < k; i1 += width) {
    const std::int64_t i2 = std::min(k, i1 + width);
    for (std::int64_t i = i1; i < i2; ++i) {
      if (block && i % block_size == 0) {
        const std::int64_t b = i / block_size, end = std::min(k, i + block_size);
        for (std::int64_t r = 0; r < n; ++r) {
          for (std::int64_t j = i; j < end; ++j)
            values[static_cast<std::size_t>(j - i)] =
                static_cast<float>(x[static_cast<std::size_t>(r * k + j)]);
          const auto g = static_cast<std::size_t>(r * blocks + b);
          ranges[g] = observed_range(
              rule, std::span<const float>(values).first(static_cast<std::size_t>(end - i)));
          set_params(g, ranges[g]);
        }
      }
      const double* ui = &u[static_cast<std::size_t>(i * k)];
      const double diagonal = ui[i];
      const std::int64_t b = block ? i / block_size : 0;
      for (std::int64_t r = 0; r < n; ++r) {
        const GroupParams& p = params[static_cast<std::size_t>(r * blocks + b)];
        double* row = &x[static_cast<std::size_t>(r * k)];
        const std::int32_t code = reference::quantize_value(static_cast<float>(row[i]), p.scale,
                                                            p.zero_point, qmin, qmax);
        const double rounded = reference::dequantize_value(code, p.scale, p.zero_point);
        const double e = (row[i] - rounded) / diagonal;
        row[i] = rounded;
        err[static_cast<std::size_t>(r * width + (i - i1))] = e;
        for (std::int64_t j = i + 1; j < i2; ++j) row[j] -= e * ui[j];
      }
    }
    if (i2 < k)  // x[:, i2:] -= err[:, :i2 - i1] * U[i1:i2, i2:]
      cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<blasint>(n),
                  static_cast<blasint>(k - i2), static_cast<blasint>(i2 - i1), -1.0, err.data(),
                  static_cast<blasint>(width), &u[static_cast<std::size_t>(i1 * k + i2)],
                  static_cast<blasint>(k), 1.0, &x[static_cast<std::size_t>(i2)],
                  static_cast<blasint>(k));
  }
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(x[i]);
  return ranges;
}

}  // namespace qforge::model
