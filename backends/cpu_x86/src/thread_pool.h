// A small fork-join pool: parallel_for hands out task indices from an atomic counter to the
// calling thread and threads()-1 workers. Each task must write its own disjoint outputs and
// compute them the same way whoever runs it, so results never depend on the thread count
// (the kernels split work into output tiles whose arithmetic is fixed by the tile alone).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace qforge::cpu_x86 {

class ThreadPool {
 public:
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int threads() const noexcept { return static_cast<int>(workers_.size()) + 1; }

  // Runs fn(i) for every i in [0, tasks). Returns when all have finished; rethrows the first
  // exception a task threw. Not reentrant: call it from one thread at a time.
  void parallel_for(std::int64_t tasks, const std::function<void(std::int64_t)>& fn);

 private:
  void worker_loop();
  void run_tasks();

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  const std::function<void(std::int64_t)>* job_ = nullptr;
  std::int64_t tasks_ = 0;
  std::int64_t next_ = 0;        // next task index (guarded by mutex_)
  int busy_ = 0;                 // workers inside run_tasks for the current generation
  std::uint64_t generation_ = 0;
  // generation_ readable without the lock: workers poll it for a short while before sleeping,
  // so back-to-back calls (a decode loop's GEMVs) do not pay a futex wake-up each.
  std::atomic<std::uint64_t> posted_{0};
  bool stop_ = false;
  std::exception_ptr error_;
};

// Default thread count: the physical cores qforge::cpu_info() reports (at least 1).
int default_thread_count();

}  // namespace qforge::cpu_x86
