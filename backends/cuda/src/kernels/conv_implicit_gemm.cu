// The implicit-GEMM convolution on the tensor cores (conv.h): a CTA computes 128 output pixels
// by 64 output channels of one group with mma.sync m16n8k32 (4 warps of 64x32), 64 of the
// reduction per step, double-buffered in shared memory. Each thread gathers one pixel's 64
// codes of the im2col row straight from X into registers (16-byte loads when C/G is a multiple
// of 32 and the rows are aligned, so each 32 lie in one kernel position; byte loads otherwise),
// writing zx where the kernel reads padding, and sums them for the zero-point compensation;
// the weights' tile arrives by cp.async. im2col never exists in global memory.
#include "check.h"
#include "kernels/conv.h"
#include "kernels/conv_epilogue.cuh"
#include "kernels/ptx.cuh"

namespace qforge::cuda {
namespace {

constexpr int kBM = 128, kBN = 64, kBK = 64;  // a step: two mma k32 sub-steps
constexpr int kLds = kBK + 16;  // row pitch in bytes: the fragment loads hit distinct banks
constexpr int kThreads = 128;

// ptx.cuh's mma_s8_m16n8k32 with a uint8 A: the activations as stored, no sign flip.
__device__ __forceinline__ void mma_u8s8_m16n8k32(int (&c)[4], const std::uint32_t (&a)[4],
                                                  const std::uint32_t (&b)[2]) {
  asm("mma.sync.aligned.m16n8k32.row.col.s32.u8.s8.s32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};\n"
      : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// One pixel's gather state: where its receptive field starts.
struct Pixel {
  const std::uint8_t* image = nullptr;  // X of its image, at its group's first channel
  std::int64_t ih0 = 0, iw0 = 0;
  bool valid = false;
};

// Where the pixel's next codes start in the reduction, k = (kh * KW + kw) * C/G + ci, advanced
// as the codes are gathered (no division in the loop).
struct Cursor {
  std::int64_t k = 0, kh = 0, kw = 0, ci = 0;
};

// The next 32 codes of the pixel's im2col row into r[kOff .. kOff + 7], 4 per word; `fill` is
// zx in every byte. Codes at k >= K are 0 (the packed weights are 0 there too).
template <bool kVector, int kOff>
__device__ __forceinline__ void gather32(const Pixel& px, const ConvGeometry& g, Cursor& c,
                                         std::uint32_t fill, std::uint32_t (&r)[16]) {
  if constexpr (kVector) {
    // C/G % 32 == 0: the 32 codes lie in one kernel position, and K % 32 == 0.
    const bool live = px.valid && c.k < g.k;
    const std::int64_t ih = px.ih0 + c.kh * g.dilation_h, iw = px.iw0 + c.kw * g.dilation_w;
    if (live && ih >= 0 && ih < g.h && iw >= 0 && iw < g.w) {
      const auto* src = reinterpret_cast<const uint4*>(px.image + (ih * g.w + iw) * g.c + c.ci);
      const uint4 a = __ldg(src), b = __ldg(src + 1);
      r[kOff + 0] = a.x, r[kOff + 1] = a.y, r[kOff + 2] = a.z, r[kOff + 3] = a.w;
      r[kOff + 4] = b.x, r[kOff + 5] = b.y, r[kOff + 6] = b.z, r[kOff + 7] = b.w;
    } else {
      const std::uint32_t word = live ? fill : 0u;
#pragma unroll
      for (int i = 0; i < 8; ++i) r[kOff + i] = word;
    }
    c.k += 32;
    c.ci += 32;
    if (c.ci == g.cg) {
      c.ci = 0;
      if (++c.kw == g.kw) c.kw = 0, ++c.kh;
    }
  } else {
    const std::uint32_t zx = fill & 0xFFu;
    const bool live = px.valid;
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      std::uint32_t word = 0;
#pragma unroll
      for (int b = 0; b < 4; ++b) {
        if (live && c.k < g.k) {
          const std::int64_t ih = px.ih0 + c.kh * g.dilation_h, iw = px.iw0 + c.kw * g.dilation_w;
          const std::uint32_t v =
              ih >= 0 && ih < g.h && iw >= 0 && iw < g.w
                  ? static_cast<std::uint32_t>(__ldg(px.image + (ih * g.w + iw) * g.c + c.ci))
                  : zx;
          word |= v << (b * 8);
          ++c.k;
          if (++c.ci == g.cg) {
            c.ci = 0;
            if (++c.kw == g.kw) c.kw = 0, ++c.kh;
          }
        }
      }
      r[kOff + i] = word;
    }
  }
}

template <bool kUnsignedX, bool kVector>
__global__ void __launch_bounds__(kThreads)
    conv_implicit_gemm_kernel(const std::uint8_t* __restrict__ x,
                              const std::int8_t* __restrict__ packed, ConvGeometry g,
                              ConvEpilogue e) {
  __shared__ alignas(16) std::uint8_t sa[2][kBM * kLds];
  __shared__ alignas(16) std::uint8_t sb[2][kBN * kLds];
  __shared__ std::int32_t sxsum[kBM];

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const std::int64_t n_tiles = (g.og + kBN - 1) / kBN;
  const std::int64_t group = blockIdx.y / n_tiles;
  const std::int64_t n0 = (blockIdx.y - group * n_tiles) * kBN;  // within the group
  const std::int64_t m0 = static_cast<std::int64_t>(blockIdx.x) * kBM;
  const std::int64_t pixels = g.oh * g.ow, m_total = g.n * pixels;

  Pixel px;
  {
    const std::int64_t m = m0 + tid;
    px.valid = m < m_total;
    if (px.valid) {
      const std::int64_t n = m / pixels, p = m - n * pixels;
      const std::int64_t oh = p / g.ow, ow = p - oh * g.ow;
      px.ih0 = oh * g.stride_h - g.pad_top;
      px.iw0 = ow * g.stride_w - g.pad_left;
      px.image = x + n * g.h * g.w * g.c + group * g.cg;
    }
  }
  const std::uint32_t fill = static_cast<std::uint32_t>(e.zx & 0xFF) * 0x01010101u;

  // The weights' tile: 64 rows of 64 bytes, 32 bytes per thread.
  const int b_row = tid >> 1, b_half = tid & 1;
  const bool b_valid = n0 + b_row < g.og;
  const std::int8_t* b_src = packed + (group * g.og + n0 + b_row) * g.kp + b_half * 32;
  auto load_b = [&](int buf, std::int64_t kt) {
    const std::uint32_t dst = dev::smem_addr(&sb[buf][b_row * kLds + b_half * 32]);
    dev::cp_async16(dst, b_valid ? b_src + kt * kBK : packed, b_valid ? 16 : 0);
    dev::cp_async16(dst + 16, b_valid ? b_src + kt * kBK + 16 : packed, b_valid ? 16 : 0);
    dev::cp_async_commit();
  };
  std::int32_t xsum = 0;
  auto store_a = [&](int buf, const std::uint32_t(&r)[16]) {
    uint4* dst = reinterpret_cast<uint4*>(&sa[buf][tid * kLds]);
#pragma unroll
    for (int i = 0; i < 4; ++i)
      dst[i] = make_uint4(r[4 * i], r[4 * i + 1], r[4 * i + 2], r[4 * i + 3]);
    if (e.need_xsum) {
#pragma unroll
      for (int i = 0; i < 16; ++i)
        xsum = kUnsignedX ? static_cast<std::int32_t>(
                                __dp4a(r[i], 0x01010101u, static_cast<std::uint32_t>(xsum)))
                          : __dp4a(static_cast<int>(r[i]), 0x01010101, xsum);
    }
  };

  const int warp_m = warp >> 1, warp_n = warp & 1;
  int acc[4][4][4] = {};
  const std::int64_t k_tiles = g.kp / kBK;
  std::uint32_t ra[16];
  Cursor cursor;
  auto gather = [&] {
    gather32<kVector, 0>(px, g, cursor, fill, ra);
    gather32<kVector, 8>(px, g, cursor, fill, ra);
  };
  load_b(0, 0);
  gather();
  store_a(0, ra);
  dev::cp_async_wait<0>();
  __syncthreads();
  for (std::int64_t kt = 0; kt < k_tiles; ++kt) {
    const int cur = static_cast<int>(kt & 1);
    const bool more = kt + 1 < k_tiles;
    if (more) {
      load_b(cur ^ 1, kt + 1);
      gather();
    }
#pragma unroll
    for (int sub = 0; sub < kBK / 32; ++sub) {
      std::uint32_t af[4][4], bf[4][2];
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const std::uint8_t* base =
            &sa[cur][(warp_m * 64 + i * 16 + (lane >> 2)) * kLds + sub * 32 + (lane & 3) * 4];
        af[i][0] = *reinterpret_cast<const std::uint32_t*>(base);
        af[i][1] = *reinterpret_cast<const std::uint32_t*>(base + 8 * kLds);
        af[i][2] = *reinterpret_cast<const std::uint32_t*>(base + 16);
        af[i][3] = *reinterpret_cast<const std::uint32_t*>(base + 8 * kLds + 16);
      }
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const std::uint8_t* base =
            &sb[cur][(warp_n * 32 + j * 8 + (lane >> 2)) * kLds + sub * 32 + (lane & 3) * 4];
        bf[j][0] = *reinterpret_cast<const std::uint32_t*>(base);
        bf[j][1] = *reinterpret_cast<const std::uint32_t*>(base + 16);
      }
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          if (kUnsignedX) mma_u8s8_m16n8k32(acc[i][j], af[i], bf[j]);
          else dev::mma_s8_m16n8k32(acc[i][j], af[i], bf[j]);
        }
    }
    if (more) store_a(cur ^ 1, ra);
    dev::cp_async_wait<0>();
    __syncthreads();
  }
  sxsum[tid] = xsum;
  __syncthreads();

#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = warp_m * 64 + i * 16 + (lane >> 2) + h * 8;
      const std::int64_t m = m0 + row;
      if (m >= m_total) continue;
#pragma unroll
      for (int j = 0; j < 4; ++j)
#pragma unroll
        for (int q = 0; q < 2; ++q) {
          const std::int64_t col = n0 + warp_n * 32 + j * 8 + (lane & 3) * 2 + q;
          if (col < g.og)
            dev::conv_store(e, pixels, g.o, m, group * g.og + col, acc[i][j][h * 2 + q],
                            sxsum[row]);
        }
    }
}

}  // namespace

