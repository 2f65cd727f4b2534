// Calibration benchmark (a program, not a test): observing a large float tensor is a pass over
// memory, so its anchor is memcpy of the same bytes measured in the same run; the histogram
// searches are timed on a 2048-bin histogram. Medians of repeated runs after a warm-up.
//
//   qforge_bench_calibration [--mib 64] [--reps 11]
//
// GB/s counts the tensor's bytes once (the bytes observed, the bytes copied), 1 GB = 1e9 bytes,
// over the median CPU time of the measuring thread (see measure()).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "qforge/calibration/calibration.h"

namespace {

using namespace qforge;
using namespace qforge::calibration;
using Clock = std::chrono::steady_clock;

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// Seconds of `reps` runs of `run` after two warm-up runs; `setup` runs untimed before each. The
// build machine is shared (load often far above its 2 cores), so wall time mostly measures the
// scheduler: the figure used is the median of this thread's CPU time per run, next to the
// fastest wall time as a check (on an idle machine the two agree).
struct Timing {
  double cpu;   // median thread CPU seconds
  double wall;  // fastest wall seconds
};

Timing measure(int reps, const std::function<void()>& setup, const std::function<void()>& run) {
  std::vector<double> cpu;
  double wall = 1e30;
  for (int i = 0; i < reps + 2; ++i) {
    setup();
    const double c0 = thread_cpu_seconds();
    const auto start = Clock::now();
    run();
    const double w = std::chrono::duration<double>(Clock::now() - start).count();
    const double c = thread_cpu_seconds() - c0;
    if (i < 2) continue;
    cpu.push_back(c);
    wall = std::min(wall, w);
  }
  std::sort(cpu.begin(), cpu.end());
  return {cpu[cpu.size() / 2], wall};
}

void row(const char* what, Timing t, double bytes, double anchor_gbs) {
  const double gbs = bytes / t.cpu / 1e9;
  std::printf("%-44s %9.2f ms %8.2f GB/s", what, t.cpu * 1e3, gbs);
  if (anchor_gbs > 0.0) std::printf("  %5.0f%% of memcpy", 100.0 * gbs / anchor_gbs);
  else std::printf("                 ");
  std::printf("   (fastest wall %.2f ms)\n", t.wall * 1e3);
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t mib = 64;
  int reps = 11;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--mib") == 0) mib = std::strtoull(argv[i + 1], nullptr, 10);
    else if (std::strcmp(argv[i], "--reps") == 0) reps = std::atoi(argv[i + 1]);
    else {
      std::fprintf(stderr, "usage: %s [--mib N] [--reps N]\n", argv[0]);
      return 2;
    }
  }
  const std::size_t n = mib * (std::size_t{1} << 20) / sizeof(float);
  const double bytes = static_cast<double>(n * sizeof(float));
  std::vector<float> x(n), copy(n);
  std::mt19937 gen(12345);
  std::normal_distribution<float> g(0.0f, 1.0f);
  for (float& v : x) v = g(gen);
  std::printf(
      "calibration benchmark: %zu MiB float32 tensor (%zu values), median CPU time of %d runs\n",
      mib, n, reps);

  const Timing t_copy = measure(
      reps, [] {}, [&] { std::memcpy(copy.data(), x.data(), n * sizeof(float)); });
  const double anchor = bytes / t_copy.cpu / 1e9;
  row("memcpy (anchor)", t_copy, bytes, 0.0);

