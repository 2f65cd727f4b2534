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

// Tasks are coarse (an output tile of a GEMM, a slab of a tensor), so one lock per task is cheap.
void ThreadPool::run_tasks() {
  for (;;) {
    std::int64_t i;
    {
      std::lock_guard lock(mutex_);
      if (next_ >= tasks_ || error_) return;
      i = next_++;
    }
    try {
      (*job_)(i);
    } catch (...) {
      std::lock_guard lock(mutex_);
      if (!error_) error_ = std::current_exception();
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
    ++busy_;
    lock.unlock();
    run_tasks();
    lock.lock();
    if (--busy_ == 0) done_.notify_all();
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
    next_ = 0;
    error_ = nullptr;
    ++generation_;
    posted_.store(generation_, std::memory_order_release);
  }
  wake_.notify_all();
  run_tasks();
  std::unique_lock lock(mutex_);
  // Wait until every task was taken and every worker that joined this generation has left.
  done_.wait(lock, [&] { return busy_ == 0 && (next_ >= tasks_ || error_); });
  job_ = nullptr;
  if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
}

}  // namespace qforge::cpu_x86
