// quantize, dequantize and DynamicQuantizeLinear as plain loops with the reference's
// arithmetic (rounding.h), for every dtype, mapping, granularity and float input type the
// reference defines, on OpenMP threads.
//
// oneDNN's f32 -> s8/u8 reorder cannot do quantize exactly: it multiplies by 1/s instead of
// dividing by s and rounds after adding the zero point (measured: about 5% of random values
// differ; docs/ONEDNN.md), and it sends NaN to the saturation bound rather than to z.
#pragma once

#include <cstdint>

#include "qforge/op_desc.h"

namespace qforge::onednn {

void quantize_loop(const QuantizeDesc& d, const void* x, void* q, int threads);
void dequantize_loop(const QuantizeDesc& d, const void* q, float* x, int threads);

// reference::dynamic_quantize_linear.
QuantizationParams dynamic_quantize_loop(const DynamicQuantizeDesc& d, const float* x,
                                         std::uint8_t* y, int threads);

// max |x| over n float32 values; throws invalid_argument naming the first non-finite element
// (`op` and `why` complete the message).
float absmax_finite(const float* x, std::int64_t n, int threads, const char* op, const char* why);

// q[i] = quantize_value(x[i], s, z, qmin, qmax) into int8, for linear_forward's Xq.
void quantize_int8(const float* x, std::int8_t* q, std::int64_t n, float s, std::int32_t qmin,
                   std::int32_t qmax, int threads);

}  // namespace qforge::onednn
