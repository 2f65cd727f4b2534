// AVX2 + F16C quantization kernels (compiled with -mavx2 -mfma -mf16c). See quantize_kernels.h.
//
// Everything here stays in this translation unit's anonymous namespace or carries an _avx2
// suffix: no inline function or template shared with other translation units is instantiated,
// so the linker can never pick an AVX2 copy of a common function for code that must run on a
// lesser CPU (the usual hazard of per-source ISA flags).
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "quantize_kernels.h"

namespace qforge::cpu_x86 {
namespace {

constexpr int kRound = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;

// 8 floats of any FloatKind, widened exactly to float32.
inline __m256 load8(const void* x, FloatKind kind, std::int64_t i) {
  switch (kind) {
    case FloatKind::f32: return _mm256_loadu_ps(static_cast<const float*>(x) + i);
    case FloatKind::f16:
      return _mm256_cvtph_ps(_mm_loadu_si128(
          reinterpret_cast<const __m128i*>(static_cast<const std::uint16_t*>(x) + i)));
    case FloatKind::bf16: {
      const __m128i h = _mm_loadu_si128(
          reinterpret_cast<const __m128i*>(static_cast<const std::uint16_t*>(x) + i));
      return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
    }
  }
  return _mm256_setzero_ps();
}

inline int float_bytes(FloatKind kind) { return kind == FloatKind::f32 ? 4 : 2; }

// v = x / s already computed. Returns sat(rne(v) + z) as int32 lanes, NaN -> z. Clamping before
// rounding is the same as after, because the bounds lo = qmin - z and hi = qmax - z are
// integers; max(v, lo) turns NaN into lo, and the ordered mask then turns it into 0 (-> z).
inline __m256i finish(__m256 v, __m256 lo, __m256 hi, __m256i z) {
  const __m256 ordered = _mm256_cmp_ps(v, v, _CMP_ORD_Q);
  v = _mm256_min_ps(_mm256_max_ps(v, lo), hi);
  v = _mm256_and_ps(_mm256_round_ps(v, kRound), ordered);
  return _mm256_add_epi32(_mm256_cvttps_epi32(v), z);
}

// Four vectors of in-range int32 -> 32 bytes in element order.
inline __m256i pack32(__m256i a, __m256i b, __m256i c, __m256i d, bool is_signed) {
  const __m256i ab = _mm256_packs_epi32(a, b);  // lanes: a0-3 b0-3 | a4-7 b4-7
  const __m256i cd = _mm256_packs_epi32(c, d);
  const __m256i bytes = is_signed ? _mm256_packs_epi16(ab, cd) : _mm256_packus_epi16(ab, cd);
  // bytes holds dwords a0-3 b0-3 c0-3 d0-3 a4-7 b4-7 c4-7 d4-7 (each dword 4 elements).
  return _mm256_permutevar8x32_epi32(bytes, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

struct Bounds {
  __m256 lo, hi;
  __m256i z;
};

inline Bounds bounds(std::int32_t z, QuantRange r) {
  return {_mm256_set1_ps(static_cast<float>(r.qmin - z)),
          _mm256_set1_ps(static_cast<float>(r.qmax - z)), _mm256_set1_epi32(z)};
}

// How 32 output bytes (or 8 floats) are stored by the per-tensor loops, which first peel to a
// 32-byte boundary: normal stores, or non-temporal ones.
enum class Store : std::uint8_t { normal, nt32 };

inline void store32(void* dst, __m256i v, Store how) {
  if (how == Store::nt32) _mm256_stream_si256(static_cast<__m256i*>(dst), v);
  else _mm256_storeu_si256(static_cast<__m256i*>(dst), v);
}

// Consecutive 32-byte vectors written to consecutive addresses from `dst`, for loops that cannot
// peel (blocks of 32 elements keep their slice's alignment). Streaming needs 32-byte aligned
// stores; a destination 16 bytes past a boundary (the data of a large std::vector usually is)
// still gets them: each aligned store joins the high half of one vector and the low half of
// the next, with 16-byte stores for the first and last halves. Other destinations, and
// stream == false, use normal stores. finish() writes the last half and fences.
class VectorSink {
 public:
  VectorSink(void* dst, bool stream) : p_(static_cast<unsigned char*>(dst)) {
    const auto a = reinterpret_cast<std::uintptr_t>(dst) % 32;
    mode_ = !stream   ? Mode::normal
            : a == 0  ? Mode::nt32
            : a == 16 ? Mode::nt_shifted
                      : Mode::normal;
  }
  bool streaming() const { return mode_ != Mode::normal; }
  void put(__m256i v) {
    switch (mode_) {
      case Mode::normal: _mm256_storeu_si256(reinterpret_cast<__m256i*>(p_), v); break;
      case Mode::nt32: _mm256_stream_si256(reinterpret_cast<__m256i*>(p_), v); break;
      case Mode::nt_shifted:
        if (!started_) _mm_stream_si128(reinterpret_cast<__m128i*>(p_), _mm256_castsi256_si128(v));
        else
          _mm256_stream_si256(reinterpret_cast<__m256i*>(p_ - 16),
                              _mm256_permute2x128_si256(prev_, v, 0x21));
        prev_ = v;
        started_ = true;
        break;
    }
    p_ += 32;
  }
  void finish() {
    if (mode_ == Mode::nt_shifted && started_)
      _mm_stream_si128(reinterpret_cast<__m128i*>(p_ - 16), _mm256_extracti128_si256(prev_, 1));
    if (mode_ != Mode::normal) _mm_sfence();
  }

 private:
  enum class Mode : std::uint8_t { normal, nt32, nt_shifted };
  unsigned char* p_;
  Mode mode_;
  bool started_ = false;
  __m256i prev_ = _mm256_setzero_si256();
};

// Streaming loops read far ahead with software prefetches: one core's hardware prefetchers
// alone left its read bandwidth about 25% below what it reaches with them (measured with a
// 64 MiB quantize on the development machine); 4 KiB ahead was the best of 0.25-16 KiB.
constexpr std::int64_t kPrefetchBytes = 4096;

inline void prefetch_ahead(const void* p, std::int64_t byte_offset, int lines) {
  const char* a = static_cast<const char*>(p) + byte_offset + kPrefetchBytes;
  for (int l = 0; l < lines; ++l) _mm_prefetch(a + 64 * l, _MM_HINT_T0);
}

// Quantizes 32 elements starting at x[i] into out[0..32).
inline void quantize32_same(const void* x, FloatKind kind, std::int64_t i, __m256 s,
                            const Bounds& b, bool is_signed, void* out) {
  const __m256i q0 = finish(_mm256_div_ps(load8(x, kind, i), s), b.lo, b.hi, b.z);
  const __m256i q1 = finish(_mm256_div_ps(load8(x, kind, i + 8), s), b.lo, b.hi, b.z);
  const __m256i q2 = finish(_mm256_div_ps(load8(x, kind, i + 16), s), b.lo, b.hi, b.z);
  const __m256i q3 = finish(_mm256_div_ps(load8(x, kind, i + 24), s), b.lo, b.hi, b.z);
  _mm256_storeu_si256(static_cast<__m256i*>(out), pack32(q0, q1, q2, q3, is_signed));
}

// Per-element params: eight at a time.
inline __m256i quantize8_vec(const void* x, FloatKind kind, std::int64_t i, const float* scales,
                             const std::int32_t* zps, QuantRange r) {
  const __m256i z = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(zps + i));
  const __m256 lo = _mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_set1_epi32(r.qmin), z));
  const __m256 hi = _mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_set1_epi32(r.qmax), z));
  const __m256 v = _mm256_div_ps(load8(x, kind, i), _mm256_loadu_ps(scales + i));
  return finish(v, lo, hi, z);
}

