#include "ops/parallel_blas.h"

#include <cblas.h>

#include <mutex>

namespace qforge::model::ops {

namespace {
std::mutex blas_mutex;
int scopes = 0;         // scopes open now, guarded by blas_mutex
int saved_threads = 1;  // OpenBLAS's count when the first of them opened
}  // namespace

SingleThreadedBlas::SingleThreadedBlas() {
  const std::lock_guard lock(blas_mutex);
  if (scopes++ == 0) {
    saved_threads = openblas_get_num_threads();
    if (saved_threads != 1) openblas_set_num_threads(1);
  }
}

SingleThreadedBlas::~SingleThreadedBlas() {
  const std::lock_guard lock(blas_mutex);
  if (--scopes == 0 && saved_threads != 1) openblas_set_num_threads(saved_threads);
}

}  // namespace qforge::model::ops
