// Scratch device memory of one backend instance, one growable slot per purpose (converted
// operands, row sums, split-K partials, reduction results). A slot only grows; growing waits
// for the stream first, since queued kernels may still read the old allocation.
#pragma once

#include <cuda_runtime_api.h>

#include <array>
#include <cstddef>
#include <memory>

#include "device_buffer.h"

namespace qforge::cuda {

enum class Slot : int {
  a_operand,
  b_operand,
  a_sums,
  b_sums,
  split_k,
  split_counters,  // zeroed; every launch leaves them zero again
  stats,
  stats_partials,
  float_partials,
  // block-wise GEMM (gemm_blockwise.h)
  bw_col_sums,
  bw_col_sums_total,
  bw_neg_zero_points,
  bw_row_sums,
  bw_partials,
  bw_counters,
  // convolution (kernels/conv.h)
  conv_input,         // X as NHWC
  conv_weights,       // packed weights
  conv_weight_sums,   // their row sums
  conv_overflow,      // the int32-bias overflow flag
  conv_partial,       // split-K sums [N * OH * OW, O]
  conv_partial_xsum,  // split-K pixel sums [N * OH * OW, groups]
  count_,
};

class Workspace {
 public:
  // At least `bytes` of device memory for `slot`, valid until the next get() of the same slot.
  void* get(Slot slot, std::size_t bytes, int device, cudaStream_t stream);
  template <class T>
  T* get(Slot slot, std::size_t count, int device, cudaStream_t stream) {
    return static_cast<T*>(get(slot, count * sizeof(T), device, stream));
  }
  // The same, zero-filled (on the stream) whenever the slot is (re)allocated: for counters
  // that their users leave at zero.
  void* get_zeroed(Slot slot, std::size_t bytes, int device, cudaStream_t stream);
  void clear() noexcept;

 private:
  std::array<std::unique_ptr<DeviceBuffer>, static_cast<std::size_t>(Slot::count_)> slots_;
};

}  // namespace qforge::cuda