inline __m256i load8_q(const void* q, bool is_signed, std::int64_t i) {
  const __m128i b =
      _mm_loadl_epi64(reinterpret_cast<const __m128i*>(static_cast<const std::uint8_t*>(q) + i));
  return is_signed ? _mm256_cvtepi8_epi32(b) : _mm256_cvtepu8_epi32(b);
}

// The tails below run the very same vector code on a zero-padded copy of the last few
// elements, so the last partial vector is computed exactly like the others.
template <class Body>
inline void with_tail_copy(const void* src, int src_elem_bytes, std::int64_t count, void* dst,
                           int dst_elem_bytes, Body body) {
  alignas(32) unsigned char in[32 * 4] = {};
  alignas(32) unsigned char out[32 * 4] = {};
  std::memcpy(in, src, static_cast<std::size_t>(count * src_elem_bytes));
  body(static_cast<const void*>(in), static_cast<void*>(out));
  std::memcpy(dst, out, static_cast<std::size_t>(count * dst_elem_bytes));
}

}  // namespace

void quantize_run_avx2(const void* x, FloatKind kind, void* q, std::int64_t count, float scale,
                       std::int32_t zero_point, QuantRange range, bool stream) {
  const __m256 s = _mm256_set1_ps(scale);
  const Bounds b = bounds(zero_point, range);
  auto* out = static_cast<std::uint8_t*>(q);
  const int fb = float_bytes(kind);
  auto partial = [&](std::int64_t i, std::int64_t n) {  // fewer than 32 elements at i
    with_tail_copy(
        static_cast<const unsigned char*>(x) + i * fb, fb, n, out + i, 1,
        [&](const void* in, void* o) { quantize32_same(in, kind, 0, s, b, range.is_signed, o); });
  };
  std::int64_t i = 0;
  if (stream && count >= 4096) {  // short runs (blocks) are not worth the fence
    // Peel up to the first 32-byte aligned output byte, then stream whole vectors.
    const auto misalign = static_cast<std::int64_t>(reinterpret_cast<std::uintptr_t>(out) % 32);
    const std::int64_t head = std::min<std::int64_t>(count, misalign ? 32 - misalign : 0);
    if (head) partial(0, head);
    for (i = head; i + 32 <= count; i += 32) {
      prefetch_ahead(x, i * fb, fb / 2);  // 32 elements are fb / 2 cache lines
      alignas(32) unsigned char tmp[32];
      quantize32_same(x, kind, i, s, b, range.is_signed, tmp);
      _mm256_stream_si256(reinterpret_cast<__m256i*>(out + i),
                          _mm256_load_si256(reinterpret_cast<const __m256i*>(tmp)));
    }
    _mm_sfence();  // order the streamed stores before whatever signals completion
  } else {
    for (; i + 32 <= count; i += 32) quantize32_same(x, kind, i, s, b, range.is_signed, out + i);
  }
  if (i < count) partial(i, count - i);
}

