// The plugin's hot elementwise loops over 8-bit codes, each compiled twice (GCC target_clones:
// an AVX2 version and a baseline x86-64 one, chosen once at load time through an ifunc), so
// that a binary built without -march runs 8-wide where the CPU can. Both versions compute the
// rounding.h formulas: the same bits as the reference whatever the ISA.
#pragma once

#include <cstdint>

namespace qforge::onednn {

// q[i] = sat(rne(x[i] / s) + z) to [qmin, qmax]
void quantize_f32_s8(const float* x, std::int8_t* q, std::int64_t n, float s, std::int32_t z,
                     std::int32_t qmin, std::int32_t qmax) noexcept;
void quantize_f32_u8(const float* x, std::uint8_t* q, std::int64_t n, float s, std::int32_t z,
                     std::int32_t qmin, std::int32_t qmax) noexcept;
// x[i] = float(q[i] - z) * s
void dequantize_s8_f32(const std::int8_t* q, float* x, std::int64_t n, float s,
                       std::int32_t z) noexcept;
void dequantize_u8_f32(const std::uint8_t* q, float* x, std::int64_t n, float s,
                       std::int32_t z) noexcept;
// y[i] = sat(rne(float(c[i]) * m[i]) + z), one multiplier per element
void requantize_s8(const std::int32_t* c, const float* m, std::int8_t* y, std::int64_t n,
                   std::int32_t z, std::int32_t qmin, std::int32_t qmax) noexcept;
void requantize_u8(const std::int32_t* c, const float* m, std::uint8_t* y, std::int64_t n,
                   std::int32_t z, std::int32_t qmin, std::int32_t qmax) noexcept;
// the same with one multiplier for all
void requantize_s8(const std::int32_t* c, float m, std::int8_t* y, std::int64_t n, std::int32_t z,
                   std::int32_t qmin, std::int32_t qmax) noexcept;
void requantize_u8(const std::int32_t* c, float m, std::uint8_t* y, std::int64_t n, std::int32_t z,
                   std::int32_t qmin, std::int32_t qmax) noexcept;

}  // namespace qforge::onednn
