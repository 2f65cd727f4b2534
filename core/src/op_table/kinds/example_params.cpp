#include "op_table/kinds/example_params.h"

#include <vector>

namespace qforge::op_table_detail {
namespace {

constexpr float kScale = 0.05f;

}  // namespace

std::string dtype_short(DType t) {
  switch (t) {
    case DType::int8: return "s8";
    case DType::uint8: return "u8";
    case DType::int4: return "s4";
    case DType::uint4: return "u4";
    case DType::int16: return "s16";
    case DType::uint16: return "u16";
    case DType::binary: return "b1";
  }
  return "?";
}

QuantizationParams example_params(DType t, Granularity g, std::int64_t rows, std::int64_t cols,
                                  int channel_axis) {
  const bool sym = traits(t).is_signed;
  const Mapping mapping = sym ? Mapping::symmetric : Mapping::affine;
  const std::int32_t zp = sym ? 0 : (traits(t).qmin + traits(t).qmax + 1) / 2;
  switch (g) {
    case Granularity::per_tensor:
      return sym ? QuantizationParams::per_tensor_symmetric(t, kScale)
                 : QuantizationParams::per_tensor_affine(t, kScale, zp);
    case Granularity::per_channel: {
      const auto n = static_cast<std::size_t>(channel_axis == 0 ? rows : cols);
      return QuantizationParams::per_channel(
          t, mapping, channel_axis, std::vector<float>(n, kScale),
          sym ? std::vector<std::int32_t>{} : std::vector<std::int32_t>(n, zp));
    }
    case Granularity::block: {
      const auto n =
          static_cast<std::size_t>(rows * ((cols + kDefaultBlockSize - 1) / kDefaultBlockSize));
      return QuantizationParams::blockwise(
          t, mapping, kDefaultBlockSize, std::vector<float>(n, kScale),
          sym ? std::vector<std::int32_t>{} : std::vector<std::int32_t>(n, zp));
    }
  }
  return QuantizationParams::per_tensor_symmetric(t, kScale);
}

}  // namespace qforge::op_table_detail
