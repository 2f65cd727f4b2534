// A small fork-join pool: parallel_for hands out task indices from an atomic counter to the
// calling thread and threads()-1 workers. Each task must write its own disjoint outputs and
// compute them the same way whoever runs it, so results never depend on the thread count
// (the kernels split work into output tiles whose arithmetic is fixed by the tile alone).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace qforge::cpu_x86 {

// How an idle worker waits for the next call, counted from its own last task: it polls with pause
// instructions for `spin`, then for `yield` more polls between sched_yield calls (a core it holds
// goes to any other runnable thread), then sleeps on a condition variable (a futex wait, and a
// wake-up the next call pays). The default spin spans the gaps inside one call (dynamic
// quantization's range and quantize passes, the packing of A, the GEMM) but not the float work a
// model runs between two calls: there the model executor's pool and OpenBLAS need every core, and
// 15 workers polling for a millisecond each made MiniLM's dynamic_int8 batch on the GPU host's 16
// cores 1.4x slower (docs/PERFORMANCE.md, "MiniLM dynamic_int8 on the GPU host's CPU: profile and
// the pool").
struct PollTimes {
  std::chrono::microseconds spin{20};
  std::chrono::microseconds yield{0};
};

class ThreadPool {
 public:
  explicit ThreadPool(int threads, PollTimes poll = {});
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

  // Like parallel_for, but each task has an owner: thread p (0 = the caller, p = the p-th
  // worker) first runs tasks [p * tasks / threads(), (p + 1) * tasks / threads()) in order, so
  // that call after call a thread reads and writes the same part of the data and finds it in
  // its own cache; then it takes any task not yet started, the nearest after its own first, so
  // a worker that is late or asleep delays nothing. Above kMaxAffineTasks tasks: parallel_for.
  static constexpr std::int64_t kMaxAffineTasks = 64;
  void parallel_for_affine(std::int64_t tasks, const std::function<void(std::int64_t)>& fn);

 private:
  void worker_loop(int self);
  void run_tasks(const std::function<void(std::int64_t)>& fn, std::int64_t tasks);
  void run_owned_tasks(const std::function<void(std::int64_t)>& fn, std::int64_t tasks, int self);
  void serve(const std::function<void(std::int64_t)>& fn, std::int64_t tasks, bool affine);

  // No lock and no system call on the hot path while the workers poll: on the GPU host, whose
  // kernel runs in user space (gVisor), every futex call costs tens of microseconds, and 15
  // workers queueing on one mutex at the start and end of every call cost more than a 1024^3
  // GEMM's arithmetic on 16 threads. A call is published through atomics; a worker joins by
  // counting itself busy and then checking that the call is still open (the caller closes it
  // before waiting for busy_ == 0), so no worker can run a closed call's function. The mutex
  // and the condition variables only serve workers and callers that went to sleep.
  //
  // The call's description (written once per call, then only read), the task counter and the
  // count of busy workers each have a cache line of their own: 15 workers polling posted_ on
  // the line where the others fetch_add next_ and busy_ made every one of those atomic
  // additions wait for the line to come back from all the pollers (docs/PERFORMANCE.md,
  // "Depthwise convolution at 16 threads").
  PollTimes poll_;
  std::vector<std::thread> workers_;
  alignas(64) std::atomic<const std::function<void(std::int64_t)>*> job_{nullptr};
  std::atomic<std::int64_t> tasks_{0};
  std::atomic<std::uint64_t> open_{0};    // generation of the open call, 0 when none is open
  std::atomic<std::uint64_t> posted_{0};  // generation of the latest call (workers poll it)
  std::atomic<bool> stop_{false};
  std::atomic<bool> affine_{false};  // the open call hands out owned tasks (claimed_tasks_)
  alignas(64) std::atomic<std::int64_t> next_{0};  // next task index of the open call
  // Affine calls: bit i set once task i has been taken (replaces next_'s counter).
  std::atomic<std::uint64_t> claimed_tasks_{0};
  std::atomic<bool> failed_{false};       // a task threw: stop handing out tasks
  alignas(64) std::atomic<int> busy_{0};  // workers inside (or about to enter) run_tasks
  std::atomic<int> sleepers_{0};          // threads asleep, or about to sleep, on a condition
  // Held by the thread whose call the workers serve; a call that cannot take it runs inline.
  alignas(64) std::atomic<bool> claimed_{false};
  std::uint64_t generation_ = 0;  // count of calls, written only by the claiming thread
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  std::exception_ptr error_;  // guarded by mutex_
};

// Default thread count: the physical cores qforge::cpu_info() reports (at least 1).
int default_thread_count();

}  // namespace qforge::cpu_x86
