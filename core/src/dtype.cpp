#include "qforge/dtype.h"

#include <cstring>

namespace qforge {

std::optional<DType> parse_dtype(std::string_view text) noexcept {
  for (const auto& t : kDTypeTraits)
    if (t.name == text) return t.dtype;
  return std::nullopt;
}

std::int32_t load_element(DType t, const void* data, std::size_t i) noexcept {
  const auto* p = static_cast<const std::uint8_t*>(data);
  switch (t) {
    case DType::int8: return static_cast<std::int8_t>(p[i]);
    case DType::uint8: return p[i];
    case DType::int16: {
      std::int16_t v;
      std::memcpy(&v, p + 2 * i, 2);
      return v;
    }
    case DType::uint16: {
      std::uint16_t v;
      std::memcpy(&v, p + 2 * i, 2);
      return v;
    }
    case DType::int4: {
      const int nib = (i & 1) ? (p[i / 2] >> 4) : (p[i / 2] & 0xF);
      return nib >= 8 ? nib - 16 : nib;  // sign-extend the nibble
    }
    case DType::uint4: return (i & 1) ? (p[i / 2] >> 4) : (p[i / 2] & 0xF);
    case DType::binary: return ((p[i / 8] >> (i % 8)) & 1) ? 1 : -1;
  }
  return 0;
}

void store_element(DType t, void* data, std::size_t i, std::int32_t v) noexcept {
  auto* p = static_cast<std::uint8_t*>(data);
  switch (t) {
    case DType::int8:
    case DType::uint8: p[i] = static_cast<std::uint8_t>(v); return;
    case DType::int16:
    case DType::uint16: {
      const auto u = static_cast<std::uint16_t>(v);
      std::memcpy(p + 2 * i, &u, 2);
      return;
    }
    case DType::int4:
    case DType::uint4: {
      const auto nib = static_cast<std::uint8_t>(v & 0xF);
      std::uint8_t& byte = p[i / 2];
      byte = (i & 1) ? static_cast<std::uint8_t>((byte & 0x0F) | (nib << 4))
                     : static_cast<std::uint8_t>((byte & 0xF0) | nib);
      return;
    }
    case DType::binary: {
      const auto bit = static_cast<std::uint8_t>(1u << (i % 8));
      if (v >= 0) p[i / 8] |= bit;
      else p[i / 8] &= static_cast<std::uint8_t>(~bit);
      return;
    }
  }
}

}  // namespace qforge
