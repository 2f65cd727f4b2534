// NVIDIA pytorch-quantization, calib/histogram.py _compute_amax_entropy (TensorRT's entropy
// calibrator). For each candidate i in [start_bin, len(bins)] (step stride):
//   P = bins[:i] with sum(bins[i:]) added to P[i - 1]            (reference, clipped at i)
//   Q = bins[:i] merged into nbins groups (np.digitize of range(i) over linspace(0, i, nbins+1),
//       i.e. bin idx -> group floor(idx * nbins / i)), each group's sum spread evenly over its
//       nonzero bins and 0 on its empty bins
//   divergence = scipy.stats.entropy(P, Q) = sum P/|P| log((P/|P|) / (Q/|Q|))
// and the threshold is calib_bin_edges[i] for the last i of minimal divergence. bins[0] is
// replaced by bins[1] first. NVIDIA's code is O(n^2) Python per candidate; this is the same sum
// with each group's log(Q) computed once, O(i) per candidate.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "qforge/calibration/methods.h"

namespace qforge::calibration {

double entropy_threshold(std::span<const double> counts, double bin_width,
                         std::int64_t quantized_bins, int start_bin, int stride) {
  const auto n = static_cast<std::int64_t>(counts.size());
  if (n == 0) return 0.0;
  std::vector<double> bins(counts.begin(), counts.end());
  if (n > 1) bins[0] = bins[1];  // NVIDIA: discount the spike of exact zeros (e.g. after ReLU)

  // Prefix sums of counts and of nonzero bins; total is the last prefix so that a candidate
  // without clipped mass has |Q| == |P| exactly.
  std::vector<double> sum(static_cast<std::size_t>(n) + 1, 0.0);
  std::vector<std::int64_t> nonzero(static_cast<std::size_t>(n) + 1, 0);
  std::vector<double> log_bin(static_cast<std::size_t>(n), 0.0);
  for (std::int64_t k = 0; k < n; ++k) {
    const auto u = static_cast<std::size_t>(k);
    sum[u + 1] = sum[u] + bins[u];
    nonzero[u + 1] = nonzero[u] + (bins[u] != 0.0 ? 1 : 0);
    if (bins[u] > 0.0) log_bin[u] = std::log(bins[u]);
  }
  const double total = sum[static_cast<std::size_t>(n)];
  if (!(total > 0.0)) return static_cast<double>(n) * bin_width;
  const double log_total = std::log(total);
  const std::int64_t nq = std::max<std::int64_t>(quantized_bins, 1);

  double best = std::numeric_limits<double>::infinity();
  std::int64_t best_i = n;
  const std::int64_t first = std::clamp<std::int64_t>(start_bin, 1, n);
  for (std::int64_t i = first; i <= n; i += std::max(stride, 1)) {
    const auto ui = static_cast<std::size_t>(i);
    const double kept = sum[ui];            // |Q|
    const double clipped = total - kept;   // added to P[i - 1]
    if (!(kept > 0.0)) continue;           // Q is all zeros: divergence undefined
    if (clipped > 0.0 && bins[ui - 1] == 0.0) continue;  // P > 0 where Q = 0: infinite
    const double log_ratio = std::log(kept) - log_total;  // log(|Q| / |P|)
    double kl = 0.0;
    for (std::int64_t a = 0; a < i;) {
      const std::int64_t group = a * nq / i;
      const std::int64_t b = std::min(i, ((group + 1) * i + nq - 1) / nq);
      const auto ua = static_cast<std::size_t>(a), ub = static_cast<std::size_t>(b);
      const std::int64_t members = nonzero[ub] - nonzero[ua];
      if (members > 0) {
        const double group_sum = sum[ub] - sum[ua];
        const double log_q = members == 1 ? std::log(group_sum)
                                          : std::log(group_sum / static_cast<double>(members));
        for (std::size_t k = ua; k < ub; ++k) {
          if (bins[k] == 0.0) continue;
          double p = bins[k], log_p = log_bin[k];
          if (k == ui - 1 && clipped > 0.0) {
            p += clipped;
            log_p = std::log(p);
          }
          kl += p * ((log_p - log_q) + log_ratio);
        }
      }
      a = b;
    }
    kl /= total;
    if (kl <= best) {  // <=: the last minimum, as NVIDIA's reversed argmin
      best = kl;
      best_i = i;
    }
  }
  return static_cast<double>(best_i) * bin_width;
}

}  // namespace qforge::calibration
