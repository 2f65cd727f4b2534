#include "qforge/params.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <sstream>
#include <utility>

#include "qforge/checked_size.h"
#include "qforge/error.h"

namespace qforge {
namespace {

[[noreturn]] void invalid(const std::string& what) {
  throw Error(ErrorCode::invalid_argument, "QuantizationParams: " + what);
}

std::string float_text(float v) {
  std::ostringstream os;
  os.precision(9);
  os << v;
  return os.str();
}

// The zero point a mapping fixes, or nullopt when any in-range value is allowed.
std::optional<std::int32_t> fixed_zero_point(DType dtype, Mapping mapping) {
  switch (mapping) {
    case Mapping::affine: return std::nullopt;
    case Mapping::symmetric: return symmetric_zero_point(dtype);
    case Mapping::logarithmic: return 0;
  }
  return std::nullopt;
}

}  // namespace

QuantizationParams::QuantizationParams(DType dtype, Scheme scheme, std::vector<float> scales,
                                       std::vector<std::int32_t> zero_points)
    : dtype_(dtype),
      scheme_(scheme),
      scales_(std::move(scales)),
      zero_points_(std::move(zero_points)) {
  const auto& tr = traits(dtype_);
  if (dtype_ == DType::binary && scheme_.mapping != Mapping::symmetric)
    invalid("binary with the " + std::string(qforge::to_string(scheme_.mapping)) +
            " mapping; expected symmetric (binary values are -1 and +1 with zero point 0)");
  if (scheme_.granularity == Granularity::per_tensor && scales_.size() != 1)
    invalid("per_tensor scheme with " + std::to_string(scales_.size()) +
            " scales; expected exactly 1");
  if (scheme_.granularity != Granularity::per_tensor && scales_.empty())
    invalid(std::string(qforge::to_string(scheme_.granularity)) +
            " scheme with 0 scales; expected at least 1 (per_tensor params describe an empty "
            "tensor)");
  // The upper bound keeps (extent + block_size - 1) exact in int64 (checked_size.h).
  if (scheme_.granularity == Granularity::block &&
      (scheme_.block_size <= 0 || scheme_.block_size > kMaxSize))
    invalid("block_size = " + std::to_string(scheme_.block_size) +
            "; expected 1 to 2^48 = " + std::to_string(kMaxSize));
  for (std::size_t i = 0; i < scales_.size(); ++i)
    if (!std::isfinite(scales_[i]) || !(scales_[i] > 0.0f))
      invalid("scale[" + std::to_string(i) + "] = " + float_text(scales_[i]) +
              "; expected a finite value > 0");

  const auto fixed = fixed_zero_point(dtype_, scheme_.mapping);
  if (zero_points_.empty()) zero_points_.assign(scales_.size(), fixed.value_or(0));
  if (zero_points_.size() != scales_.size())
    invalid(std::to_string(zero_points_.size()) + " zero points for " +
            std::to_string(scales_.size()) + " scales; expected one per scale");
  for (std::size_t i = 0; i < zero_points_.size(); ++i) {
    const auto z = zero_points_[i];
    if (fixed && z != *fixed)
      invalid("zero_point[" + std::to_string(i) + "] = " + std::to_string(z) + " with the " +
              std::string(qforge::to_string(scheme_.mapping)) + " mapping on " +
              std::string(tr.name) + "; expected " + std::to_string(*fixed));
    if (z < tr.qmin || z > tr.qmax)
      invalid("zero_point[" + std::to_string(i) + "] = " + std::to_string(z) +
              "; expected a value in the " + std::string(tr.name) + " range [" +
              std::to_string(tr.qmin) + ", " + std::to_string(tr.qmax) + "]");
  }
  if (!zero_points_.empty()) {
    const auto [lo, hi] = std::minmax_element(zero_points_.begin(), zero_points_.end());
    zero_point_min_ = *lo;
    zero_point_max_ = *hi;
  }
  static std::atomic<std::uint64_t> next_identity{1};
  identity_ = next_identity.fetch_add(1, std::memory_order_relaxed);
}

QuantizationParams::QuantizationParams(QuantizationParams&& other) noexcept
    : dtype_(other.dtype_),
      scheme_(other.scheme_),
      scales_(std::move(other.scales_)),
      zero_points_(std::move(other.zero_points_)),
      zero_point_min_(other.zero_point_min_),
      zero_point_max_(other.zero_point_max_),
      identity_(std::exchange(other.identity_, 0)) {
  other.scales_.clear();
  other.zero_points_.clear();
  other.zero_point_min_ = other.zero_point_max_ = 0;
}

QuantizationParams& QuantizationParams::operator=(QuantizationParams&& other) noexcept {
  if (this == &other) return *this;
  dtype_ = other.dtype_;
  scheme_ = other.scheme_;
  scales_ = std::move(other.scales_);
  zero_points_ = std::move(other.zero_points_);
  zero_point_min_ = other.zero_point_min_;
  zero_point_max_ = other.zero_point_max_;
  identity_ = std::exchange(other.identity_, 0);
  other.scales_.clear();
  other.zero_points_.clear();
  other.zero_point_min_ = other.zero_point_max_ = 0;
  return *this;
}

bool operator==(const QuantizationParams& x, const QuantizationParams& y) {
  if (x.identity_ != 0 && x.identity_ == y.identity_) return true;
  return x.dtype_ == y.dtype_ && x.scheme_ == y.scheme_ && x.scales_ == y.scales_ &&
         x.zero_points_ == y.zero_points_;
}

QuantizationParams QuantizationParams::per_tensor_affine(DType dtype, float scale,
                                                         std::int32_t zero_point) {
  return {dtype, Scheme::per_tensor_affine(), {scale}, {zero_point}};
}

QuantizationParams QuantizationParams::per_tensor_symmetric(DType dtype, float scale) {
  return {dtype, Scheme::per_tensor_symmetric(), {scale}};
}

QuantizationParams QuantizationParams::per_channel(DType dtype, Mapping mapping, int axis,
                                                   std::vector<float> scales,
                                                   std::vector<std::int32_t> zero_points) {
  return {dtype, Scheme{mapping, Granularity::per_channel, axis}, std::move(scales),
          std::move(zero_points)};
}

QuantizationParams QuantizationParams::blockwise(DType dtype, Mapping mapping,
                                                 std::int64_t block_size, std::vector<float> scales,
                                                 std::vector<std::int32_t> zero_points) {
  return {dtype, Scheme{mapping, Granularity::block, 0, block_size}, std::move(scales),
          std::move(zero_points)};
}

QuantizationParams QuantizationParams::logarithmic(DType dtype, float scale) {
  return {dtype, Scheme::logarithmic(), {scale}};
}

std::int32_t QuantizationParams::qmin() const noexcept {
  const auto& tr = traits(dtype_);
  switch (scheme_.mapping) {
    case Mapping::affine: return tr.qmin;
    case Mapping::symmetric: return tr.narrow_qmin;
    case Mapping::logarithmic: return tr.is_signed ? -tr.qmax : 0;
  }
  return tr.qmin;
}

std::int32_t QuantizationParams::qmax() const noexcept {
  const auto& tr = traits(dtype_);
  return scheme_.mapping == Mapping::symmetric ? tr.narrow_qmax : tr.qmax;
}

int QuantizationParams::channel_axis(std::size_t rank) const {
  const int r = static_cast<int>(rank);
  const int axis = scheme_.axis < 0 ? scheme_.axis + r : scheme_.axis;
  if (axis < 0 || axis >= r)
    throw Error(ErrorCode::shape_mismatch,
                "QuantizationParams: per_channel axis " + std::to_string(scheme_.axis) +
                    " for a tensor of rank " + std::to_string(rank) + "; expected an axis in [" +
                    std::to_string(-r) + ", " + std::to_string(r - 1) + "]");
  return axis;
}

void QuantizationParams::validate_for(const Shape& shape) const {
  const std::int64_t numel = element_count(shape);
  std::int64_t expected = 1;
  std::string what;
  switch (scheme_.granularity) {
    case Granularity::per_tensor: return;
    case Granularity::per_channel: {
      const int axis = channel_axis(shape.size());
      expected = shape[static_cast<std::size_t>(axis)];
      what = "channels along axis " + std::to_string(axis);
      break;
    }
    case Granularity::block: {
      if (shape.empty())
        throw Error(ErrorCode::shape_mismatch,
                    "QuantizationParams: block scheme on a rank-0 tensor; expected rank >= 1 "
                    "(blocks run along the last axis)");
      const std::int64_t last = shape.back();
      const std::int64_t rows = last == 0 ? 0 : numel / last;
      const std::int64_t blocks = (last + scheme_.block_size - 1) / scheme_.block_size;
      expected = rows * blocks;
      what = std::to_string(rows) + " rows x " + std::to_string(blocks) + " blocks of " +
             std::to_string(scheme_.block_size) + " along the last axis";
      break;
    }
  }
  if (expected == 0)
    throw Error(ErrorCode::shape_mismatch,
                "QuantizationParams: " + qforge::to_string(scheme_) + " for shape " +
                    qforge::to_string(shape) + " would need 0 pairs (" + what +
                    "); expected per_tensor params for such an empty tensor (per-channel and "
                    "block params carry at least one pair)");
  if (static_cast<std::int64_t>(scales_.size()) != expected)
    throw Error(ErrorCode::shape_mismatch,
                "QuantizationParams: " + std::to_string(scales_.size()) + " scales for shape " +
                    qforge::to_string(shape) + " with " + qforge::to_string(scheme_) +
                    "; expected " + std::to_string(expected) + " (" + what + ")");
}

std::size_t QuantizationParams::param_index(const Shape& shape, std::int64_t flat_index) const {
  switch (scheme_.granularity) {
    case Granularity::per_tensor: return 0;
    case Granularity::per_channel: {
      const auto axis = static_cast<std::size_t>(channel_axis(shape.size()));
      std::int64_t stride = 1;
      for (std::size_t i = axis + 1; i < shape.size(); ++i) stride *= shape[i];
      return static_cast<std::size_t>((flat_index / stride) % shape[axis]);
    }
    case Granularity::block: {
      const std::int64_t last = shape.back();
      const std::int64_t blocks = (last + scheme_.block_size - 1) / scheme_.block_size;
      return static_cast<std::size_t>((flat_index / last) * blocks +
                                      (flat_index % last) / scheme_.block_size);
    }
  }
  return 0;
}

std::string QuantizationParams::to_string() const {
  std::string s = std::string(name(dtype_)) + " " + qforge::to_string(scheme_) + " scale=";
  if (scales_.size() == 1)
    s += float_text(scales_[0]) + " zero_point=" + std::to_string(zero_points_[0]);
  else s += "[" + std::to_string(scales_.size()) + " values]";
  return s;
}

}  // namespace qforge
