// Quantizing a layer's float weight once, as a recipe's WeightQuantization says, into the codes
// and params matmul_dequant reads as B.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "qforge/model/gptq.h"
#include "qforge/model/graph.h"
#include "qforge/model/recipe.h"
#include "qforge/op_desc.h"
#include "qforge/params.h"

namespace qforge::model::quantize {

struct QuantizedWeight {
  MatrixLayout layout;
  QuantizationParams params;
  std::vector<std::byte> codes;
};

// `weight` is [K, N] (kn) or [N, K] (nk). Each group's range is its min/max, or mse_range's
// search when the rule's observer is mse (qforge/model/weight_range.h). Per tensor: one range. Per
// channel: one range per output column N (the rule's axis, when set, must name that axis of the
// weight as stored). Block: blocks of block_size along K, which matmul_dequant reads in the nk
// layout, so a kn weight is transposed first. Params follow reference::params_from_ranges, codes
// reference::quantize. With the rule's rounding gptq, gptq_round (qforge/model/gptq.h) chooses
// the ranges and the values to quantize from `gptq`, the factor of the layer's input (required:
// throws invalid_argument naming the node without it); the layout stays as given except for
// blocks, as above. Throws unsupported naming the node for another channel axis.
QuantizedWeight quantize_weight(const Node& node, const WeightQuantization& rule,
                                std::span<const float> weight, std::int64_t k, std::int64_t n,
                                MatrixLayout layout, const GptqFactor* gptq = nullptr);

// Bytes of the codes plus 4 per scale and 4 per stored zero point (affine only).
std::size_t quantized_bytes(const QuantizedWeight& w);

}  // namespace qforge::model::quantize
