// The requantize op: int32 -> int8/uint8, one multiplier per tensor or per index along an axis,
// bit-exact with reference::requantize in both modes.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace qforge::cuda {

struct RequantizeArgs {
  std::int64_t n = 0;
  std::int64_t stride = 1;  // element i uses multiplier (i / stride) % extent
  std::int64_t extent = 1;
  bool fixed_point = false;
  const float* multipliers = nullptr;               // float mode (device)
  const std::int32_t* fixed_multipliers = nullptr;  // fixed mode: reference::quantize_multiplier
  const std::int32_t* fixed_shifts = nullptr;       //   of each multiplier, done on the host
  std::int32_t zero_point = 0, qmin = 0, qmax = 0;
};

void launch_requantize(const std::int32_t* c, std::uint8_t* y, const RequantizeArgs& args,
                       cudaStream_t stream);

}  // namespace qforge::cuda
