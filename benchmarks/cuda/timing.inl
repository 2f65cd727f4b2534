// time_ms and host_us_per_call (anchors.h): CUDA events around each run, median of the runs;
// the host clock around enqueueing.
#include <algorithm>
#include <chrono>
#include <vector>

namespace qforge::bench {

template <class F>
float time_ms(F&& fn, int warmup, int reps) {
  for (int i = 0; i < warmup; ++i) fn();
  std::vector<cudaEvent_t> start(reps), stop(reps);
  for (int i = 0; i < reps; ++i) {
    check_cuda(cudaEventCreate(&start[i]), "cudaEventCreate");
    check_cuda(cudaEventCreate(&stop[i]), "cudaEventCreate");
  }
  for (int i = 0; i < reps; ++i) {
    check_cuda(cudaEventRecord(start[i], nullptr), "cudaEventRecord");
    fn();
    check_cuda(cudaEventRecord(stop[i], nullptr), "cudaEventRecord");
  }
  check_cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  std::vector<float> ms(reps);
  for (int i = 0; i < reps; ++i) {
    check_cuda(cudaEventElapsedTime(&ms[i], start[i], stop[i]), "cudaEventElapsedTime");
    cudaEventDestroy(start[i]);
    cudaEventDestroy(stop[i]);
  }
  std::nth_element(ms.begin(), ms.begin() + reps / 2, ms.end());
  return ms[reps / 2];
}

template <class F>
double host_us_per_call(F&& fn, int calls) {
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < calls; ++i) fn();
  const auto t1 = std::chrono::steady_clock::now();
  check_cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  return std::chrono::duration<double, std::micro>(t1 - t0).count() / calls;
}

}  // namespace qforge::bench
