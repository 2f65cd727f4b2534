// Validated quantization parameters.
//
// A QuantizationParams is valid on its own once constructed: every scale is finite and > 0,
// every zero point lies inside the dtype's range, symmetric and logarithmic mappings carry their
// fixed zero point, binary is only used symmetrically, per-channel and block schemes carry at
// least one pair. Whether the counts fit a particular tensor is checked by validate_for(shape),
// which QuantizedTensor and every op call. Violations throw qforge::Error naming the field, the
// value and what was expected.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "qforge/dtype.h"
#include "qforge/export.h"
#include "qforge/scheme.h"
#include "qforge/shape.h"

namespace qforge {

class QFORGE_API QuantizationParams {
 public:
  // General constructor: scales and zero_points have one entry per (channel | block), or one
  // for per-tensor. An empty zero_points means "the scheme's fixed zero point" (symmetric,
  // logarithmic) or 0 (affine).
  QuantizationParams(DType dtype, Scheme scheme, std::vector<float> scales,
                     std::vector<std::int32_t> zero_points = {});

  static QuantizationParams per_tensor_affine(DType dtype, float scale, std::int32_t zero_point);
  static QuantizationParams per_tensor_symmetric(DType dtype, float scale);
  static QuantizationParams per_channel(DType dtype, Mapping mapping, int axis,
                                        std::vector<float> scales,
                                        std::vector<std::int32_t> zero_points = {});
  static QuantizationParams blockwise(DType dtype, Mapping mapping, std::int64_t block_size,
                                      std::vector<float> scales,
                                      std::vector<std::int32_t> zero_points = {});
  static QuantizationParams logarithmic(DType dtype, float scale);

  // Copies share the identity of their source (same contents); a moved-from object loses it.
  QuantizationParams(const QuantizationParams&) = default;
  QuantizationParams& operator=(const QuantizationParams&) = default;
  QuantizationParams(QuantizationParams&& other) noexcept;
  QuantizationParams& operator=(QuantizationParams&& other) noexcept;

  DType dtype() const noexcept { return dtype_; }
  const Scheme& scheme() const noexcept { return scheme_; }
  std::span<const float> scales() const noexcept { return scales_; }
  std::span<const std::int32_t> zero_points() const noexcept { return zero_points_; }
  std::size_t count() const noexcept { return scales_.size(); }
  float scale(std::size_t i = 0) const { return scales_.at(i); }
  std::int32_t zero_point(std::size_t i = 0) const { return zero_points_.at(i); }
  // The smallest and largest zero point, kept at construction (the params never change, and
  // backends ask on every call: a scan of 8192 per-channel zero points cost microseconds).
  std::int32_t min_zero_point() const noexcept { return zero_point_min_; }
  std::int32_t max_zero_point() const noexcept { return zero_point_max_; }
  // Non-zero, and the same for two params only if their contents are the same: every
  // construction takes a new one, copies keep it. Lets a backend recognise the params it saw on
  // the last call (block-wise B carries N * K / block scales) without comparing the arrays.
  std::uint64_t identity() const noexcept { return identity_; }

  // The q range this mapping quantizes into: the full range for affine, the narrow range for
  // symmetric; for logarithmic the code range (see docs/NUMERICS.md).
  std::int32_t qmin() const noexcept;
  std::int32_t qmax() const noexcept;

  // Checks that the params fit a tensor of this shape: the axis exists, the number of channels
  // or blocks matches. Throws qforge::Error (shape_mismatch / invalid_argument) when not.
  void validate_for(const Shape& shape) const;
  // Normalised channel axis for a tensor of rank `rank` (per_channel only).
  int channel_axis(std::size_t rank) const;
  // Index of the (scale, zero point) pair that element `flat_index` of a tensor with this
  // shape uses. Plain and slow; for the reference and tests.
  std::size_t param_index(const Shape& shape, std::int64_t flat_index) const;

  std::string to_string() const;
  // Equal contents (dtype, scheme, scales, zero points); the identity only makes it quick.
  friend QFORGE_API bool operator==(const QuantizationParams& x, const QuantizationParams& y);

 private:
  DType dtype_;
  Scheme scheme_;
  std::vector<float> scales_;
  std::vector<std::int32_t> zero_points_;
  std::int32_t zero_point_min_ = 0, zero_point_max_ = 0;
  std::uint64_t identity_ = 0;  // 0 only in a moved-from object
};

}  // namespace qforge
