// How real values map to quantized ones (the mapping) and how many (scale, zero point) pairs a
// tensor carries (the granularity). Any mapping combines with any granularity, and a model
// chooses dtype and scheme per tensor (mixed precision).
//
//   affine       x = (q - z) * s, z anywhere in the dtype's range.
//   symmetric    affine with z fixed at symmetric_zero_point(dtype) (0 for signed types) and
//                q limited to the narrow range, so -128 never occurs for int8.
//   logarithmic  x = sign * s * 2^(-k); see docs/NUMERICS.md for the exact encoding.
//
//   per_tensor   one pair.
//   per_channel  one pair per index along `axis`.
//   block        blocks of `block_size` consecutive elements along the last axis, one pair per
//                block; a last partial block is allowed (the axis is padded, not required to be
//                a multiple). Scales are stored row-major as [rows, ceil(last_dim / block)].
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "qforge/export.h"

namespace qforge {

enum class Mapping : std::uint8_t { affine, symmetric, logarithmic };
enum class Granularity : std::uint8_t { per_tensor, per_channel, block };

inline constexpr std::int64_t kDefaultBlockSize = 32;  // ggml Q8_0 / Q4_0

struct Scheme {
  Mapping mapping = Mapping::affine;
  Granularity granularity = Granularity::per_tensor;
  int axis = 0;                                 // per_channel only; negative counts from the end
  std::int64_t block_size = kDefaultBlockSize;  // block only

  static Scheme per_tensor_affine() { return {Mapping::affine, Granularity::per_tensor}; }
  static Scheme per_tensor_symmetric() { return {Mapping::symmetric, Granularity::per_tensor}; }
  static Scheme per_channel_affine(int axis) {
    return {Mapping::affine, Granularity::per_channel, axis};
  }
  static Scheme per_channel_symmetric(int axis) {
    return {Mapping::symmetric, Granularity::per_channel, axis};
  }
  static Scheme block_affine(std::int64_t block = kDefaultBlockSize) {
    return {Mapping::affine, Granularity::block, 0, block};
  }
  static Scheme block_symmetric(std::int64_t block = kDefaultBlockSize) {
    return {Mapping::symmetric, Granularity::block, 0, block};
  }
  static Scheme logarithmic() { return {Mapping::logarithmic, Granularity::per_tensor}; }

  friend bool operator==(const Scheme&, const Scheme&) = default;
};

QFORGE_API std::string_view to_string(Mapping m) noexcept;
QFORGE_API std::string_view to_string(Granularity g) noexcept;
// "per_channel_symmetric(axis=1)", "block_affine(32)", "per_tensor_logarithmic"
QFORGE_API std::string to_string(const Scheme& s);
QFORGE_API std::optional<Mapping> parse_mapping(std::string_view text) noexcept;
QFORGE_API std::optional<Granularity> parse_granularity(std::string_view text) noexcept;

}  // namespace qforge