void quantize_vec_avx2(const void* x, FloatKind kind, void* q, std::int64_t count,
                       const float* scales, const std::int32_t* zero_points, QuantRange range) {
  auto* out = static_cast<std::uint8_t*>(q);
  std::int64_t i = 0;
  for (; i + 32 <= count; i += 32) {
    const __m256i q0 = quantize8_vec(x, kind, i, scales, zero_points, range);
    const __m256i q1 = quantize8_vec(x, kind, i + 8, scales, zero_points, range);
    const __m256i q2 = quantize8_vec(x, kind, i + 16, scales, zero_points, range);
    const __m256i q3 = quantize8_vec(x, kind, i + 24, scales, zero_points, range);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i),
                        pack32(q0, q1, q2, q3, range.is_signed));
  }
  if (i < count) {
    // Pad the params too (scale 1, zero point 0) so the padded lanes stay harmless.
    const std::int64_t rest = count - i;
    alignas(32) float sc[32];
    alignas(32) std::int32_t zp[32];
    for (int j = 0; j < 32; ++j) {
      sc[j] = j < rest ? scales[i + j] : 1.0f;
      zp[j] = j < rest ? zero_points[i + j] : 0;
    }
    const int fb = float_bytes(kind);
    with_tail_copy(static_cast<const unsigned char*>(x) + i * fb, fb, rest, out + i, 1,
                   [&](const void* in, void* o) {
                     const __m256i q0 = quantize8_vec(in, kind, 0, sc, zp, range);
                     const __m256i q1 = quantize8_vec(in, kind, 8, sc, zp, range);
                     const __m256i q2 = quantize8_vec(in, kind, 16, sc, zp, range);
                     const __m256i q3 = quantize8_vec(in, kind, 24, sc, zp, range);
                     _mm256_storeu_si256(static_cast<__m256i*>(o),
                                         pack32(q0, q1, q2, q3, range.is_signed));
                   });
  }
}

