// A weight's codes from its params: reference::quantize's bytes, faster for the common case.
#pragma once

#include <cstddef>
#include <span>

#include "qforge/params.h"
#include "qforge/shape.h"

namespace qforge::model::quantize {

// The codes reference::quantize writes for `data` of `shape` with `p`, into `codes` (its storage
// bytes). int8 and uint8, per tensor or per channel, affine or symmetric, take a loop over each
// channel's run of values with the channel's scale and zero point at hand (reference::quantize
// looks them up per value: about 45 ns a value, 10 ms of the Fashion-MNIST MLP's plans); the
// rest (sub-byte and 16-bit dtypes, blocks, logarithmic) goes to reference::quantize.
// Throws qforge::Error when `p` does not fit `shape` or `codes` is not the storage size.
void quantize_codes(const Shape& shape, const QuantizationParams& p, std::span<const float> data,
                    std::span<std::byte> codes);

}  // namespace qforge::model::quantize
