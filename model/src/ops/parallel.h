// Splitting a float kernel's loop across the executor's thread pool.
//
// Executor::run installs its pool for the kernels it calls (a thread-local pointer, so kernels
// keep their plain signature and copies of an Executor run on their own threads); outside a run,
// or with one thread, parallel_for runs the whole range on the calling thread. Kernels split only
// over independent outputs (elements, rows, planes) and compute each one exactly as the
// single-threaded loop does, so results are bit-identical whatever the thread count.
#pragma once

#include <cstdint>
#include <functional>

namespace qforge::model {
class ThreadPool;
}

namespace qforge::model::ops {

// Calls f(begin, end) over disjoint ranges covering [0, n). Ranges hold at least `grain` items
// (fewer only for the last), so small loops stay on one thread: a task should be worth far more
// than the microseconds of handing it out.
void parallel_for(std::int64_t n, std::int64_t grain,
                  const std::function<void(std::int64_t, std::int64_t)>& f);

// Elements per task for cheap elementwise work (an add, a compare, a Relu): tens of
// microseconds, several times what waking a worker costs on a loaded machine (measured on the
// example MLP, whose [256, 512] Relus lost time when split into 4096-element tasks).
inline constexpr std::int64_t kElementGrain = 65536;
// For work that costs a libm call per element (exp, erf, tanh): about ten times an add.
inline constexpr std::int64_t kLibmGrain = kElementGrain / 8;

// Installs a pool for the kernels this thread runs until the scope ends (null: run inline).
class ScopedPool {
 public:
  explicit ScopedPool(ThreadPool* pool);
  ~ScopedPool();
  ScopedPool(const ScopedPool&) = delete;
  ScopedPool& operator=(const ScopedPool&) = delete;

 private:
  ThreadPool* previous_;
};

}  // namespace qforge::model::ops
