#include "anchors.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <random>
#include <vector>

#if defined(QFORGE_BENCH_HAVE_OPENBLAS)
#include <cblas.h>
#endif

namespace qforge::bench {
namespace {

// Median of `reps` timed calls after two warm-up calls.
template <class F>
double median_seconds(F&& f, int reps) {
  f();
  f();
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::nth_element(t.begin(), t.begin() + static_cast<std::ptrdiff_t>(t.size() / 2), t.end());
  return t[t.size() / 2];
}

}  // namespace

Anchor memcpy_anchor(double bytes_moved) {
  const auto n = static_cast<std::size_t>(std::max(bytes_moved / 2, 1.0));
  std::vector<unsigned char> src(n, 1), dst(n);
  // The compiler may not drop a copy whose result is observed.
  volatile unsigned char sink = 0;
  const double s = median_seconds([&] { std::memcpy(dst.data(), src.data(), n); sink = sink + dst[n / 2]; }, 31);
  return {"memcpy", s};
}

std::optional<Anchor> sgemm_anchor(std::int64_t m, std::int64_t n, std::int64_t k) {
#if defined(QFORGE_BENCH_HAVE_OPENBLAS)
  std::mt19937 rng(1);
  std::normal_distribution<float> d;
  std::vector<float> a(static_cast<std::size_t>(m * k)), b(static_cast<std::size_t>(k * n)),
      c(static_cast<std::size_t>(m * n));
  for (auto& x : a) x = d(rng);
  for (auto& x : b) x = d(rng);
  const double s = median_seconds(
      [&] {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(m), static_cast<int>(n),
                    static_cast<int>(k), 1.0f, a.data(), static_cast<int>(k), b.data(),
                    static_cast<int>(n), 0.0f, c.data(), static_cast<int>(n));
      },
      9);
  return Anchor{"openblas sgemm", s};
#else
  (void)m, (void)n, (void)k;
  return std::nullopt;
#endif
}

void add_anchor(WorkloadResult& r, const OpDesc& op) {
  if (r.work.unit == "GB/s") {
    r.anchor = memcpy_anchor(r.work.amount);
    return;
  }
  if (r.report) {
    double best = 0;
    for (const auto& c : r.report->candidates)
      if (c.id.plugin == "onednn" && c.status == CandidateStatus::measured &&
          (best == 0 || c.seconds < best))
        best = c.seconds;
    if (best > 0) {
      r.anchor = Anchor{"onednn", best};
      return;
    }
  }
  std::int64_t m = 0, n = 0, k = 0;
  if (const auto* d = std::get_if<MatmulDesc>(&op.desc)) m = d->m, n = d->n, k = d->k;
  if (const auto* d = std::get_if<LinearDesc>(&op.desc)) m = d->m, n = d->n, k = d->k;
  if (auto a = sgemm_anchor(m, n, k)) {
    if (op.op == OpKind::linear_backward) a->seconds *= 2;  // two products of that size
    r.anchor = a;
  }
}

}  // namespace qforge::bench
