#include "ops/parallel.h"

#include <algorithm>

#include "ops/parallel_then_sleep.h"
#include "thread_pool.h"

namespace qforge::model::ops {

namespace {
thread_local ThreadPool* current_pool = nullptr;
}

ScopedPool::ScopedPool(ThreadPool* pool) : previous_(current_pool) { current_pool = pool; }
ScopedPool::~ScopedPool() { current_pool = previous_; }

namespace {

void split(std::int64_t n, std::int64_t grain,
           const std::function<void(std::int64_t, std::int64_t)>& f, bool then_sleep) {
  if (n <= 0) return;
  ThreadPool* pool = current_pool;
  const std::int64_t most = n / std::max<std::int64_t>(grain, 1);
  if (!pool || pool->threads() == 1 || most < 2) {
    f(0, n);
    return;
  }
  // A few tasks per thread even out a thread that starts late (the machine is shared).
  const std::int64_t tasks = std::min<std::int64_t>(most, std::int64_t{4} * pool->threads());
  const std::int64_t chunk = (n + tasks - 1) / tasks;
  const auto task = [&](std::int64_t t) {
    const std::int64_t begin = t * chunk;
    f(begin, std::min(n, begin + chunk));
  };
  if (then_sleep) pool->parallel_for_then_sleep((n + chunk - 1) / chunk, task);
  else pool->parallel_for((n + chunk - 1) / chunk, task);
}

}  // namespace

void parallel_for(std::int64_t n, std::int64_t grain,
                  const std::function<void(std::int64_t, std::int64_t)>& f) {
  split(n, grain, f, false);
}

void parallel_for_then_sleep(std::int64_t n, std::int64_t grain,
                             const std::function<void(std::int64_t, std::int64_t)>& f) {
  split(n, grain, f, true);
}

}  // namespace qforge::model::ops