  // Per tensor. A fresh observer per run, except "steady state": an observer whose range
  // already covers the batch (the common case after the first batches).
  std::unique_ptr<Observer> obs;
  row("MinMax per tensor",
      measure(
          reps, [&] { obs = std::make_unique<MinMaxObserver>(); }, [&] { obs->observe(x); }),
      bytes, anchor);
  row("MovingAverageMinMax per tensor",
      measure(
          reps, [&] { obs = std::make_unique<MovingAverageMinMaxObserver>(); },
          [&] { obs->observe(x); }),
      bytes, anchor);
  row("Histogram per tensor, first batch",
      measure(
          reps, [&] { obs = std::make_unique<HistogramObserver>(); }, [&] { obs->observe(x); }),
      bytes, anchor);
  // The worst case of the first batch's single pass: |x| rising through the tensor, so every
  // 64 Ki-value chunk widens the range and re-bins the counts so far (256 times for 64 MiB).
  {
    std::vector<float> ramp(n);
    for (std::size_t i = 0; i < n; ++i)
      ramp[i] = (i % 2 ? -1.0f : 1.0f) * static_cast<float>(i + 1) / static_cast<float>(n);
    row("Histogram per tensor, first batch, rising |x|",
        measure(
            reps, [&] { obs = std::make_unique<HistogramObserver>(); },
            [&] { obs->observe(ramp); }),
        bytes, anchor);
  }
  HistogramObserver steady;
  steady.observe(x);
  row("Histogram per tensor, steady state",
      measure(
          reps, [] {}, [&] { steady.observe(x); }),
      bytes, anchor);

  // Per channel: 256 channels along axis 0 (long runs) and along the last axis.
  const auto rows = static_cast<std::int64_t>(n / 256);
  row("MinMax per channel, axis 0 (256 channels)",
      measure(
          reps, [&] { obs = std::make_unique<MinMaxObserver>(MinMaxObserver::per_channel(0)); },
          [&] {
            obs->observe(x, {256, rows});
          }),
      bytes, anchor);
  row("MinMax per channel, last axis (256)",
      measure(
          reps, [&] { obs = std::make_unique<MinMaxObserver>(MinMaxObserver::per_channel(-1)); },
          [&] {
            obs->observe(x, {rows, 256});
          }),
      bytes, anchor);
  row("Histogram per channel, axis 0 (256)",
      measure(
          reps,
          [&] { obs = std::make_unique<HistogramObserver>(HistogramObserver::per_channel(0)); },
          [&] {
            obs->observe(x, {256, rows});
          }),
      bytes, anchor);
  row("Histogram per channel, last axis (256)",
      measure(
          reps,
          [&] { obs = std::make_unique<HistogramObserver>(HistogramObserver::per_channel(-1)); },
          [&] {
            obs->observe(x, {rows, 256});
          }),
      bytes, anchor);

  // The searches on the 2048-bin histogram of the tensor.
  const Histogram& h = steady.histograms()[0];
  const auto magnitude = h.magnitude();
  const Target int8s{DType::int8, Mapping::symmetric};
  double sink = 0.0;
  auto search = [&](const char* what, const std::function<void()>& f) {
    const Timing t = measure(
        reps, [] {}, f);
    std::printf("%-44s %9.3f ms   (fastest wall %.3f ms)\n", what, t.cpu * 1e3, t.wall * 1e3);
  };
  search("entropy search, 2048 bins, int8 (128 bins)",
         [&] { sink += entropy_threshold(magnitude, h.bin_width(), 128, 128, 1); });
  search("entropy search, 2048 bins, int4 (8 bins)",
         [&] { sink += entropy_threshold(magnitude, h.bin_width(), 8, 128, 1); });
  search("entropy search, 2048 bins, int16",
         [&] { sink += entropy_threshold(magnitude, h.bin_width(), 32768, 128, 1); });
  search("percentile 99.99, 2048 bins",
         [&] { sink += percentile_threshold(magnitude, h.bin_width(), 99.99, true); });
  search("MSE search, 2048 bins, int8 symmetric",
         [&] { sink += select_range(h, int8s, {Method::mse}).hi; });
  search("MSE search, 2048 bins, int8 affine", [&] {
    sink += select_range(h, {DType::int8, Mapping::affine}, {Method::mse}).hi;
  });
  search("adaptive (all four), 2048 bins, int8 symmetric",
         [&] { sink += select_adaptive(h, int8s, {}).range.hi; });
  std::printf("(checksum %g)\n", sink);
  return 0;
}
