// float16 and bfloat16 storage types with exact conversions (round to nearest even when
// narrowing; widening is exact). Plain code: the reference path, not a fast path.
#pragma once

#include <cstdint>

#include "qforge/export.h"

namespace qforge {

struct Float16 {
  std::uint16_t bits = 0;
};
struct BFloat16 {
  std::uint16_t bits = 0;
};

QFORGE_API float to_float(Float16 h) noexcept;
QFORGE_API float to_float(BFloat16 h) noexcept;
QFORGE_API Float16 to_float16(float f) noexcept;    // NaN stays NaN, overflow gives inf
QFORGE_API BFloat16 to_bfloat16(float f) noexcept;  // NaN stays NaN

// Element types of non-quantized tensors that ops read or write.
enum class FloatType : std::uint8_t { f32, f16, bf16 };
constexpr int size_of(FloatType t) { return t == FloatType::f32 ? 4 : 2; }
constexpr const char* name(FloatType t) {
  return t == FloatType::f32 ? "float32" : t == FloatType::f16 ? "float16" : "bfloat16";
}
// Reads element i of a float32/float16/bfloat16 array as float; writes with round to nearest even.
QFORGE_API float load_float(FloatType t, const void* data, std::size_t i) noexcept;
QFORGE_API void store_float(FloatType t, void* data, std::size_t i, float v) noexcept;

}  // namespace qforge
