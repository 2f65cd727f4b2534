#include "check.h"
#include "kernels/numerics.cuh"
#include "kernels/requantize.h"

namespace qforge::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kPerThread = 4;

__global__ void __launch_bounds__(kThreads)
    requantize_kernel(const std::int32_t* __restrict__ c, std::uint8_t* __restrict__ y,
                      RequantizeArgs a) {
  const std::int64_t i0 =
      (static_cast<std::int64_t>(blockIdx.x) * kThreads + threadIdx.x) * kPerThread;
#pragma unroll
  for (int e = 0; e < kPerThread; ++e) {
    const std::int64_t i = i0 + e;
    if (i >= a.n) return;
    const std::int64_t ch = a.extent == 1 ? 0 : (i / a.stride) % a.extent;
    std::int32_t q;
    if (a.fixed_point)
      q = dev::requantize_fixed(c[i], {a.fixed_multipliers[ch], a.fixed_shifts[ch]}, a.zero_point,
                                a.qmin, a.qmax);
    else q = dev::requantize_float(c[i], a.multipliers[ch], a.zero_point, a.qmin, a.qmax);
    y[i] = static_cast<std::uint8_t>(q & 0xFF);
  }
}

}  // namespace

void launch_requantize(const std::int32_t* c, std::uint8_t* y, const RequantizeArgs& args,
                       cudaStream_t stream) {
  if (args.n <= 0) return;
  const std::int64_t threads = (args.n + kPerThread - 1) / kPerThread;
  const auto grid = static_cast<unsigned>((threads + kThreads - 1) / kThreads);
  requantize_kernel<<<grid, kThreads, 0, stream>>>(c, y, args);
  check_launch("requantize_kernel");
}

}  // namespace qforge::cuda
