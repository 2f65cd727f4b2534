// Requantization of int32 accumulators to a narrow integer type, in ONNX's float32 mode or in
// TFLite's fixed-point mode.
#include "qforge/reference.h"
#include "reference/detail.h"

namespace qforge::reference {
namespace detail {

void require_multiplier(const std::string& op, float multiplier, const std::string& which) {
  if (!std::isfinite(multiplier) || multiplier < 0.0f)
    fail(ErrorCode::invalid_argument, op,
         which + " = " + float_text(multiplier) + "; expected a finite value >= 0");
}

std::int32_t requantize_fixed(std::int32_t c, FixedPointMultiplier m, std::int32_t zero_point,
                              std::int32_t qmin, std::int32_t qmax) noexcept {
  const std::int64_t y =
      static_cast<std::int64_t>(multiply_by_quantized_multiplier(c, m)) + zero_point;
  return saturate(y, qmin, qmax);
}

void validate_requantize(const std::string& op, const RequantizeDesc& desc) {
  checked_operand(op, "c", desc.shape, sizeof(std::int32_t));  // y takes 1 byte per element
  if (desc.out_dtype != DType::int8 && desc.out_dtype != DType::uint8)
    fail(ErrorCode::invalid_argument, op,
         "out_dtype = " + std::string(name(desc.out_dtype)) + "; expected int8 or uint8");
  const auto& tr = traits(desc.out_dtype);
  if (desc.out_zero_point < tr.qmin || desc.out_zero_point > tr.qmax)
    fail(ErrorCode::invalid_argument, op,
         "out_zero_point = " + std::to_string(desc.out_zero_point) + "; expected a value in the " +
             std::string(tr.name) + " range [" + std::to_string(tr.qmin) + ", " +
             std::to_string(tr.qmax) + "]");
  if (desc.multipliers.empty())
    fail(ErrorCode::invalid_argument, op,
         "no multipliers; expected 1 (per tensor) or one per index along axis");
  for (std::size_t i = 0; i < desc.multipliers.size(); ++i)
    require_multiplier(op, desc.multipliers[i], "multipliers[" + std::to_string(i) + "]");
  if (desc.multipliers.size() > 1) {
    const int rank = static_cast<int>(desc.shape.size());
    const int axis = desc.axis < 0 ? desc.axis + rank : desc.axis;
    if (axis < 0 || axis >= rank)
      fail(ErrorCode::shape_mismatch, op,
           "axis " + std::to_string(desc.axis) + " for shape " + to_string(desc.shape) + " with " +
               std::to_string(desc.multipliers.size()) + " multipliers; expected an axis in [" +
               std::to_string(-rank) + ", " + std::to_string(rank - 1) + "]");
    const std::int64_t extent = desc.shape[static_cast<std::size_t>(axis)];
    if (extent != static_cast<std::int64_t>(desc.multipliers.size()))
      fail(ErrorCode::shape_mismatch, op,
           std::to_string(desc.multipliers.size()) + " multipliers for shape " +
               to_string(desc.shape) + " along axis " + std::to_string(axis) + "; expected 1 or " +
               std::to_string(extent));
  }
}

}  // namespace detail

std::int32_t requantize_value(std::int32_t c, float multiplier, RequantMode mode,
                              std::int32_t zero_point, std::int32_t qmin, std::int32_t qmax) {
  detail::require_multiplier("requantize_value", multiplier, "multiplier");
  if (mode == RequantMode::fixed_point)
    return detail::requantize_fixed(c, quantize_multiplier(static_cast<double>(multiplier)),
                                    zero_point, qmin, qmax);
  // float(c) rounds for |c| > 2^24, as ONNX Runtime's requantization does.
  const float v = static_cast<float>(c) * multiplier;
  const double y = static_cast<double>(detail::round_half_even(v)) + zero_point;
  return detail::saturate(y, qmin, qmax);
}

void requantize(const RequantizeDesc& desc, const std::int32_t* c, void* y) {
  const std::string op = "requantize";
  detail::validate_requantize(op, desc);
  const std::int64_t n = element_count(desc.shape);
  const auto& tr = traits(desc.out_dtype);
  // Per-channel: the index along `axis` of element i is (i / stride) % extent.
  std::int64_t stride = 1, extent = 1;
  if (desc.multipliers.size() > 1) {
    const int rank = static_cast<int>(desc.shape.size());
    const int axis = desc.axis < 0 ? desc.axis + rank : desc.axis;
    extent = desc.shape[static_cast<std::size_t>(axis)];
    for (std::size_t d = static_cast<std::size_t>(axis) + 1; d < desc.shape.size(); ++d)
      stride *= desc.shape[d];
  }
  detail::require_data(op, "c", c, n);
  detail::require_data(op, "y", y, n);

  // Convert each multiplier once; the per-element work is then requantize_value's.
  std::vector<FixedPointMultiplier> fixed;
  if (desc.mode == RequantMode::fixed_point)
    for (const float m : desc.multipliers) fixed.push_back(quantize_multiplier(m));
  for (std::int64_t i = 0; i < n; ++i) {
    const auto ch = static_cast<std::size_t>((i / stride) % extent);
    const auto idx = static_cast<std::size_t>(i);
    std::int32_t q;
    if (desc.mode == RequantMode::fixed_point)
      q = detail::requantize_fixed(c[idx], fixed[ch], desc.out_zero_point, tr.qmin, tr.qmax);
    else
      q = requantize_value(c[idx], desc.multipliers[ch], desc.mode, desc.out_zero_point, tr.qmin,
                           tr.qmax);
    store_element(desc.out_dtype, y, idx, q);
  }
}

}  // namespace qforge::reference
