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
  void run_tasks(const std::function<void(std::int64_t)>& fn, std::int64_t tasks);

  // The hot path takes no lock and makes no system call while the workers are polling: task
  // indices come from an atomic counter and the caller polls for the workers to leave before it
  // sleeps. On the GPU host, whose kernel is a user-space one (gVisor), every futex call (a
  // contended mutex, a wait on a condition variable) costs tens of microseconds, and a mutex per
  // task grab made a 0.4 ms GEMM on 16 threads pay them many times over.
  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  // Guarded by mutex_: a worker joins a call only while job_ is set, and only under the lock,
  // so once the caller has seen busy_ == 0 under the lock no worker can still touch the call.
  const std::function<void(std::int64_t)>* job_ = nullptr;
  std::int64_t tasks_ = 0;
  std::uint64_t generation_ = 0;
  bool stop_ = false;
  std::exception_ptr error_;
  std::atomic<std::int64_t> next_{0};  // next task index of the current call
  std::atomic<int> busy_{0};           // workers inside run_tasks (incremented under mutex_)
  std::atomic<bool> failed_{false};    // a task threw: stop handing out tasks
  // generation_ readable without the lock: workers poll it for a short while before sleeping,
  // so back-to-back calls (a decode loop's GEMVs) do not pay a futex wake-up each.
  std::atomic<std::uint64_t> posted_{0};
};

// Default thread count: the physical cores qforge::cpu_info() reports (at least 1).
int default_thread_count();

}  // namespace qforge::cpu_x86