void dequantize_run_avx2(const void* q, bool is_signed, float* x, std::int64_t count, float scale,
                         std::int32_t zero_point, bool stream) {
  const __m256 s = _mm256_set1_ps(scale);
  const __m256i z = _mm256_set1_epi32(zero_point);
  auto eight = [&](const void* in, std::int64_t i) {
    return _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(load8_q(in, is_signed, i), z)), s);
  };
  auto partial = [&](std::int64_t i, std::int64_t n) {  // fewer than 8 elements at i
    with_tail_copy(
        static_cast<const std::uint8_t*>(q) + i, 1, n, x + i, 4,
        [&](const void* in, void* o) { _mm256_storeu_ps(static_cast<float*>(o), eight(in, 0)); });
  };
  std::int64_t i = 0;
  const auto addr = reinterpret_cast<std::uintptr_t>(x);
  if (stream && addr % 4 == 0 && count >= 1024) {
    const std::int64_t head =
        std::min<std::int64_t>(count, static_cast<std::int64_t>((32 - addr % 32) % 32 / 4));
    if (head) partial(0, head);
    for (i = head; i + 8 <= count; i += 8) {
      if ((i - head) % 64 == 0) prefetch_ahead(q, i, 1);  // 64 codes per cache line
      _mm256_stream_ps(x + i, eight(q, i));
    }
    _mm_sfence();
  } else {
    for (; i + 8 <= count; i += 8) _mm256_storeu_ps(x + i, eight(q, i));
  }
  if (i < count) partial(i, count - i);
}

void dequantize_vec_avx2(const void* q, bool is_signed, float* x, std::int64_t count,
                         const float* scales, const std::int32_t* zero_points) {
  std::int64_t i = 0;
  for (; i + 8 <= count; i += 8) {
    const __m256i z = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(zero_points + i));
    const __m256i d = _mm256_sub_epi32(load8_q(q, is_signed, i), z);
    _mm256_storeu_ps(x + i, _mm256_mul_ps(_mm256_cvtepi32_ps(d), _mm256_loadu_ps(scales + i)));
  }
  // Fewer than 8 left: scalar, the same single rounding of float(q - z) * s.
  for (; i < count; ++i) {
    const std::uint8_t byte = static_cast<const std::uint8_t*>(q)[i];
    const std::int32_t v = is_signed ? static_cast<std::int8_t>(byte) : byte;
    x[i] = static_cast<float>(v - zero_points[i]) * scales[i];
  }
}

void quantize_blocks_avx2(const void* x, FloatKind kind, void* q, std::int64_t count,
                          std::int64_t block, const float* scales, const std::int32_t* zero_points,
                          QuantRange range, bool stream) {
  auto* out = static_cast<std::uint8_t*>(q);
  const int fb = float_bytes(kind);
  std::int64_t i = 0, j = 0;
  if (block == 32) {
    VectorSink sink(out, stream && count >= 1024);
    for (; i + 32 <= count; i += 32, ++j) {
      if (sink.streaming()) prefetch_ahead(x, i * fb, fb / 2);
      alignas(32) unsigned char tmp[32];
      quantize32_same(x, kind, i, _mm256_set1_ps(scales[j]), bounds(zero_points[j], range),
                      range.is_signed, tmp);
      sink.put(_mm256_load_si256(reinterpret_cast<const __m256i*>(tmp)));
    }
    sink.finish();
  }
  for (; i < count; i += block, ++j)
    quantize_run_avx2(static_cast<const unsigned char*>(x) + i * fb, kind, out + i,
                      count - i < block ? count - i : block, scales[j], zero_points[j], range);
}

void dequantize_blocks_avx2(const void* q, bool is_signed, float* x, std::int64_t count,
                            std::int64_t block, const float* scales,
                            const std::int32_t* zero_points, bool stream) {
  const auto* in = static_cast<const std::uint8_t*>(q);
  std::int64_t i = 0, j = 0;
  if (block == 32) {
    VectorSink sink(x, stream && count >= 1024);
    for (; i + 32 <= count; i += 32, ++j) {
      if (sink.streaming() && i % 64 == 0) prefetch_ahead(in, i, 1);
      const __m256 s = _mm256_set1_ps(scales[j]);
      const __m256i z = _mm256_set1_epi32(zero_points[j]);
      for (int v = 0; v < 32; v += 8)
        sink.put(_mm256_castps_si256(_mm256_mul_ps(
            _mm256_cvtepi32_ps(_mm256_sub_epi32(load8_q(in, is_signed, i + v), z)), s)));
    }
    sink.finish();
  }
  for (; i < count; i += block, ++j)
    dequantize_run_avx2(in + i, is_signed, x + i, count - i < block ? count - i : block, scales[j],
                        zero_points[j]);
}

