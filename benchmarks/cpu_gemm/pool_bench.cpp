// cpu_x86's fork/join pool on its own (its source compiled in): what one parallel_for costs at a
// thread count, apart from any kernel. Per configuration (tasks, busy work per task, idle gap
// between calls) it reports, medians over the calls: the round trip of the call, how long after
// the submit the last thread that took a task started it ("all started"), the most tasks one
// thread ran, and how many of the pool's threads ran none (idle). Small convolutions at 16
// threads take 10-60 us, so these fix the floor of the split (docs/PERFORMANCE.md).
//
//   qforge_bench_cpu_x86_pool [--threads T] [--calls N]
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "thread_pool.h"

namespace {

using Clock = std::chrono::steady_clock;

double ns_since(Clock::time_point t0, Clock::time_point t) {
  return std::chrono::duration<double, std::nano>(t - t0).count();
}

void busy_for(double ns) {
  const auto t0 = Clock::now();
  while (ns_since(t0, Clock::now()) < ns) {
  }
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// Small integer id of the calling thread, fixed for its life.
int thread_id() {
  static std::atomic<int> next{0};
  thread_local int id = next.fetch_add(1);
  return id;
}

struct Result {
  double round_trip_ns, all_started_ns, max_tasks, idle;
};

Result run(qforge::cpu_x86::ThreadPool& pool, std::int64_t tasks, double work_ns, double gap_us,
           int calls) {
  std::vector<double> trip, started, most, idle;
  std::vector<Clock::time_point> start(static_cast<std::size_t>(tasks));
  std::vector<int> who(static_cast<std::size_t>(tasks));
  for (int call = -3; call < calls; ++call) {  // 3 warm-up calls
    if (gap_us > 0) std::this_thread::sleep_for(std::chrono::duration<double, std::micro>(gap_us));
    const auto t0 = Clock::now();
    pool.parallel_for(tasks, [&](std::int64_t i) {
      start[static_cast<std::size_t>(i)] = Clock::now();
      who[static_cast<std::size_t>(i)] = thread_id();
      if (work_ns > 0) busy_for(work_ns);
    });
    const auto t1 = Clock::now();
    if (call < 0) continue;
    trip.push_back(ns_since(t0, t1));
    // Per thread: its first task's start; "all started" is the latest of those.
    std::vector<std::pair<int, double>> first;  // (thread, first start)
    std::vector<std::pair<int, int>> count;     // (thread, tasks)
    for (std::int64_t i = 0; i < tasks; ++i) {
      const int t = who[static_cast<std::size_t>(i)];
      const double s = ns_since(t0, start[static_cast<std::size_t>(i)]);
      auto f = std::find_if(first.begin(), first.end(), [&](auto& p) { return p.first == t; });
      if (f == first.end()) {
        first.push_back({t, s});
        count.push_back({t, 1});
      } else {
        f->second = std::min(f->second, s);
        ++count[static_cast<std::size_t>(f - first.begin())].second;
      }
    }
    double latest = 0;
    int top = 0;
    for (auto& f : first) latest = std::max(latest, f.second);
    for (auto& c : count) top = std::max(top, c.second);
    started.push_back(latest);
    most.push_back(top);
    idle.push_back(static_cast<double>(std::max<std::int64_t>(
        0,
        std::min<std::int64_t>(pool.threads(), tasks) - static_cast<std::int64_t>(first.size()))));
  }
  return {median(trip), median(started), median(most), median(idle)};
}

}  // namespace

int main(int argc, char** argv) {
  int threads = qforge::cpu_x86::default_thread_count(), calls = 2000;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--threads" && i + 1 < argc) threads = std::atoi(argv[++i]);
    else if (arg == "--calls" && i + 1 < argc) calls = std::atoi(argv[++i]);
    else {
      std::fprintf(stderr, "usage: %s [--threads T] [--calls N] (unknown argument '%s')\n", argv[0],
                   arg.c_str());
      return 2;
    }
  }
  if (threads < 1 || calls < 1) {
    std::fprintf(stderr, "--threads and --calls must be at least 1\n");
    return 2;
  }
  qforge::cpu_x86::ThreadPool pool(threads);
  std::printf("cpu_x86 pool, %d threads, %d calls per row (medians)\n", threads, calls);
  std::printf("%-7s %-9s %-8s %-12s %-14s %-10s %s\n", "tasks", "work us", "gap us", "round us",
              "all started us", "max tasks", "idle threads");
  const std::int64_t t = threads;
  for (double gap : {0.0, 100.0, 2000.0})
    for (std::int64_t tasks : {t, 2 * t})
      for (double work : {0.0, 2000.0}) {
        const Result r = run(pool, tasks, work, gap, gap > 1000 ? std::min(calls, 200) : calls);
        std::printf("%-7lld %-9.1f %-8.0f %-12.2f %-14.2f %-10.0f %.0f\n",
                    static_cast<long long>(tasks), work / 1000, gap, r.round_trip_ns / 1000,
                    r.all_started_ns / 1000, r.max_tasks, r.idle);
      }
  return 0;
}
