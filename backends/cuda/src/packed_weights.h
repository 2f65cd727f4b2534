// Weights packed by the CUDA backend (pack_weights): B converted once to the form the kernels
// read, with its column sums, scales and zero points in device memory of its own (the parameter
// cache may evict). Per-tensor / per-channel B: the int8 [N, kp] operand of the GEMM kernels;
// block-wise B: the block-wise kernels' operand (gemm_blockwise.h) with every per-block sum.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "cuda_ops.h"
#include "device_buffer.h"

namespace qforge::cuda {

class CudaPackedWeights final : public PackedWeights {
 public:
  CudaPackedWeights(MatmulDesc desc, int device) : desc_(std::move(desc)), device_(device) {}
  const MatmulDesc& desc() const noexcept override { return desc_; }
  std::string backend() const override { return kBackendName; }
  std::size_t bytes() const noexcept override {
    std::size_t total = 0;
    for (const auto& b : buffers_) total += b->size();
    return total;
  }
  int device() const { return device_; }

  // A device array owned by these weights.
  template <class T>
  T* own(std::size_t count) {
    buffers_.push_back(std::make_unique<DeviceBuffer>(count * sizeof(T), device_));
    return static_cast<T*>(buffers_.back()->data());
  }

  CudaOps::BOperand operand;  // per-tensor / per-channel B
  BlockwiseB blockwise;       // block-wise B

 private:
  MatmulDesc desc_;
  int device_;
  std::vector<std::unique_ptr<DeviceBuffer>> buffers_;
};

}  // namespace qforge::cuda
