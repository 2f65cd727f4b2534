// Timing for the CPU benchmarks: warm up, then repeat until a minimum time and count, and take
// the median (DESIGN.md, "Performance method").
#pragma once

#include <functional>
#include <string>

namespace qforge::bench {

struct Timing {
  double median_s = 0;
  double min_s = 0;
  int runs = 0;
};

// fn(i) runs repetition i (so callers can rotate inputs). One warm-up run is not counted.
Timing measure(const std::function<void(int)>& fn, double min_total_s, int min_runs);

// Time the process's CPU seconds (all its threads) instead of the wall clock. With one thread
// everywhere (--threads 1, OPENBLAS_NUM_THREADS=1) that is the work itself, which a machine
// shared with other processes disturbs far less than the wall clock.
void use_cpu_clock(bool on);

std::string fixed(double v, int decimals);

}  // namespace qforge::bench
