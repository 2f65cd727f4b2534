// parallel_for (parallel.h) for loops that the calling thread follows with work on another
// thread pool: the executor's workers sleep when the loop ends instead of polling for the next
// kernel on the cores that pool's threads need (QuantizedModel's input prelude, followed by a
// plugin's GEMM). Kept apart from parallel.h so that the kernels including it do not depend on it.
#pragma once

#include <cstdint>
#include <functional>

namespace qforge::model::ops {

void parallel_for_then_sleep(std::int64_t n, std::int64_t grain,
                             const std::function<void(std::int64_t, std::int64_t)>& f);

}  // namespace qforge::model::ops
