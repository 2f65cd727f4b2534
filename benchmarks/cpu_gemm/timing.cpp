#include "timing.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <vector>

namespace qforge::bench {

namespace {

bool cpu_clock = false;

double now_s() {
  if (!cpu_clock)
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

}  // namespace

void use_cpu_clock(bool on) { cpu_clock = on; }

Timing measure(const std::function<void(int)>& fn, double min_total_s, int min_runs) {
  fn(0);  // warm-up: page faults, thread start, caches of the first input
  std::vector<double> t;
  double total = 0;
  for (int i = 1; total < min_total_s || static_cast<int>(t.size()) < min_runs; ++i) {
    const double t0 = now_s();
    fn(i);
    const double s = now_s() - t0;
    t.push_back(s);
    total += s;
    if (t.size() >= 1000) break;
  }
  std::sort(t.begin(), t.end());
  return {t[t.size() / 2], t.front(), static_cast<int>(t.size())};
}

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

}  // namespace qforge::bench
