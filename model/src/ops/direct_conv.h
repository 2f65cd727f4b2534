// Direct 2-D convolution for one input channel per group: depthwise convs, and first layers on a
// single-channel image. Per-group sgemm calls would be tiny ([mult x k] x [k x positions]) and
// an im2col copy of a one-channel image is k times the image, so a direct loop wins.
#pragma once

#include <cstdint>

#include "ops/conv.h"
#include "ops/spatial.h"

namespace qforge::model::ops {

// x [batch, c_in, H, W], w [m, 1, KH, KW], bias [m] or null, y [batch, m, OH, OW]; output
// channel oc reads input channel oc / (m / c_in). Every output is bias + w * x over all its
// window's taps in row-major order, a padding tap adding w * 0 (zero padding, as an im2col
// conv computes it), whichever path computes it; so the result does not depend on the thread
// count. Planes (image, channel) are split across the executor's pool. Each plane is then
// finished by `e` (conv.h): y holds the finished planes (the pooled ones, with a pool).
void direct_conv_2d(const float* x, const float* w, const float* bias, float* y, std::int64_t batch,
                    std::int64_t c_in, std::int64_t m, const WindowGeometry& g,
                    const ConvEpilogue& e);

}  // namespace qforge::model::ops
