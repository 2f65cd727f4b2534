#include "thread_pool.h"

#include <algorithm>

#include "qforge/hardware.h"

namespace qforge::cpu_x86 {

int default_thread_count() {
  const CpuInfo& cpu = cpu_info();
  int n = cpu.cores > 0 ? cpu.cores : static_cast<int>(std::thread::hardware_concurrency());
  return std::max(1, n);
}

ThreadPool::ThreadPool(int threads) {
  for (int i = 1; i < std::max(1, threads); ++i) workers_.emplace_back([this] { worker_loop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::run_tasks(const std::function<void(std::int64_t)>& fn, std::int64_t tasks) {
  while (!failed_.load(std::memory_order_relaxed)) {
    // seq_cst: a worker's busy_ increment precedes its grab, so a caller whose own grab comes
    // later in this counter's order also sees that worker as busy.
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
  std::unique_lock lock(mutex_);
  for (;;) {
    if (!stop_ && generation_ == seen) {
      // About 50-100 us of polling (pause is ~40-140 cycles), then sleep on the condition.
      lock.unlock();
      for (int i = 0; i < 2000 && posted_.load(std::memory_order_acquire) == seen; ++i)
        __builtin_ia32_pause();
      lock.lock();
    }
    wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
    if (stop_) return;
    seen = generation_;
    if (!job_) continue;  // that call has already ended
    const auto* fn = job_;
    const std::int64_t tasks = tasks_;
    busy_.fetch_add(1);
    lock.unlock();
    run_tasks(*fn, tasks);
    if (busy_.fetch_sub(1) == 1) {
      lock.lock();
      done_.notify_all();  // no system call unless the caller sleeps
    } else {
      lock.lock();
    }
  }
}

void ThreadPool::parallel_for(std::int64_t tasks, const std::function<void(std::int64_t)>& fn) {
  if (tasks <= 0) return;
  if (workers_.empty() || tasks == 1) {
    for (std::int64_t i = 0; i < tasks; ++i) fn(i);
    return;
  }
  {
    std::lock_guard lock(mutex_);
    job_ = &fn;
    tasks_ = tasks;
    next_.store(0);
    failed_.store(false);
    error_ = nullptr;
    ++generation_;
    posted_.store(generation_, std::memory_order_release);
  }
  wake_.notify_all();  // no system call when every worker is polling
  run_tasks(fn, tasks);
  // Every index is handed out; poll for the workers still running theirs (about 100 us), then
  // sleep. busy_ == 0 under the lock is final: job_ is cleared before the lock is released.
  for (int i = 0; i < 4000 && busy_.load() != 0; ++i) __builtin_ia32_pause();
  std::unique_lock lock(mutex_);
  done_.wait(lock, [&] { return busy_.load() == 0; });
  job_ = nullptr;
  if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
}

}  // namespace qforge::cpu_x86
