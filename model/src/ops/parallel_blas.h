// OpenBLAS on one thread while the executor's pool runs many sgemm calls at once.
//
// A batch of small matrix products (attention's Q·K^T and P·V: 32 × 12 products of
// 128 × 32 × 128 for MiniLM at batch 32) is split across the pool, one product per task. OpenBLAS
// would otherwise spread each small call over its own threads too: on 16 cores, hundreds of calls
// that each wake 16 threads to share a few hundred thousand multiply-adds, and, inside the
// pool's tasks, OpenBLAS threads competing with the pool's for the same cores. Debian's OpenBLAS
// (the pthreads build) has only a process-wide thread count, so the scope sets it to 1 and
// restores it when the last concurrent scope ends (executors may run on several threads at
// once). The cost of that: an sgemm that another thread of the process calls while a scope is
// open also runs on one thread, slower, and, as OpenBLAS's threaded sgemm rounds differently
// from its single-threaded one (measured: attention-sized products differ in the last bits),
// possibly with other last bits than when it runs alone.
#pragma once

namespace qforge::model::ops {

class SingleThreadedBlas {
 public:
  SingleThreadedBlas();
  ~SingleThreadedBlas();
  SingleThreadedBlas(const SingleThreadedBlas&) = delete;
  SingleThreadedBlas& operator=(const SingleThreadedBlas&) = delete;
};

}  // namespace qforge::model::ops
