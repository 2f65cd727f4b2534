// Conv with what follows it fused per output plane: a Relu and a 2-D MaxPool (the executor's
// conv chains, model/src/fusion.h). Each output plane (one image, one channel) is finished
// while it is in cache: the Relu in place, then the pool into the chain's output, so the conv's
// full output (the largest tensor of a small CNN) is never written to memory and read back.
// Every value is computed with the float32 operations of the nodes run one by one, so the
// results are bit-identical to the unfused graph.
#pragma once

#include <cstdint>

#include "ops/kernel.h"
#include "ops/spatial.h"

namespace qforge::model::ops {

struct ConvEpilogue {
  bool relu = false;                     // y = x > 0 ? x : 0, as the Relu kernel
  const WindowGeometry* pool = nullptr;  // a 2-D MaxPool of each plane, or none
  bool empty() const noexcept { return !relu && !pool; }
};

// Finishes one conv output plane: Relu in place on `plane` (out_size values), then, with a
// pool, the pooled plane into `out` (without one, `out` is unused: the plane is the output).
void finish_conv_plane(const ConvEpilogue& e, float* plane, std::int64_t out_size, float* out);

// The Conv node `conv` on x, w and bias (null when absent), then the epilogue, into y: the
// Conv's output shape, or with a pool the pool's output shape.
void conv_fused(const Node& conv, const Tensor& x, const Tensor& w, const Tensor* bias,
                const ConvEpilogue& e, Tensor& y);

// The window of a 2-D MaxPool node on input shape x (as the MaxPool kernel reads it).
WindowGeometry max_pool_window(const Node& pool, const Shape& x);
// A 2-D MaxPool of `planes` contiguous planes (the MaxPool kernel's loop, one thread).
void max_pool_planes(const float* x, float* y, std::int64_t planes, const WindowGeometry& g);

}  // namespace qforge::model::ops
