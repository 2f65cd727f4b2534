#include "weights.h"

#include <algorithm>

#include "qforge/dtype.h"
#include "qforge/error.h"
#include "qforge/model/weight_range.h"
#include "qforge/reference.h"

namespace qforge::model::quantize {
namespace {

// Element (row r, column c) of a row-major matrix with `cols` columns.
float at(std::span<const float> w, std::int64_t cols, std::int64_t r, std::int64_t c) {
  return w[static_cast<std::size_t>(r * cols + c)];
}

// The range of one group of weights (the tensor, a channel or a block) as the rule's observer
// chooses it.
WeightRange group_range(const WeightQuantization& rule, std::span<const float> group) {
  return rule.observer == calibration::Method::mse ? mse_range(rule.dtype, rule.mapping, group)
                                                   : minmax_range(group);
}

}  // namespace

QuantizedWeight quantize_weight(const Node& node, const WeightQuantization& rule,
                                std::span<const float> weight, std::int64_t k, std::int64_t n,
                                MatrixLayout layout) {
  std::vector<float> data(weight.begin(), weight.end());
  std::vector<float> lo, hi;
  Scheme scheme;
  scheme.mapping = rule.mapping;
  scheme.granularity = rule.granularity;
  switch (rule.granularity) {
    case Granularity::per_tensor: {
      const WeightRange r = group_range(rule, data);
      lo = {r.lo};
      hi = {r.hi};
      break;
    }
    case Granularity::per_channel: {
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
      std::vector<float> channel(static_cast<std::size_t>(k));
      for (std::int64_t c = 0; c < n; ++c) {
        for (std::int64_t r = 0; r < k; ++r)
          channel[static_cast<std::size_t>(r)] =
              layout == MatrixLayout::kn ? at(data, n, r, c) : at(data, k, c, r);
        const WeightRange range = group_range(rule, channel);
        lo.push_back(range.lo);
        hi.push_back(range.hi);
      }
      break;
    }
    case Granularity::block: {
      if (layout == MatrixLayout::kn) {  // to [N, K]: blocks run along K
        std::vector<float> t(data.size());
        for (std::int64_t r = 0; r < k; ++r)
          for (std::int64_t c = 0; c < n; ++c)
            t[static_cast<std::size_t>(c * k + r)] = at(data, n, r, c);
        data = std::move(t);
        layout = MatrixLayout::nk;
      }
      scheme.block_size = rule.block_size;
      const std::int64_t blocks = (k + rule.block_size - 1) / rule.block_size;
      for (std::int64_t row = 0; row < n; ++row)
        for (std::int64_t b = 0; b < blocks; ++b) {
          const std::int64_t begin = row * k + b * rule.block_size;
          const std::int64_t end = row * k + std::min(k, (b + 1) * rule.block_size);
          const WeightRange range = group_range(
              rule, std::span<const float>(data).subspan(static_cast<std::size_t>(begin),
                                                         static_cast<std::size_t>(end - begin)));
          lo.push_back(range.lo);
          hi.push_back(range.hi);
        }
      break;
    }
  }
  QuantizationParams params =
      rule.granularity == Granularity::per_tensor
          ? reference::params_from_range(rule.dtype, rule.mapping, lo[0], hi[0])
          : reference::params_from_ranges(rule.dtype, scheme, lo, hi);
  const Shape shape = layout == MatrixLayout::kn ? Shape{k, n} : Shape{n, k};
  std::vector<std::byte> codes(storage_bytes(rule.dtype, data.size()));
  reference::quantize(QuantizeDesc{shape, params}, data.data(), codes.data());
  return {layout, std::move(params), std::move(codes)};
}

std::size_t quantized_bytes(const QuantizedWeight& w) {
  const std::size_t zero_points =
      w.params.scheme().mapping == Mapping::affine ? w.params.count() : 0;
  return w.codes.size() + 4 * (w.params.count() + zero_points);
}

}  // namespace qforge::model::quantize
