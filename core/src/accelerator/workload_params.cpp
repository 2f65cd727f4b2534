// Representative params for workloads (accelerator.h): used by suites and workload files,
// where only dtypes, schemes and shapes matter.
#include <algorithm>

#include "qforge/accelerator.h"
#include "qforge/error.h"

namespace qforge {
namespace {

std::size_t pairs_for(const Scheme& scheme, const Shape& shape) {
  if (scheme.granularity == Granularity::per_tensor) return 1;
  if (scheme.granularity == Granularity::per_channel) {
    const int rank = static_cast<int>(shape.size());
    const int axis = scheme.axis < 0 ? scheme.axis + rank : scheme.axis;
    if (axis < 0 || axis >= rank)
      throw Error(ErrorCode::invalid_argument,
                  "workload_params: per-channel axis " + std::to_string(scheme.axis) +
                      " for a tensor of rank " + std::to_string(rank) + "; expected an axis in [" +
                      std::to_string(-rank) + ", " + std::to_string(rank - 1) + "]");
    return static_cast<std::size_t>(std::max<std::int64_t>(shape[axis], 1));
  }
  std::int64_t outer = 1;
  for (std::size_t i = 0; i + 1 < shape.size(); ++i) outer *= shape[i];
  const std::int64_t last = shape.empty() ? 1 : shape.back();
  const std::int64_t b = std::max<std::int64_t>(scheme.block_size, 1);
  return static_cast<std::size_t>(std::max<std::int64_t>(outer * ((last + b - 1) / b), 1));
}

}  // namespace

QuantizationParams workload_params(DType dtype, const Scheme& scheme, const Shape& shape) {
  const std::size_t n = pairs_for(scheme, shape);
  std::vector<std::int32_t> zps;
  if (scheme.mapping == Mapping::affine)
    zps.assign(n, (traits(dtype).qmin + traits(dtype).qmax + 1) / 2);
  return QuantizationParams(dtype, scheme, std::vector<float>(n, 1.0f / 64), std::move(zps));
}

}  // namespace qforge
