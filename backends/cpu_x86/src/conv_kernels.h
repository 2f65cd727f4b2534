// The AVX2 pieces of the convolution (conv_depthwise_avx2.cpp): the direct depthwise kernel.
#pragma once

#include <cstdint>

namespace qforge::cpu_x86 {

// One NHWC image convolved depthwise with one output channel per input channel (a channel
// multiplier widens X first, conv.cpp): for output pixels [p0, p1),
// acc[(p - p0) * c + ch] = sum over taps inside the input of (x - zx) * taps[tap * c + ch], with
// taps already centered (w - zw[ch]). Taps outside the input add 0 (ONNX pads X - zx).
struct DepthwiseArgs {
  const std::uint8_t* x;  // [h][w][c] codes
  bool x_signed;          // int8 codes (else uint8)
  std::int32_t zx;
  const std::int32_t* taps;  // [kh * kw][c]
  std::int64_t c, h, w, kh, kw;
  std::int64_t stride_h, stride_w, dilation_h, dilation_w, pad_top, pad_left;
  std::int64_t out_w;
};
void depthwise_rows_avx2(const DepthwiseArgs& a, std::int64_t p0, std::int64_t p1,
                         std::int32_t* acc);

}  // namespace qforge::cpu_x86
