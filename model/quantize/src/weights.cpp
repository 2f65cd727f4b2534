#include "weights.h"

#include <algorithm>

#include "qforge/dtype.h"
#include "qforge/error.h"
#include "qforge/model/weight_range.h"
#include "qforge/reference.h"
#include "weight_codes.h"

namespace qforge::model::quantize {
namespace {

// Element (row r, column c) of a row-major matrix with `cols` columns.
float at(std::span<const float> w, std::int64_t cols, std::int64_t r, std::int64_t c) {
  return w[static_cast<std::size_t>(r * cols + c)];
}

// The rows x cols row-major matrix `w`, transposed.
std::vector<float> transposed(std::span<const float> w, std::int64_t rows, std::int64_t cols) {
  std::vector<float> t(w.size());
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c)
      t[static_cast<std::size_t>(c * rows + r)] = at(w, cols, r, c);
  return t;
}

// The range of one group of weights (the tensor, a channel or a block) as the rule's observer
// chooses it.
WeightRange group_range(const WeightQuantization& rule, std::span<const float> group) {
  return rule.observer == calibration::Method::mse ? mse_range(rule.dtype, rule.mapping, group)
                                                   : minmax_range(group);
}

// Each group's range for nearest rounding, in quantize_weight's order (blocks: `data` is nk).
std::vector<WeightRange> nearest_ranges(const WeightQuantization& rule, std::span<const float> data,
                                        std::int64_t k, std::int64_t n, MatrixLayout layout) {
  std::vector<WeightRange> ranges;
  switch (rule.granularity) {
    case Granularity::per_tensor: ranges.push_back(group_range(rule, data)); break;
    case Granularity::per_channel: {
      std::vector<float> channel(static_cast<std::size_t>(k));
      for (std::int64_t c = 0; c < n; ++c) {
        for (std::int64_t r = 0; r < k; ++r)
          channel[static_cast<std::size_t>(r)] =
              layout == MatrixLayout::kn ? at(data, n, r, c) : at(data, k, c, r);
        ranges.push_back(group_range(rule, channel));
      }
      break;
    }
    case Granularity::block: {
      const std::int64_t blocks = (k + rule.block_size - 1) / rule.block_size;
      for (std::int64_t row = 0; row < n; ++row)
        for (std::int64_t b = 0; b < blocks; ++b) {
          const std::int64_t begin = row * k + b * rule.block_size;
          const std::int64_t end = row * k + std::min(k, (b + 1) * rule.block_size);
          ranges.push_back(group_range(rule, data.subspan(static_cast<std::size_t>(begin),
                                                          static_cast<std::size_t>(end - begin))));
        }
      break;
    }
  }
  return ranges;
}

}  // namespace

QuantizedWeight quantize_weight(const Node& node, const WeightQuantization& rule,
                                std::span<const float> weight, std::int64_t k, std::int64_t n,
                                MatrixLayout layout, const GptqFactor* gptq) {
  std::vector<float> data(weight.begin(), weight.end());
  Scheme scheme;
  scheme.mapping = rule.mapping;
  scheme.granularity = rule.granularity;
  if (rule.granularity == Granularity::per_channel) {
    const int n_axis = layout == MatrixLayout::kn ? 1 : 0;
    if (rule.axis) {
      const int axis = *rule.axis < 0 ? *rule.axis + 2 : *rule.axis;
      if (axis != n_axis)
        throw Error(ErrorCode::unsupported,
                    node.describe() + ": per-channel weights along axis " +
                        std::to_string(*rule.axis) + " are not supported; matmul_dequant " +
                        "takes channels along the output axis N, axis " + std::to_string(n_axis) +
                        " of this weight (leave the axis unset)");
    }
    scheme.axis = n_axis;
  }
  if (rule.granularity == Granularity::block) {
    scheme.block_size = rule.block_size;
    if (layout == MatrixLayout::kn) {  // to [N, K]: blocks run along K
      data = transposed(data, k, n);
      layout = MatrixLayout::nk;
    }
  }
  std::vector<WeightRange> ranges;
  if (rule.rounding == WeightRounding::gptq) {
    if (!gptq)
      throw Error(ErrorCode::invalid_argument,
                  node.describe() +
                      ": the rule rounds its weight with gptq, which needs the Hessian of the "
                      "layer's input from calibration; none was given");
    // gptq_round works on [N, K]; the codes keep the weight's layout (blocks: nk already).
    std::vector<float> nk = layout == MatrixLayout::nk ? std::move(data) : transposed(data, k, n);
    try {
      ranges = gptq_round(rule, nk, n, k, *gptq);
    } catch (const Error& e) {
      throw Error(e.code(), node.describe() + ": " + e.what());
    }
    data = layout == MatrixLayout::nk ? std::move(nk) : transposed(nk, n, k);
  } else {
    ranges = nearest_ranges(rule, data, k, n, layout);
  }
  std::vector<float> lo, hi;
  for (const WeightRange& r : ranges) {
    lo.push_back(r.lo);
    hi.push_back(r.hi);
  }
  QuantizationParams params =
      rule.granularity == Granularity::per_tensor
          ? reference::params_from_range(rule.dtype, rule.mapping, lo[0], hi[0])
          : reference::params_from_ranges(rule.dtype, scheme, lo, hi);
  const Shape shape = layout == MatrixLayout::kn ? Shape{k, n} : Shape{n, k};
  std::vector<std::byte> codes(storage_bytes(rule.dtype, data.size()));
  quantize_codes(shape, params, data, codes);
  return {layout, std::move(params), std::move(codes)};
}

std::size_t quantized_bytes(const QuantizedWeight& w) {
  const std::size_t zero_points =
      w.params.scheme().mapping == Mapping::affine ? w.params.count() : 0;
  return w.codes.size() + 4 * (w.params.count() + zero_points);
}

}  // namespace qforge::model::quantize
