// Bounds on a quantized convolution's int32 accumulator from its weights alone (docs/NUMERICS.md,
// "Convolution"). Backends accumulate in int32 and must never let acc + an int32 bias leave it
// silently; when the weights and the bias are constants (a plan's fixed weights), these bounds
// prove once, for every activation the op can be given, that no output can overflow, so the
// backend can drop its per-call check.
#pragma once

#include <cstdint>
#include <vector>

#include "qforge/export.h"
#include "qforge/op_desc.h"

namespace qforge::reference {

// The range [lo, hi] that acc[n, o, oh, ow] (+ bias[o] when bias is not null) can take, for one
// output channel o, over every activation code of X's dtype.
struct ConvAccRange {
  std::int64_t lo = 0, hi = 0;
};

// Per output channel o, with c_k = W[o, k] - zw[o] over o's window k < C / groups * KH * KW and
// zx X's zero point:
//   hi = sum_k max(c_k * (qmax - zx), c_k * (qmin - zx)),  lo = sum_k min(the same)  (+ bias[o])
// in int64, qmin and qmax the limits of X's dtype. Each term's range holds 0 (zx lies in
// [qmin, qmax]), and a padded position contributes 0, so the range holds every output of the
// channel whatever the padding; an output whose window lies inside X reaches both ends. `op` is
// conv_integer, qlinear_conv or conv_dequant, and the descriptor is checked as that op checks it.
// w holds O * C / groups * KH * KW codes (OIHW); bias (int32, [O]) may be null.
QFORGE_API std::vector<ConvAccRange> conv_int32_bound(OpKind op, const ConvDesc& desc,
                                                      const void* w, const std::int32_t* bias);

// Whether, for every activation X of the descriptor's dtype, acc and acc + bias[o] (bias may be
// null) stay inside int32 for every output: then a backend that computes them in wrap-around
// int32 gets them exactly and needs no overflow check.
QFORGE_API bool conv_int32_cannot_overflow(OpKind op, const ConvDesc& desc, const void* w,
                                           const std::int32_t* bias);

}  // namespace qforge::reference
