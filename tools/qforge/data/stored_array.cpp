#include "stored_array.h"

#include "qforge/error.h"

namespace qforge::cli {

void check_stored_array(StoredArray& a, const DataLimits& limits, std::string_view source) {
  const std::string where(source);
  if (a.shape.size() > limits.max_rank)
    throw Error(ErrorCode::corrupt_data, where + ": the header declares rank " +
                                             std::to_string(a.shape.size()) + " " +
                                             to_string(a.shape) + "; at most " +
                                             std::to_string(limits.max_rank) + " is accepted");
  for (std::int64_t d : a.shape)
    if (d < 0)
      throw Error(ErrorCode::corrupt_data,
                  where + ": the header declares a negative extent in " + to_string(a.shape));
  const Shape sample(a.shape.empty() ? a.shape.begin() : a.shape.begin() + 1, a.shape.end());
  model::checked_tensor_bytes(a.type, sample, where + ": one sample", limits.max_sample_bytes);
  a.data_bytes =
      model::checked_tensor_bytes(a.type, a.shape, where + ": the array", limits.max_total_bytes);
}

std::int64_t row_elements(const StoredArray& a) {
  std::int64_t n = 1;
  for (std::size_t i = 1; i < a.shape.size(); ++i) n *= a.shape[i];
  return n;
}

}  // namespace qforge::cli
