#include "vector_loops.h"

#include "rounding.h"

// AVX2 and the x86-64 baseline; other architectures build the plain loop once.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define QFORGE_ONEDNN_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define QFORGE_ONEDNN_CLONES
#endif

namespace qforge::onednn {

QFORGE_ONEDNN_CLONES
void quantize_f32_s8(const float* __restrict x, std::int8_t* __restrict q, std::int64_t n, float s,
                     std::int32_t z, std::int32_t qmin, std::int32_t qmax) noexcept {
  for (std::int64_t i = 0; i < n; ++i)
    q[i] = static_cast<std::int8_t>(quantize_linear(x[i], s, z, qmin, qmax));
}

QFORGE_ONEDNN_CLONES
void quantize_f32_u8(const float* __restrict x, std::uint8_t* __restrict q, std::int64_t n, float s,
                     std::int32_t z, std::int32_t qmin, std::int32_t qmax) noexcept {
  for (std::int64_t i = 0; i < n; ++i)
    q[i] = static_cast<std::uint8_t>(quantize_linear(x[i], s, z, qmin, qmax));
}

QFORGE_ONEDNN_CLONES
void dequantize_s8_f32(const std::int8_t* __restrict q, float* __restrict x, std::int64_t n,
                       float s, std::int32_t z) noexcept {
  for (std::int64_t i = 0; i < n; ++i) x[i] = dequantize_linear(q[i], s, z);
}

QFORGE_ONEDNN_CLONES
void dequantize_u8_f32(const std::uint8_t* __restrict q, float* __restrict x, std::int64_t n,
                       float s, std::int32_t z) noexcept {
  for (std::int64_t i = 0; i < n; ++i) x[i] = dequantize_linear(q[i], s, z);
}

QFORGE_ONEDNN_CLONES
void requantize_s8(const std::int32_t* __restrict c, const float* __restrict m,
                   std::int8_t* __restrict y, std::int64_t n, std::int32_t z, std::int32_t qmin,
                   std::int32_t qmax) noexcept {
  for (std::int64_t i = 0; i < n; ++i)
    y[i] = static_cast<std::int8_t>(requantize_float(c[i], m[i], z, qmin, qmax));
}

QFORGE_ONEDNN_CLONES
void requantize_u8(const std::int32_t* __restrict c, const float* __restrict m,
                   std::uint8_t* __restrict y, std::int64_t n, std::int32_t z, std::int32_t qmin,
                   std::int32_t qmax) noexcept {
  for (std::int64_t i = 0; i < n; ++i)
    y[i] = static_cast<std::uint8_t>(requantize_float(c[i], m[i], z, qmin, qmax));
}

QFORGE_ONEDNN_CLONES
void requantize_s8(const std::int32_t* __restrict c, float m, std::int8_t* __restrict y,
                   std::int64_t n, std::int32_t z, std::int32_t qmin, std::int32_t qmax) noexcept {
  for (std::int64_t i = 0; i < n; ++i)
    y[i] = static_cast<std::int8_t>(requantize_float(c[i], m, z, qmin, qmax));
}

QFORGE_ONEDNN_CLONES
void requantize_u8(const std::int32_t* __restrict c, float m, std::uint8_t* __restrict y,
                   std::int64_t n, std::int32_t z, std::int32_t qmin, std::int32_t qmax) noexcept {
  for (std::int64_t i = 0; i < n; ++i)
    y[i] = static_cast<std::uint8_t>(requantize_float(c[i], m, z, qmin, qmax));
}

}  // namespace qforge::onednn