bool conv_implicit_gemm_fits(const ConvGeometry& g) {
  const std::int64_t m_tiles = (g.n * g.oh * g.ow + kBM - 1) / kBM;
  const std::int64_t n_tiles = (g.og + kBN - 1) / kBN;
  return m_tiles <= 0x7FFFFFFF && g.groups * n_tiles <= 65535;
}

void launch_conv_implicit_gemm(const std::uint8_t* x, const std::int8_t* packed,
                               const ConvGeometry& g, const ConvEpilogue& e, cudaStream_t stream) {
  const std::int64_t m = g.n * g.oh * g.ow;
  if (m <= 0 || g.og <= 0) return;
  const dim3 grid(static_cast<unsigned>((m + kBM - 1) / kBM),
                  static_cast<unsigned>(g.groups * ((g.og + kBN - 1) / kBN)));
  const bool vector = g.cg > 0 && g.cg % kBK == 0 && g.c % 16 == 0 &&
                      (reinterpret_cast<std::uintptr_t>(x) & 15u) == 0;
  if (g.x_unsigned) {
    if (vector)
      conv_implicit_gemm_kernel<true, true><<<grid, kThreads, 0, stream>>>(x, packed, g, e);
    else conv_implicit_gemm_kernel<true, false><<<grid, kThreads, 0, stream>>>(x, packed, g, e);
  } else {
    if (vector)
      conv_implicit_gemm_kernel<false, true><<<grid, kThreads, 0, stream>>>(x, packed, g, e);
    else conv_implicit_gemm_kernel<false, false><<<grid, kThreads, 0, stream>>>(x, packed, g, e);
  }
  check_launch("conv_implicit_gemm_kernel");
}

}  // namespace qforge::cuda
