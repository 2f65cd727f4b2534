// Threads. Debian's oneDNN 2.6 is built with the OpenMP CPU runtime (DNNL_CPU_RUNTIME=OMP), so a
// primitive runs on as many threads as omp_get_max_threads() reports on the calling thread when
// it executes, and bakes that count into its kernel when it is created (oneDNN's own primitive
// cache keys on it too). The plugin's "threads" option therefore sets the calling thread's
// OpenMP thread count around each op (ThreadScope) and restores the caller's afterwards, and the
// primitive cache keys on the count. The plugin's own loops run on the same OpenMP runtime, so
// the two never compete with a second thread pool.
#pragma once

#include <omp.h>

#include <algorithm>
#include <cstdint>

namespace qforge::onednn {

// OpenMP's thread count for this thread when the option is unset: OMP_NUM_THREADS or the cores.
int default_threads() noexcept;

// Sets the calling thread's OpenMP thread count to `threads` (0 = leave the caller's) for the
// scope's lifetime.
class ThreadScope {
 public:
  explicit ThreadScope(int threads) noexcept;
  ~ThreadScope();
  ThreadScope(const ThreadScope&) = delete;
  ThreadScope& operator=(const ThreadScope&) = delete;
  // The count ops in this scope run on.
  int threads() const noexcept { return threads_; }

 private:
  int saved_ = 0;
  int threads_ = 1;
};

// Runs body(begin, end) over [0, n) in contiguous chunks on up to `threads` OpenMP threads.
// Chunk boundaries are multiples of `align` (so packed 4-bit and binary outputs never share a
// byte between threads); small ranges run on the calling thread. body must not throw.
template <class Body>
void parallel_ranges(std::int64_t n, std::int64_t align, int threads, std::int64_t min_per_thread,
                     const Body& body) {
  if (n <= 0) return;
  const std::int64_t by_size =
      std::max<std::int64_t>(1, n / std::max<std::int64_t>(1, min_per_thread));
  const int t = static_cast<int>(std::min<std::int64_t>(std::max(threads, 1), by_size));
  if (t <= 1) {
    body(std::int64_t{0}, n);
    return;
  }
  const std::int64_t units = (n + align - 1) / align;
  const std::int64_t per = (units + t - 1) / t;
#pragma omp parallel for num_threads(t) schedule(static, 1)
  for (int i = 0; i < t; ++i) {
    const std::int64_t begin = std::min(n, static_cast<std::int64_t>(i) * per * align);
    const std::int64_t end = std::min(n, (static_cast<std::int64_t>(i) + 1) * per * align);
    if (begin < end) body(begin, end);
  }
}

}  // namespace qforge::onednn
