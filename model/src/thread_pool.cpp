#include "thread_pool.h"

#include <algorithm>
#include <chrono>

#include "qforge/hardware.h"

namespace qforge::model {

int default_thread_count() {
  const CpuInfo& cpu = cpu_info();
  int n = cpu.cores > 0 ? cpu.cores : static_cast<int>(std::thread::hardware_concurrency());
  return std::max(1, n);
}

namespace {

// How long a thread polls before it sleeps on a condition variable. Timed rather than counted
// in pause instructions, whose latency differs several times between CPUs. Shorter than the
// cpu_x86 plugin's polls: between two float kernels the executor usually runs a GEMM or a
// convolution through OpenBLAS, whose own threads need the cores the pool's workers would spin
// on; a sleep costs a futex wait and a wake-up (tens of microseconds under gVisor), about what a
// kernel split across threads is worth in the first place.
constexpr auto kWorkerPoll = std::chrono::microseconds(100);
constexpr auto kCallerPoll = std::chrono::microseconds(200);

// Polls `done` with pause instructions until it holds or `limit` has passed; true if it holds.
template <class Done>
bool poll_for(std::chrono::microseconds limit, Done done) {
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    for (int i = 0; i < 64; ++i) {
      if (done()) return true;
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
    }
    if (std::chrono::steady_clock::now() - start > limit) return done();
  }
}

}  // namespace

ThreadPool::ThreadPool(int threads) {
  for (int i = 1; i < std::max(1, threads); ++i) workers_.emplace_back([this] { worker_loop(); });
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

void ThreadPool::worker_loop() {
  std::uint64_t seen = 0;
  bool poll = true;  // false after serving a call that asked its workers to sleep
  for (;;) {
    poll_for(poll ? kWorkerPoll : std::chrono::microseconds(0),
             [&] { return posted_.load(std::memory_order_acquire) != seen || stop_.load(); });
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
      poll = !sleep_after_.load();
      seen = g;
      run_tasks(*fn, tasks);
    } else {
      seen = latest;  // that call has closed already; wait for the next one
      poll = true;
    }
    if (busy_.fetch_sub(1) == 1 && sleepers_.load() != 0) {
      std::lock_guard lock(mutex_);  // the caller may sleep on done_
      done_.notify_all();
    }
  }
}

void ThreadPool::parallel_for(std::int64_t tasks, const std::function<void(std::int64_t)>& fn) {
  serve(tasks, fn, false);
}

void ThreadPool::parallel_for_then_sleep(std::int64_t tasks,
                                         const std::function<void(std::int64_t)>& fn) {
  serve(tasks, fn, true);
}

void ThreadPool::serve(std::int64_t tasks, const std::function<void(std::int64_t)>& fn,
                       bool then_sleep) {
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
  failed_.store(false);
  sleep_after_.store(then_sleep);
  open_.store(g);
  posted_.store(g);
  if (sleepers_.load() != 0) {
    { std::lock_guard lock(mutex_); }  // a worker between its check and its wait sees g
    wake_.notify_all();
  }
  run_tasks(fn, tasks);
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

}  // namespace qforge::model
