// NVIDIA pytorch-quantization, calib/histogram.py _compute_amax_entropy (TensorRT's entropy
// calibrator). For each candidate i in [start_bin, len(bins)] (step stride):
//   P = bins[:i] with sum(bins[i:]) added to P[i - 1]            (reference, clipped at i)
//   Q = bins[:i] merged into nbins groups (np.digitize of range(i) over linspace(0, i, nbins+1),
//       i.e. bin idx -> group floor(idx * nbins / i)), each group's sum spread evenly over its
//       nonzero bins and 0 on its empty bins
//   divergence = scipy.stats.entropy(P, Q) = sum P/|P| log((P/|P|) / (Q/|Q|))
// and the threshold is calib_bin_edges[i] for the last i of minimal divergence. bins[0] is
// replaced by bins[1] first.
//
// NVIDIA's loop is O(i) Python per candidate. Here each group's terms are summed in O(1) with
// prefix sums of b and b log b: inside a group every nonzero bin has the same q = S / N, so
//   sum_group b (log b - log q + log(|Q|/|P|)) = L_group - S log q + S log(|Q|/|P|),
// and a group with one nonzero bin (q = b exactly) contributes exactly b log(|Q|/|P|), so that
// the exact ties NVIDIA breaks by "last minimum" stay exact ties. One guard is added (below):
// candidates that clip more than half of the values are not considered.
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

  // Prefix sums: S of counts, Z of nonzero bins, L of b log b. The total is the last prefix so
  // that a candidate without clipped mass has |Q| == |P| exactly.
  const auto un = static_cast<std::size_t>(n);
  std::vector<double> S(un + 1, 0.0), L(un + 1, 0.0), log_bin(un, 0.0);
  std::vector<std::int64_t> Z(un + 1, 0);
  for (std::size_t k = 0; k < un; ++k) {
    if (bins[k] > 0.0) log_bin[k] = std::log(bins[k]);
    S[k + 1] = S[k] + bins[k];
    L[k + 1] = L[k] + bins[k] * log_bin[k];
    Z[k + 1] = Z[k] + (bins[k] != 0.0 ? 1 : 0);
  }
  const double total = S[un];
  if (!(total > 0.0)) return static_cast<double>(n) * bin_width;
  const double log_total = std::log(total);
  const std::int64_t nq = std::max<std::int64_t>(quantized_bins, 1);

  // qforge's one addition: candidates that would clip more than half of the values are
  // skipped. For data away from zero (e.g. all in [-5, -1]) every bin below min|x| is empty, and
  // the first candidate past it clips everything into one bin where P and Q are the same lone
  // spike (divergence 0): NVIDIA's search then returns ~min|x| and clips all values. For data
  // around zero the median |x| lies far below every plausible minimum, so nothing changes.
  std::int64_t half = 1;
  while (half < n && S[static_cast<std::size_t>(half)] < 0.5 * total) ++half;
  // The first candidate on NVIDIA's grid start_bin + k * stride at or above `half`.
  const std::int64_t step = std::max(stride, 1);
  std::int64_t first = std::clamp<std::int64_t>(start_bin, 1, n);
  if (half > first) first += (half - first + step - 1) / step * step;

  double best = std::numeric_limits<double>::infinity();
  std::int64_t best_i = n;
  for (std::int64_t i = first; i <= n; i += step) {
    const auto ui = static_cast<std::size_t>(i);
    const double kept = S[ui];            // |Q|
    const double clipped = total - kept;  // added to P[i - 1]
    if (!(kept > 0.0)) continue;          // Q is all zeros: divergence undefined
    const double last = bins[ui - 1];
    if (clipped > 0.0 && last == 0.0) continue;           // P > 0 where Q = 0: infinite
    const double log_ratio = std::log(kept) - log_total;  // log(|Q| / |P|)

    double kl = 0.0;  // sum over bins of b (log b - log q + log_ratio), unclipped P
    double log_q_last = log_bin[ui - 1];
    if (nq >= i) {
      // Every bin is its own group: q = b everywhere.
      kl = kept * log_ratio;
    } else {
      for (std::int64_t k = 0; k < nq; ++k) {
        // Group k holds bins ceil(k i / nq) .. ceil((k + 1) i / nq) - 1 (at least one: i > nq).
        const auto a = static_cast<std::size_t>((k * i + nq - 1) / nq);
        const auto b = static_cast<std::size_t>(((k + 1) * i + nq - 1) / nq);
        const std::int64_t members = Z[b] - Z[a];
        if (members == 0) continue;
        const double sum = S[b] - S[a];
        if (members == 1) {
          kl += sum * log_ratio;
          continue;
        }
        const double log_q = std::log(sum / static_cast<double>(members));
        kl += (L[b] - L[a]) - sum * log_q + sum * log_ratio;
        if (b == ui) log_q_last = log_q;
      }
    }
    if (clipped > 0.0) {
      // P[i - 1] = last + clipped instead of last.
      const double p = last + clipped;
      kl += p * (std::log(p) - log_q_last + log_ratio) -
            last * (log_bin[ui - 1] - log_q_last + log_ratio);
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
