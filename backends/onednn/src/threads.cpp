#include "threads.h"

namespace qforge::onednn {

int default_threads() noexcept { return std::max(1, omp_get_max_threads()); }

ThreadScope::ThreadScope(int threads) noexcept : saved_(omp_get_max_threads()) {
  if (threads > 0 && threads != saved_) omp_set_num_threads(threads);
  threads_ = std::max(1, omp_get_max_threads());
}

ThreadScope::~ThreadScope() {
  if (omp_get_max_threads() != saved_) omp_set_num_threads(saved_);
}

}  // namespace qforge::onednn