void requantize_float_avx2(const std::int32_t* c, void* y, std::int64_t count,
                           const float* multipliers, bool per_element, std::int32_t zero_point,
                           QuantRange range) {
  const Bounds b = bounds(zero_point, range);
  auto* out = static_cast<std::uint8_t*>(y);
  auto one32 = [&](const std::int32_t* in, const float* m, void* o) {
    __m256i r[4];
    for (int j = 0; j < 4; ++j) {
      const __m256 mul = per_element ? _mm256_loadu_ps(m + 8 * j) : _mm256_set1_ps(m[0]);
      const __m256 v = _mm256_mul_ps(
          _mm256_cvtepi32_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + 8 * j))),
          mul);
      r[j] = finish(v, b.lo, b.hi, b.z);
    }
    _mm256_storeu_si256(static_cast<__m256i*>(o), pack32(r[0], r[1], r[2], r[3], range.is_signed));
  };
  std::int64_t i = 0;
  for (; i + 32 <= count; i += 32)
    one32(c + i, per_element ? multipliers + i : multipliers, out + i);
  if (i < count) {
    const std::int64_t rest = count - i;
    alignas(32) float mul[32];
    for (int j = 0; j < 32; ++j)
      mul[j] = per_element ? (j < rest ? multipliers[i + j] : 0.0f) : multipliers[0];
    with_tail_copy(c + i, 4, rest, out + i, 1, [&](const void* in, void* o) {
      one32(static_cast<const std::int32_t*>(in), mul, o);
    });
  }
}

MinMax minmax_f32_avx2(const float* x, std::int64_t count) {
  // Start from the first element (NaN-free lanes are fixed up below); NaN lanes are masked out
  // by replacing them with +inf for the min and -inf for the max.
  const __m256 pinf = _mm256_set1_ps(__builtin_inff());
  const __m256 ninf = _mm256_set1_ps(-__builtin_inff());
  // Four independent accumulators: one chain of min/max latencies per vector would bound the
  // loop well under what the loads deliver. Min and max are exact, so the order is free.
  __m256 lo[4] = {pinf, pinf, pinf, pinf}, hi[4] = {ninf, ninf, ninf, ninf};
  __m256 nan_seen[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(),
                        _mm256_setzero_ps()};
  auto step = [&](int a, const float* p) {
    const __m256 v = _mm256_loadu_ps(p);
    const __m256 unordered = _mm256_cmp_ps(v, v, _CMP_UNORD_Q);
    nan_seen[a] = _mm256_or_ps(nan_seen[a], unordered);
    lo[a] = _mm256_min_ps(lo[a], _mm256_blendv_ps(v, pinf, unordered));
    hi[a] = _mm256_max_ps(hi[a], _mm256_blendv_ps(v, ninf, unordered));
  };
  std::int64_t i = 0;
  for (; i + 32 <= count; i += 32)
    for (int a = 0; a < 4; ++a) step(a, x + i + 8 * a);
  for (; i + 8 <= count; i += 8) step(0, x + i);
  for (int a = 1; a < 4; ++a) {
    lo[0] = _mm256_min_ps(lo[0], lo[a]);
    hi[0] = _mm256_max_ps(hi[0], hi[a]);
    nan_seen[0] = _mm256_or_ps(nan_seen[0], nan_seen[a]);
  }
  alignas(32) float l[8], h[8];
  _mm256_store_ps(l, lo[0]);
  _mm256_store_ps(h, hi[0]);
  MinMax r{l[0], h[0], _mm256_movemask_ps(nan_seen[0]) != 0};
  for (int j = 1; j < 8; ++j) {
    r.lo = l[j] < r.lo ? l[j] : r.lo;
    r.hi = h[j] > r.hi ? h[j] : r.hi;
  }
  for (; i < count; ++i) {
    const float v = x[i];
    if (v != v) {
      r.has_nan = true;
      continue;
    }
    r.lo = v < r.lo ? v : r.lo;
    r.hi = v > r.hi ? v : r.hi;
  }
  return r;
}

}  // namespace qforge::cpu_x86
