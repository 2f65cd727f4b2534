// Quantized element types and their traits table.
//
// Storage: 8- and 16-bit types are one element per byte / per two bytes (little endian).
// int4/uint4 pack two elements per byte, element 2i in the low nibble and 2i+1 in the high
// nibble (ONNX). binary packs eight per byte, element i in bit i%8 of byte i/8; bit 1 means
// +1 and bit 0 means -1. Padding bits of a last partial byte are zero.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "qforge/export.h"

namespace qforge {

enum class DType : std::uint8_t { int8, uint8, int16, uint16, int4, uint4, binary };

inline constexpr std::size_t kDTypeCount = 7;

struct DTypeTraits {
  DType dtype;
  std::string_view name;
  int bits;           // bits per element in storage
  bool is_signed;     // values below zero are representable
  std::int32_t qmin;  // full range
  std::int32_t qmax;
  std::int32_t narrow_qmin;  // range used by symmetric schemes (-qmax for signed types)
  std::int32_t narrow_qmax;
  int elements_per_byte;  // 0 for types wider than a byte
};

inline constexpr std::array<DTypeTraits, kDTypeCount> kDTypeTraits = {{
    {DType::int8, "int8", 8, true, -128, 127, -127, 127, 1},
    {DType::uint8, "uint8", 8, false, 0, 255, 1, 255, 1},
    {DType::int16, "int16", 16, true, -32768, 32767, -32767, 32767, 0},
    {DType::uint16, "uint16", 16, false, 0, 65535, 1, 65535, 0},
    {DType::int4, "int4", 4, true, -8, 7, -7, 7, 2},
    {DType::uint4, "uint4", 4, false, 0, 15, 1, 15, 2},
    {DType::binary, "binary", 1, true, -1, 1, -1, 1, 8},
}};

// The table is indexed by the enumerator; this keeps the two in step.
constexpr bool dtype_table_in_order() {
  for (std::size_t i = 0; i < kDTypeTraits.size(); ++i)
    if (static_cast<std::size_t>(kDTypeTraits[i].dtype) != i) return false;
  return true;
}
static_assert(dtype_table_in_order(), "kDTypeTraits must list dtypes in enumerator order");
static_assert(kDTypeTraits[0].qmax - kDTypeTraits[0].qmin == 255);
static_assert(kDTypeTraits[4].qmax - kDTypeTraits[4].qmin == 15);
// Symmetric unsigned types are centred on the midpoint: uint8 128 +/- 127.
static_assert((kDTypeTraits[1].narrow_qmin + kDTypeTraits[1].narrow_qmax) / 2 == 128);

constexpr const DTypeTraits& traits(DType t) { return kDTypeTraits[static_cast<std::size_t>(t)]; }
constexpr std::string_view name(DType t) { return traits(t).name; }

// Bytes needed to store n packed elements.
constexpr std::size_t storage_bytes(DType t, std::size_t n) {
  const auto& tr = traits(t);
  if (tr.bits >= 8) return n * static_cast<std::size_t>(tr.bits / 8);
  return (n + static_cast<std::size_t>(tr.elements_per_byte) - 1) /
         static_cast<std::size_t>(tr.elements_per_byte);
}
static_assert(storage_bytes(DType::int4, 3) == 2);
static_assert(storage_bytes(DType::binary, 9) == 2);
static_assert(storage_bytes(DType::int16, 3) == 6);

// The zero point that symmetric schemes use: 0 for signed types, the midpoint for unsigned ones
// (uint8 128, uint4 8, uint16 32768), so +/-max maps to the ends of the narrow range.
constexpr std::int32_t symmetric_zero_point(DType t) {
  const auto& tr = traits(t);
  return tr.is_signed ? 0 : (tr.narrow_qmin + tr.narrow_qmax) / 2;
}

// Parses "int8", "uint4", ... ; nullopt for anything else.
QFORGE_API std::optional<DType> parse_dtype(std::string_view text) noexcept;

// Element access on packed storage (plain, for the reference and tests).
QFORGE_API std::int32_t load_element(DType t, const void* data, std::size_t i) noexcept;
// Stores v (already inside the dtype's range) at element i. For binary, v >= 0 stores bit 1.
QFORGE_API void store_element(DType t, void* data, std::size_t i, std::int32_t v) noexcept;

}  // namespace qforge
