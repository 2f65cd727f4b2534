#include "thread_pool.h"

#include <algorithm>
#include <bit>
#include <chrono>

#include "qforge/hardware.h"

namespace qforge::cpu_x86 {

int default_thread_count() {
  const CpuInfo& cpu = cpu_info();
  int n = cpu.cores > 0 ? cpu.cores : static_cast<int>(std::thread::hardware_concurrency());
  return std::max(1, n);
}

namespace {

// How long the caller polls for the workers to finish before it sleeps on a condition
// variable (workers: PollTimes). Timed rather than counted in pause instructions, whose latency
// differs several times between CPUs. A sleep costs a futex wait and a wake-up, tens of
// microseconds each under the GPU host's gVisor kernel, so the caller polls through a typical
// call's imbalance.
constexpr auto kCallerPoll = std::chrono::microseconds(2000);

// Polls `done` with pause instructions until it holds or `limit` has passed, then with a
// sched_yield between polls until `yield_limit` more has passed; true if it holds.
template <class Done>
bool poll_for(std::chrono::microseconds limit, Done done,
              std::chrono::microseconds yield_limit = std::chrono::microseconds(0)) {
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    for (int i = 0; i < 64; ++i) {
      if (done()) return true;
      __builtin_ia32_pause();
    }
    if (std::chrono::steady_clock::now() - start > limit) break;
  }
  if (yield_limit.count() > 0) {
    const auto yield_start = std::chrono::steady_clock::now();
    for (;;) {
      if (done()) return true;
      std::this_thread::yield();
      if (std::chrono::steady_clock::now() - yield_start > yield_limit) break;
    }
  }
  return done();
}

}  // namespace

ThreadPool::ThreadPool(int threads, PollTimes poll) : poll_(poll) {
  for (int i = 1; i < std::max(1, threads); ++i)
    workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mutex_);
    stop_.store(true);
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::run_tasks(const std::function<void(std::int64_t)>& fn, std::int64_t tasks) {
  while (!failed_.load(std::memory_order_relaxed)) {
    const std::int64_t i = next_.fetch_add(1);
    if (i >= tasks) return;
    try {
      fn(i);
    } catch (...) {
      std::lock_guard lock(mutex_);
      if (!error_) error_ = std::current_exception();
      failed_.store(true, std::memory_order_relaxed);
    }
  }
}

void ThreadPool::run_owned_tasks(const std::function<void(std::int64_t)>& fn, std::int64_t tasks,
                                 int self) {
  const std::int64_t n = threads();
  const std::int64_t own_begin = self * tasks / n, own_end = (self + 1) * tasks / n;
  const std::uint64_t all = tasks == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << tasks) - 1;
  auto run = [&](std::int64_t i) {
    const std::uint64_t bit = std::uint64_t{1} << i;
    if (claimed_tasks_.fetch_or(bit) & bit) return;  // another thread took it
    try {
      fn(i);
    } catch (...) {
      std::lock_guard lock(mutex_);
      if (!error_) error_ = std::current_exception();
      failed_.store(true, std::memory_order_relaxed);
    }
  };
  for (std::int64_t i = own_begin; i < own_end && !failed_.load(std::memory_order_relaxed); ++i)
    run(i);
  // Then the free tasks, the nearest after our own first (a late neighbour's), wrapping around.
  const int from = static_cast<int>(own_end % 64);
  while (!failed_.load(std::memory_order_relaxed)) {
    const std::uint64_t free = ~claimed_tasks_.load() & all;
    if (free == 0) return;
    const std::uint64_t after = from == 0 ? free : free >> from;
    run(after != 0 ? from + std::countr_zero(after) : std::countr_zero(free));
  }
}

void ThreadPool::worker_loop(int self) {
  std::uint64_t seen = 0;
  for (;;) {
    poll_for(
        poll_.spin, [&] { return posted_.load(std::memory_order_acquire) != seen || stop_.load(); },
        poll_.yield);
    if (posted_.load() == seen && !stop_.load()) {
      std::unique_lock lock(mutex_);
      sleepers_.fetch_add(1);
      wake_.wait(lock, [&] { return stop_.load() || posted_.load() != seen; });
      sleepers_.fetch_sub(1);
    }
    if (stop_.load()) return;
    const std::uint64_t latest = posted_.load();
    // Count ourselves busy first: the caller, having closed the call, waits for busy_ == 0, so
    // a call seen open after this increment stays valid (its job_ and tasks_ too) until we leave.
    busy_.fetch_add(1);
    const std::uint64_t g = open_.load();
    if (g != 0 && g != seen) {
      const auto* fn = job_.load();
      const std::int64_t tasks = tasks_.load();
      seen = g;
      if (affine_.load()) run_owned_tasks(*fn, tasks, self);
      else run_tasks(*fn, tasks);
    } else {
      seen = latest;  // that call has closed already; wait for the next one
    }
    if (busy_.fetch_sub(1) == 1 && sleepers_.load() != 0) {
      std::lock_guard lock(mutex_);  // the caller may sleep on done_
      done_.notify_all();
    }
  }
}

void ThreadPool::parallel_for(std::int64_t tasks, const std::function<void(std::int64_t)>& fn) {
  serve(fn, tasks, false);
}

void ThreadPool::parallel_for_affine(std::int64_t tasks,
                                     const std::function<void(std::int64_t)>& fn) {
  serve(fn, tasks, tasks <= kMaxAffineTasks);
}

void ThreadPool::serve(const std::function<void(std::int64_t)>& fn, std::int64_t tasks,
                       bool affine) {
  if (tasks <= 0) return;
  // Inline when there is nothing to share, or when another call holds the workers: waiting
  // for it would only add the latency of its tasks to ours.
  if (workers_.empty() || tasks == 1 || claimed_.exchange(true, std::memory_order_acquire)) {
    for (std::int64_t i = 0; i < tasks; ++i) fn(i);
    return;
  }
  struct Release {
    std::atomic<bool>& claimed;
    ~Release() { claimed.store(false, std::memory_order_release); }
  } release{claimed_};
  const std::uint64_t g = ++generation_;
  job_.store(&fn);
  tasks_.store(tasks);
  next_.store(0);
  claimed_tasks_.store(0);
  affine_.store(affine);
  failed_.store(false);
  open_.store(g);
  posted_.store(g);
  if (sleepers_.load() != 0) {
    { std::lock_guard lock(mutex_); }  // a worker between its check and its wait sees g
    wake_.notify_all();
  }
  if (affine) run_owned_tasks(fn, tasks, 0);
  else run_tasks(fn, tasks);
  open_.store(0);  // close: from here on no worker joins this call
  poll_for(kCallerPoll, [&] { return busy_.load() == 0; });
  if (busy_.load() != 0) {
    std::unique_lock lock(mutex_);
    sleepers_.fetch_add(1);
    done_.wait(lock, [&] { return busy_.load() == 0; });
    sleepers_.fetch_sub(1);
  }
  job_.store(nullptr);
  std::exception_ptr error;
  {
    std::lock_guard lock(mutex_);
    error = std::exchange(error_, nullptr);
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace qforge::cpu_x86
