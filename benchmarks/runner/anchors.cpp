#include "anchors.h"

#if defined(QFORGE_BENCH_HAVE_CUBLASLT)
#include "gpu_anchors.h"
#endif

#include <algorithm>
#include <barrier>
#include <chrono>
#include <cstring>
#include <functional>
#include <random>
#include <thread>
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

// memcpy on every core, each thread copying its own slice: the memory system's rate, which is
// what the fast kernels compete with (they use every core too). Persistent threads meet at a
// barrier, so a measured copy pays no thread start-up.
class ParallelCopy {
 public:
  ParallelCopy(std::size_t bytes, unsigned threads)
      : src_(bytes, 1), dst_(bytes), threads_(threads), start_(threads), done_(threads) {
    for (unsigned t = 1; t < threads_; ++t)
      workers_.emplace_back([this, t] {
        for (;;) {
          start_.arrive_and_wait();
          if (quit_) return;
          slice(t);
          done_.arrive_and_wait();
        }
      });
  }
  ~ParallelCopy() {
    quit_ = true;
    start_.arrive_and_wait();
    for (auto& w : workers_) w.join();
  }
  void operator()() {
    start_.arrive_and_wait();
    slice(0);
    done_.arrive_and_wait();
  }
  unsigned char probe() const { return dst_[dst_.size() / 2]; }

 private:
  void slice(unsigned t) {
    const std::size_t per = (src_.size() + threads_ - 1) / threads_;
    const std::size_t lo = std::min(src_.size(), per * t), hi = std::min(src_.size(), lo + per);
    if (hi > lo) std::memcpy(dst_.data() + lo, src_.data() + lo, hi - lo);
  }
  std::vector<unsigned char> src_, dst_;
  unsigned threads_;
  std::barrier<> start_, done_;
  std::vector<std::thread> workers_;
  bool quit_ = false;
};

Anchor memcpy_anchor(double bytes_moved) {
  const auto n = static_cast<std::size_t>(std::max(bytes_moved / 2, 1.0));
  // Below a few hundred KiB a copy is over before threads could help.
  const unsigned threads =
      n < (std::size_t{1} << 19) ? 1u : std::max(1u, std::thread::hardware_concurrency());
  ParallelCopy copy(n, threads);
  volatile unsigned char sink = 0;  // the compiler may not drop a copy whose result is observed
  const double s = median_seconds(
      [&] {
        copy();
        sink = sink + copy.probe();
      },
      31);
  return {threads == 1 ? std::string("memcpy") : "memcpy x" + std::to_string(threads), s};
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
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(m),
                    static_cast<int>(n), static_cast<int>(k), 1.0f, a.data(), static_cast<int>(k),
                    b.data(), static_cast<int>(n), 0.0f, c.data(), static_cast<int>(n));
      },
      9);
  return Anchor{"openblas sgemm", s};
#else
  (void)m, (void)n, (void)k;
  return std::nullopt;
#endif
}

std::optional<Anchor> conv_sgemm_anchor(const ConvDesc& d) {
#if defined(QFORGE_BENCH_HAVE_OPENBLAS)
  const std::int64_t oh = d.out_h(), ow = d.out_w(), p = oh * ow;
  const std::int64_t cg = d.c / d.groups, og = d.out_channels / d.groups;
  const std::int64_t k = cg * d.kernel_h * d.kernel_w;
  std::mt19937 rng(1);
  std::normal_distribution<float> dist;
  std::vector<float> x(static_cast<std::size_t>(d.n * d.c * d.h * d.w)),
      w(static_cast<std::size_t>(d.out_channels * k)), col(static_cast<std::size_t>(k * p)),
      y(static_cast<std::size_t>(d.n * d.out_channels * p));
  for (auto& v : x) v = dist(rng);
  for (auto& v : w) v = dist(rng);
  auto run = [&] {
    for (std::int64_t n = 0; n < d.n; ++n)
      for (std::int64_t g = 0; g < d.groups; ++g) {
        const float* xg = x.data() + (n * d.c + g * cg) * d.h * d.w;
        // col[(ci, kh, kw)][(oh, ow)], zeros outside the input
        for (std::int64_t ci = 0; ci < cg; ++ci)
          for (std::int64_t kh = 0; kh < d.kernel_h; ++kh)
            for (std::int64_t kw = 0; kw < d.kernel_w; ++kw) {
              float* row = col.data() + ((ci * d.kernel_h + kh) * d.kernel_w + kw) * p;
              for (std::int64_t i = 0; i < oh; ++i) {
                const std::int64_t ih = i * d.stride_h - d.pad_top + kh * d.dilation_h;
                for (std::int64_t j = 0; j < ow; ++j) {
                  const std::int64_t iw = j * d.stride_w - d.pad_left + kw * d.dilation_w;
                  row[i * ow + j] = ih < 0 || ih >= d.h || iw < 0 || iw >= d.w
                                        ? 0.0f
                                        : xg[(ci * d.h + ih) * d.w + iw];
                }
              }
            }
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(og),
                    static_cast<int>(p), static_cast<int>(k), 1.0f, w.data() + g * og * k,
                    static_cast<int>(k), col.data(), static_cast<int>(p), 0.0f,
                    y.data() + (n * d.out_channels + g * og) * p, static_cast<int>(p));
      }
  };
  return Anchor{"openblas im2col+sgemm", median_seconds(run, 9)};
#else
  (void)d;
  return std::nullopt;
#endif
}

void add_anchor(WorkloadResult& r, const OpDesc& op) {
  const bool gpu_winner =
      r.report && (r.report->winner.plugin == "cuda" || r.report->winner.plugin == "vulkan");
  if (r.work.unit == "GB/s") {
#if defined(QFORGE_BENCH_HAVE_CUBLASLT)
    if (gpu_winner)
      if (auto a = cuda_copy_anchor(r.work.amount)) {
        r.anchor = a;
        return;
      }
#endif
    r.anchor = memcpy_anchor(r.work.amount);
    return;
  }
  // A matmul won by a GPU plugin is measured against cuBLASLt's int8 GEMM on the same GPU.
  if (const auto* d = std::get_if<MatmulDesc>(&op.desc); d && gpu_winner) {
#if defined(QFORGE_BENCH_HAVE_CUBLASLT)
    if (auto a = cublaslt_anchor(d->m, d->n, d->k)) {
      r.anchor = a;
      return;
    }
#endif
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
  if (const auto* d = std::get_if<ConvDesc>(&op.desc)) {
    r.anchor = conv_sgemm_anchor(*d);
    return;
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
