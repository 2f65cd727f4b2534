// The model layer's fork-join pool for the float kernels (the design of backends/cpu_x86's pool,
// which is private to that plugin): parallel_for hands out task indices from an atomic counter to
// the calling thread and threads()-1 workers. Each task must write its own disjoint outputs and
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

namespace qforge::model {

class ThreadPool {
 public:
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int threads() const noexcept { return static_cast<int>(workers_.size()) + 1; }

  // Runs fn(i) for every i in [0, tasks). Returns when all have finished; rethrows the first
  // exception a task threw. Safe to call from several threads at once, and from inside a task:
  // the pool serves one call at a time, and a call that finds it serving another runs all its
  // tasks on the calling thread instead of waiting (plans of one backend instance run at once
  // from the caller's threads, each of which then does its own work).
  void parallel_for(std::int64_t tasks, const std::function<void(std::int64_t)>& fn);

  // The same, the workers then sleeping at once instead of polling for the next call: for
  // work that the calling thread follows with work on another pool (a quantized layer's
  // plugin), whose threads need the cores these workers would poll on.
  void parallel_for_then_sleep(std::int64_t tasks, const std::function<void(std::int64_t)>& fn);

 private:
  void worker_loop();
  void run_tasks(const std::function<void(std::int64_t)>& fn, std::int64_t tasks);
  void serve(std::int64_t tasks, const std::function<void(std::int64_t)>& fn, bool then_sleep);

  // No lock and no system call on the hot path while the workers poll: on the GPU host, whose
  // kernel runs in user space (gVisor), every futex call costs tens of microseconds, and 15
  // workers queueing on one mutex at the start and end of every call cost more than a 1024^3
  // GEMM's arithmetic on 16 threads (measured for the cpu_x86 pool). A call is published through
  // atomics; a worker joins by counting itself busy and then checking that the call is still open
  // (the caller closes it before waiting for busy_ == 0), so no worker can run a closed call's
  // function. The mutex and the condition variables only serve workers and callers that went to
  // sleep.
  std::vector<std::thread> workers_;
  std::atomic<const std::function<void(std::int64_t)>*> job_{nullptr};
  std::atomic<std::int64_t> tasks_{0};
  std::atomic<std::int64_t> next_{0};     // next task index of the open call
  std::atomic<std::uint64_t> open_{0};    // generation of the open call, 0 when none is open
  std::atomic<std::uint64_t> posted_{0};  // generation of the latest call (workers poll it)
  std::atomic<int> busy_{0};              // workers inside (or about to enter) run_tasks
  std::atomic<int> sleepers_{0};          // threads asleep, or about to sleep, on a condition
  std::atomic<bool> failed_{false};       // a task threw: stop handing out tasks
  std::atomic<bool> stop_{false};
  std::atomic<bool> sleep_after_{false};  // the open call's workers sleep when it ends
  // Held by the thread whose call the workers serve; a call that cannot take it runs inline.
  std::atomic<bool> claimed_{false};
  std::uint64_t generation_ = 0;  // count of calls, written only by the claiming thread
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  std::exception_ptr error_;  // guarded by mutex_
};

// Default thread count: the physical cores qforge::cpu_info() reports (at least 1).
int default_thread_count();

}  // namespace qforge::model
