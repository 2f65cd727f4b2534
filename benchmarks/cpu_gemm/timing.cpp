#include "timing.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

namespace qforge::bench {

Timing measure(const std::function<void(int)>& fn, double min_total_s, int min_runs) {
  using clock = std::chrono::steady_clock;
  fn(0);  // warm-up: page faults, thread start, caches of the first input
  std::vector<double> t;
  double total = 0;
  for (int i = 1; total < min_total_s || static_cast<int>(t.size()) < min_runs; ++i) {
    const auto t0 = clock::now();
    fn(i);
    const double s = std::chrono::duration<double>(clock::now() - t0).count();
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
