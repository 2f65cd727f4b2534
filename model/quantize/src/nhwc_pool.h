// MaxPool on int8 / uint8 codes stored NHWC, for the int8 path between quantized convolutions
// that run in that layout (the executor's MaxPool reads NCHW).
#pragma once

#include <cstdint>
#include <optional>

#include "qforge/model/graph.h"

namespace qforge::model::quantize {

struct PoolWindow {
  std::int64_t kernel_h = 1, kernel_w = 1;
  std::int64_t stride_h = 1, stride_w = 1;
  std::int64_t dilation_h = 1, dilation_w = 1;
  std::int64_t pad_top = 0, pad_left = 0;
};

// The window of a 2-D MaxPool node with explicit pads (auto_pad NOTSET or VALID), or nullopt
// for one this kernel does not take (SAME_* padding, an Indices output, storage_order 1).
std::optional<PoolWindow> nhwc_pool_window(const Node& node);

// y [n, oh, ow, c] = the max over each window of x [n, h, w, c]; taps outside x are skipped
// (ONNX pads MaxPool with -inf). The output extents come from the graph (they include
// ceil_mode). `is_signed`: int8 codes, else uint8.
void max_pool_nhwc(const void* x, void* y, bool is_signed, std::int64_t n, std::int64_t h,
                   std::int64_t w, std::int64_t c, std::int64_t oh, std::int64_t ow,
                   const PoolWindow& window);

}  // namespace qforge::model::quantize
