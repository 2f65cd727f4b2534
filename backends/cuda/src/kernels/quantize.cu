// Element-wise quantize / dequantize (memory-bound: float32 -> int8 moves 5 bytes per element).
// Per-tensor params take a fully coalesced path (groups of 4 elements, adjacent across a warp).
// Per-channel and block-wise params take the general path: 16 consecutive elements per thread,
// so that the pair index is found with one division per 16 elements and then stepped; with
// 16-byte aligned pointers and a full group it uses 16-byte loads and stores.
#include <cstdlib>

#include "check.h"
#include "kernels/elementwise.cuh"
#include "kernels/numerics.cuh"
#include "kernels/quantize.h"

namespace qforge::cuda {
namespace {

using dev::kVec;

// Writes codes[0..count) of elements i0.. as `Bits`-bit storage (count == kVec and aligned:
// one or two 16-byte stores; otherwise byte by byte). 4-bit: element 2i in the low nibble; i0
// is even, so a thread owns whole bytes, and the high nibble past the end stays zero.
template <int Bits>
__device__ __forceinline__ void store_codes(void* q, std::int64_t i0, const std::int32_t (&c)[kVec],
                                            int count, bool vector) {
  if constexpr (Bits == 8) {
    auto* out = static_cast<std::uint8_t*>(q) + i0;
    if (vector) {
      std::uint32_t w[4];
#pragma unroll
      for (int j = 0; j < 4; ++j)
        w[j] = (c[4 * j] & 0xFFu) | ((c[4 * j + 1] & 0xFFu) << 8) | ((c[4 * j + 2] & 0xFFu) << 16) |
               ((static_cast<std::uint32_t>(c[4 * j + 3]) & 0xFFu) << 24);
      *reinterpret_cast<uint4*>(out) = make_uint4(w[0], w[1], w[2], w[3]);
    } else {
      for (int e = 0; e < count; ++e) out[e] = static_cast<std::uint8_t>(c[e] & 0xFF);
    }
  } else if constexpr (Bits == 16) {
    auto* out = static_cast<std::uint16_t*>(q) + i0;
    if (vector) {
      std::uint32_t w[8];
#pragma unroll
      for (int j = 0; j < 8; ++j)
        w[j] = (c[2 * j] & 0xFFFFu) | ((static_cast<std::uint32_t>(c[2 * j + 1]) & 0xFFFFu) << 16);
      reinterpret_cast<uint4*>(out)[0] = make_uint4(w[0], w[1], w[2], w[3]);
      reinterpret_cast<uint4*>(out)[1] = make_uint4(w[4], w[5], w[6], w[7]);
    } else {
      for (int e = 0; e < count; ++e) out[e] = static_cast<std::uint16_t>(c[e] & 0xFFFF);
    }
  } else {
    static_assert(Bits == 4);
    auto* out = static_cast<std::uint8_t*>(q) + i0 / 2;
    if (vector) {
      std::uint32_t w[2];
#pragma unroll
      for (int j = 0; j < 2; ++j) {
        w[j] = 0;
#pragma unroll
        for (int e = 0; e < 8; ++e)
          w[j] |= (static_cast<std::uint32_t>(c[8 * j + e]) & 0xFu) << (4 * e);
      }
      *reinterpret_cast<uint2*>(out) = make_uint2(w[0], w[1]);
    } else {
      for (int e = 0; e < count; e += 2) {
        const std::uint32_t lo = c[e] & 0xF;
        const std::uint32_t hi = e + 1 < count ? (c[e + 1] & 0xF) : 0u;
        out[e / 2] = static_cast<std::uint8_t>(lo | (hi << 4));
      }
    }
  }
}

template <FloatType In, int Bits>
__global__ void __launch_bounds__(256)
    quantize_kernel(const void* __restrict__ x, void* __restrict__ q, std::int64_t n,
                    PairIndexing p, bool aligned) {
  const std::int64_t i0 = (static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) * kVec;
  if (i0 >= n) return;
  const int count = n - i0 < kVec ? static_cast<int>(n - i0) : kVec;
  const bool vector = aligned && count == kVec;
  float v[kVec];
  if (vector) {
    dev::load_float_vec<In>(x, i0, v);
  } else {
#pragma unroll
    for (int e = 0; e < kVec; ++e) v[e] = e < count ? dev::load_float<In>(x, i0 + e) : 0.0f;
  }
  std::int32_t c[kVec];
  if (p.layout == ParamLayout::per_tensor) {
    const float s = p.scales ? p.scales[0] : p.scale0;
    const std::int32_t z = p.zero_points ? p.zero_points[0] : p.zero_point0;
    dev::quantize_values<kVec>(v, c, s, dev::fast_quantize_setup(s, p.divide_only), z, p.qmin,
                               p.qmax);
  } else {
    dev::PairCursor cur;
    cur.init(p, i0);
#pragma unroll
    for (int e = 0; e < kVec; ++e) {
      c[e] = e < count ? dev::quantize_value(v[e], cur.scale(p), cur.zero_point(p), p.qmin, p.qmax)
                       : 0;
      cur.advance(p);
    }
  }
  store_codes<Bits>(q, i0, c, count, vector);
}

// Reads code e of a group starting at i0 (sign-extended for signed types).
template <int Bits, bool Signed>
__device__ __forceinline__ std::int32_t load_code(const void* q, std::int64_t i) {
  if constexpr (Bits == 8) {
    const std::uint8_t b = static_cast<const std::uint8_t*>(q)[i];
    return Signed ? static_cast<std::int32_t>(static_cast<std::int8_t>(b)) : b;
  } else if constexpr (Bits == 16) {
    const std::uint16_t h = static_cast<const std::uint16_t*>(q)[i];
    return Signed ? static_cast<std::int32_t>(static_cast<std::int16_t>(h)) : h;
  } else {
    const std::uint8_t b = static_cast<const std::uint8_t*>(q)[i / 2];
    const std::int32_t nib = (i & 1) ? (b >> 4) : (b & 0xF);
    return Signed ? (nib ^ 8) - 8 : nib;
  }
}

template <int Bits, bool Signed>
__global__ void __launch_bounds__(256)
    dequantize_kernel(const void* __restrict__ q, float* __restrict__ x, std::int64_t n,
                      PairIndexing p, bool aligned) {
  const std::int64_t i0 = (static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) * kVec;
  if (i0 >= n) return;
  const int count = n - i0 < kVec ? static_cast<int>(n - i0) : kVec;
  const bool vector = aligned && count == kVec;
  std::int32_t c[kVec];
  if (vector && Bits == 8) {
    const uint4 u = *reinterpret_cast<const uint4*>(static_cast<const std::uint8_t*>(q) + i0);
    const std::uint32_t w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
    for (int e = 0; e < kVec; ++e) {
      const std::uint32_t b = (w[e / 4] >> (8 * (e % 4))) & 0xFFu;
      c[e] = Signed ? static_cast<std::int32_t>(static_cast<std::int8_t>(b))
                    : static_cast<std::int32_t>(b);
    }
  } else {
#pragma unroll
    for (int e = 0; e < kVec; ++e) c[e] = e < count ? load_code<Bits, Signed>(q, i0 + e) : 0;
  }
  float v[kVec];
  if (p.layout == ParamLayout::per_tensor) {
    const float s = p.scales ? p.scales[0] : p.scale0;
    const std::int32_t z = p.zero_points ? p.zero_points[0] : p.zero_point0;
#pragma unroll
    for (int e = 0; e < kVec; ++e) v[e] = dev::dequantize_value(c[e], s, z);
  } else {
    dev::PairCursor cur;
    cur.init(p, i0);
#pragma unroll
    for (int e = 0; e < kVec; ++e) {
      v[e] = e < count ? dev::dequantize_value(c[e], cur.scale(p), cur.zero_point(p)) : 0.0f;
      cur.advance(p);
    }
  }
  if (vector) {
    float4* out = reinterpret_cast<float4*>(x + i0);
#pragma unroll
    for (int j = 0; j < kVec / 4; ++j)
      out[j] = make_float4(v[4 * j], v[4 * j + 1], v[4 * j + 2], v[4 * j + 3]);
  } else {
    for (int e = 0; e < count; ++e) x[i0 + e] = v[e];
  }
}

// ---- per-tensor fast path: fully coalesced ----
// Each thread takes groups of 16 input bytes (4 float32 or 8 float16/bfloat16 elements), and
// the groups of one warp are adjacent, so every load and store instruction of a warp covers one
// contiguous run (512 bytes in). kIters groups per thread, all loaded before any is used, keep
// 64 bytes per thread in flight whatever the input width: the loads are held as raw 16-byte
// words and widened only when used, so a bfloat16 thread holds as few registers as a float32
// one. (The first version held 16 widened values per thread: bfloat16 threads then had only two
// loads in flight and 61 registers, 4 blocks per SM, and reached 0.47 of the copy bandwidth
// against float32's 0.93.) The dequantize direction uses groups of 4 codes (16 bytes of
// float32 out).
constexpr int kIters = 4;
constexpr int kGroup = 4;
constexpr int kThreads = 256;
constexpr std::int64_t kPerBlock = std::int64_t{kThreads} * kIters * kGroup;

// Elements per group: 16 bytes of input (4 float32 or 8 float16/bfloat16).
template <FloatType T>
constexpr int group_of() {
  return T == FloatType::f32 ? 4 : 8;
}

// The raw bits of the G elements at i: one 16-byte load when `vector`, element by element
// (zero past n) otherwise.
template <FloatType T, int G>
__device__ __forceinline__ uint4 load_raw(const void* x, std::int64_t i, std::int64_t n,
                                          bool vector) {
  if (vector) {
    if constexpr (T == FloatType::f32)
      return *reinterpret_cast<const uint4*>(static_cast<const float*>(x) + i);
    else return *reinterpret_cast<const uint4*>(static_cast<const std::uint16_t*>(x) + i);
  }
  std::uint32_t w[4] = {0, 0, 0, 0};
#pragma unroll
  for (int e = 0; e < G; ++e) {
    if (i + e >= n) break;
    if constexpr (T == FloatType::f32) {
      w[e] = static_cast<const std::uint32_t*>(x)[i + e];
    } else {
      w[e / 2] |= static_cast<std::uint32_t>(static_cast<const std::uint16_t*>(x)[i + e])
                  << (16 * (e % 2));
    }
  }
  return make_uint4(w[0], w[1], w[2], w[3]);
}

// Widens the raw group to float32 (exact for float16/bfloat16).
template <FloatType T, int G>
__device__ __forceinline__ void unpack_group(const uint4& u, float (&v)[G]) {
  const std::uint32_t w[4] = {u.x, u.y, u.z, u.w};
  if constexpr (T == FloatType::f32) {
#pragma unroll
    for (int e = 0; e < 4; ++e) v[e] = __uint_as_float(w[e]);
  } else {
#pragma unroll
    for (int h = 0; h < 4; ++h) {
      const auto lo = static_cast<unsigned short>(w[h] & 0xFFFFu),
                 hi = static_cast<unsigned short>(w[h] >> 16);
      if constexpr (T == FloatType::f16) {
        v[2 * h] = __half2float(__ushort_as_half(lo));
        v[2 * h + 1] = __half2float(__ushort_as_half(hi));
      } else {
        v[2 * h] = __uint_as_float(w[h] << 16);  // bfloat16 is the top half of a float32
        v[2 * h + 1] = __uint_as_float(w[h] & 0xFFFF0000u);
      }
    }
  }
}

// Packs G codes of `Bits` bits into 32-bit words (little endian, element 0 lowest).
template <int Bits, int G>
__device__ __forceinline__ void store_group(void* q, std::int64_t i, const std::int32_t (&c)[G]) {
  constexpr int kWords = (G * Bits + 31) / 32;
  constexpr int kPerWord = 32 / Bits;
  std::uint32_t w[kWords > 0 ? kWords : 1] = {};
#pragma unroll
  for (int e = 0; e < G; ++e)
    w[e / kPerWord] |= (static_cast<std::uint32_t>(c[e]) & ((1u << Bits) - 1u))
                       << (Bits * (e % kPerWord));
  auto* base = static_cast<std::uint8_t*>(q) + i * Bits / 8;
  if constexpr (G * Bits == 16) {
    *reinterpret_cast<std::uint16_t*>(base) = static_cast<std::uint16_t>(w[0]);
  } else if constexpr (kWords == 1) {
    *reinterpret_cast<std::uint32_t*>(base) = w[0];
  } else if constexpr (kWords == 2) {
    *reinterpret_cast<uint2*>(base) = make_uint2(w[0], w[1]);
  } else {
    *reinterpret_cast<uint4*>(base) = make_uint4(w[0], w[1], w[2], w[3]);
  }
}

// At least 5 blocks (1280 threads, 80 KB of loads in flight) per SM: 48 registers, no spills.
// (H200 run 11, bfloat16 in: 4 groups x 5 blocks 0.90 of the copy rate; 4 x 6 0.88, 6 x 4 0.88,
// 2 x 8 0.85, 8 x 3 0.83.)
template <FloatType In, int Bits>
__global__ void __launch_bounds__(kThreads, 5)
    quantize_per_tensor_kernel(const void* __restrict__ x, void* __restrict__ q, std::int64_t n,
                               PairIndexing p, bool aligned) {
  constexpr int G = group_of<In>();
  constexpr std::int64_t kBlockElems = std::int64_t{kThreads} * kIters * G;
  const float s = p.scales ? p.scales[0] : p.scale0;
  const std::int32_t z = p.zero_points ? p.zero_points[0] : p.zero_point0;
  // Codes of at most 8 bits: the exact quotient from a multiply and two FMAs, clamped in float32
  // (numerics.cuh, FastClamp); 16-bit codes keep the relative window test.
  constexpr bool kClamped = Bits <= 8;
  const dev::FastQuantize fast =
      kClamped ? dev::FastQuantize{} : dev::fast_quantize_setup(s, p.divide_only);
  const dev::FastClamp clamp =
      kClamped ? dev::fast_clamp_setup(s, z, p.qmin, p.qmax, p.divide_only) : dev::FastClamp{};
  const std::int64_t base = static_cast<std::int64_t>(blockIdx.x) * kBlockElems;
  uint4 raw[kIters];
#pragma unroll
  for (int j = 0; j < kIters; ++j) {
    const std::int64_t i0 = base + (static_cast<std::int64_t>(j) * kThreads + threadIdx.x) * G;
    raw[j] = load_raw<In, G>(x, i0, n, aligned && i0 + G <= n);
  }
#pragma unroll
  for (int j = 0; j < kIters; ++j) {
    const std::int64_t i0 = base + (static_cast<std::int64_t>(j) * kThreads + threadIdx.x) * G;
    if (i0 >= n) break;
    float v[G];
    unpack_group<In, G>(raw[j], v);
    std::int32_t c[G];
    if constexpr (kClamped) dev::quantize_values_clamped<G>(v, c, s, clamp, z, p.qmin, p.qmax);
    else dev::quantize_values<G>(v, c, s, fast, z, p.qmin, p.qmax);
    if (aligned && i0 + G <= n) {
      store_group<Bits, G>(q, i0, c);
    } else {
      std::int32_t all[kVec] = {};
      for (int e = 0; e < G; ++e) all[e] = c[e];
      store_codes<Bits>(q, i0, all, static_cast<int>(n - i0 < G ? n - i0 : G), false);
    }
  }
}

template <int Bits, bool Signed>
__global__ void __launch_bounds__(kThreads)
    dequantize_per_tensor_kernel(const void* __restrict__ q, float* __restrict__ x, std::int64_t n,
                                 PairIndexing p, bool aligned) {
  const float s = p.scales ? p.scales[0] : p.scale0;
  const std::int32_t z = p.zero_points ? p.zero_points[0] : p.zero_point0;
  const std::int64_t base = static_cast<std::int64_t>(blockIdx.x) * kPerBlock;
  std::int32_t c[kIters][kGroup];
#pragma unroll
  for (int j = 0; j < kIters; ++j) {
    const std::int64_t i0 = base + (static_cast<std::int64_t>(j) * kThreads + threadIdx.x) * kGroup;
    if (aligned && i0 + kGroup <= n) {
      if constexpr (Bits == 8) {
        const std::uint32_t w =
            *reinterpret_cast<const std::uint32_t*>(static_cast<const std::uint8_t*>(q) + i0);
#pragma unroll
        for (int e = 0; e < kGroup; ++e) {
          const std::uint32_t b = (w >> (8 * e)) & 0xFFu;
          c[j][e] = Signed ? static_cast<std::int32_t>(static_cast<std::int8_t>(b))
                           : static_cast<std::int32_t>(b);
        }
      } else {
#pragma unroll
        for (int e = 0; e < kGroup; ++e) c[j][e] = load_code<Bits, Signed>(q, i0 + e);
      }
    } else {
#pragma unroll
      for (int e = 0; e < kGroup; ++e)
        c[j][e] = i0 + e < n ? load_code<Bits, Signed>(q, i0 + e) : 0;
    }
  }
#pragma unroll
  for (int j = 0; j < kIters; ++j) {
    const std::int64_t i0 = base + (static_cast<std::int64_t>(j) * kThreads + threadIdx.x) * kGroup;
    if (i0 >= n) break;
    float v[kGroup];
#pragma unroll
    for (int e = 0; e < kGroup; ++e) v[e] = dev::dequantize_value(c[j][e], s, z);
    if (aligned && i0 + kGroup <= n) {
      *reinterpret_cast<float4*>(x + i0) = make_float4(v[0], v[1], v[2], v[3]);
    } else {
      for (int e = 0; e < kGroup && i0 + e < n; ++e) x[i0 + e] = v[e];
    }
  }
}

bool aligned16(const void* p) { return (reinterpret_cast<std::uintptr_t>(p) & 15u) == 0; }

unsigned blocks_for(std::int64_t n) {
  const std::int64_t threads = (n + kVec - 1) / kVec;
  return static_cast<unsigned>((threads + 255) / 256);
}

template <FloatType In>
void quantize_to(DType out, const void* x, void* q, std::int64_t n, const PairIndexing& p,
                 bool aligned, cudaStream_t stream) {
  if (p.layout == ParamLayout::per_tensor) {
    const std::int64_t per_block = std::int64_t{kThreads} * kIters * group_of<In>();
    const auto grid = static_cast<unsigned>((n + per_block - 1) / per_block);
    switch (traits(out).bits) {
      case 8:
        quantize_per_tensor_kernel<In, 8><<<grid, kThreads, 0, stream>>>(x, q, n, p, aligned);
        break;
      case 16:
        quantize_per_tensor_kernel<In, 16><<<grid, kThreads, 0, stream>>>(x, q, n, p, aligned);
        break;
      case 4:
        quantize_per_tensor_kernel<In, 4><<<grid, kThreads, 0, stream>>>(x, q, n, p, aligned);
        break;
      default: return;
    }
    check_launch("quantize_per_tensor_kernel");
    return;
  }
  const unsigned grid = blocks_for(n);
  switch (traits(out).bits) {
    case 8: quantize_kernel<In, 8><<<grid, 256, 0, stream>>>(x, q, n, p, aligned); break;
    case 16: quantize_kernel<In, 16><<<grid, 256, 0, stream>>>(x, q, n, p, aligned); break;
    case 4: quantize_kernel<In, 4><<<grid, 256, 0, stream>>>(x, q, n, p, aligned); break;
    default: return;  // the caller only passes 4-, 8- and 16-bit types
  }
  check_launch("quantize_kernel");
}

}  // namespace

bool quantize_divide_only() {
  const char* env = std::getenv("QFORGE_CUDA_QUANTIZE_DIVIDE");
  return env != nullptr && env[0] == '1';
}

void launch_quantize(FloatType in, const void* x, DType out, void* q, std::int64_t n,
                     const PairIndexing& p_in, cudaStream_t stream) {
  if (n <= 0) return;
  PairIndexing p = p_in;
  p.divide_only = quantize_divide_only();
  // A vector of 16 codes is 16 (8-bit), 32 (16-bit) or 8 bytes (4-bit): 16-byte alignment of
  // both pointers covers every case (the 4-bit group starts at byte i0 / 2, a multiple of 8).
  const bool aligned = aligned16(x) && aligned16(q);
  switch (in) {
    case FloatType::f32: quantize_to<FloatType::f32>(out, x, q, n, p, aligned, stream); break;
    case FloatType::f16: quantize_to<FloatType::f16>(out, x, q, n, p, aligned, stream); break;
    case FloatType::bf16: quantize_to<FloatType::bf16>(out, x, q, n, p, aligned, stream); break;
  }
}

void launch_dequantize(DType in, const void* q, float* x, std::int64_t n, const PairIndexing& p,
                       cudaStream_t stream) {
  if (n <= 0) return;
  const bool aligned = aligned16(x) && aligned16(q);
  if (p.layout == ParamLayout::per_tensor) {
    const auto grid = static_cast<unsigned>((n + kPerBlock - 1) / kPerBlock);
    switch (in) {
      case DType::int8:
        dequantize_per_tensor_kernel<8, true><<<grid, kThreads, 0, stream>>>(q, x, n, p, aligned);
        break;
      case DType::uint8:
        dequantize_per_tensor_kernel<8, false><<<grid, kThreads, 0, stream>>>(q, x, n, p, aligned);
        break;
      case DType::int16:
        dequantize_per_tensor_kernel<16, true><<<grid, kThreads, 0, stream>>>(q, x, n, p, aligned);
        break;
      case DType::uint16:
        dequantize_per_tensor_kernel<16, false><<<grid, kThreads, 0, stream>>>(q, x, n, p, aligned);
        break;
      case DType::int4:
        dequantize_per_tensor_kernel<4, true><<<grid, kThreads, 0, stream>>>(q, x, n, p, aligned);
        break;
      case DType::uint4:
        dequantize_per_tensor_kernel<4, false><<<grid, kThreads, 0, stream>>>(q, x, n, p, aligned);
        break;
      case DType::binary: return;
    }
    check_launch("dequantize_per_tensor_kernel");
    return;
  }
  const unsigned grid = blocks_for(n);
  switch (in) {
    case DType::int8:
      dequantize_kernel<8, true><<<grid, 256, 0, stream>>>(q, x, n, p, aligned);
      break;
    case DType::uint8:
      dequantize_kernel<8, false><<<grid, 256, 0, stream>>>(q, x, n, p, aligned);
      break;
    case DType::int16:
      dequantize_kernel<16, true><<<grid, 256, 0, stream>>>(q, x, n, p, aligned);
      break;
    case DType::uint16:
      dequantize_kernel<16, false><<<grid, 256, 0, stream>>>(q, x, n, p, aligned);
      break;
    case DType::int4:
      dequantize_kernel<4, true><<<grid, 256, 0, stream>>>(q, x, n, p, aligned);
      break;
    case DType::uint4:
      dequantize_kernel<4, false><<<grid, 256, 0, stream>>>(q, x, n, p, aligned);
      break;
    case DType::binary: return;  // not claimed by supports()
  }
  check_launch("dequantize_kernel");
}

}  // namespace qforge::cuda
