// The pipelined implicit-GEMM convolution (conv.h): 8 warps (4 for the 64x64 tile), a BM x BN tile
// of output pixels by output channels of one group, the reduction in 64-deep steps through a
// STAGES-deep ring of shared-memory buffers that cp.async fills for both operands. C / G % 16 == 0,
// so every 16 bytes of an im2col row lie inside one kernel position and are one 16-byte copy from
// X; positions in the padding get zx (0 past K) by a plain shared store instead. Shared rows are 64
// bytes, chunk c of row r stored at c ^ ((r >> 1) & 3) so that ldmatrix reads hit distinct banks
// (gemm_mma.cu's layout). The epilogue stages the int32 tile in shared memory and walks it in Y's
// order: NHWC rows of requantized codes leave as 16-byte stores, everything else as coalesced
// element stores. With split-K (grid.z > 1), CTAs add their raw sums into an int32 buffer instead
// (integer addition in any order gives the same bits) and conv_finish_kernel applies the epilogue.
#include <algorithm>
#include <atomic>

#include "check.h"
#include "kernels/conv.h"
#include "kernels/conv_epilogue.cuh"
#include "kernels/ptx.cuh"

namespace qforge::cuda {
namespace {

template <int BM_, int BN_, int WM_, int WN_, int STAGES_, int MIN_CTAS_>
struct ConvTile {
  static constexpr int BM = BM_, BN = BN_, WM = WM_, WN = WN_, STAGES = STAGES_;
  // CTAs per SM that the register budget must allow (__launch_bounds__): without it ptxas
  // recomputed the per-thread shared-memory offsets from the thread index on every step.
  static constexpr int MIN_CTAS = MIN_CTAS_;
  static constexpr int BK = 64;
  static constexpr int THREADS = WM * WN * 32;
  static constexpr int TM = BM / WM, TN = BN / WN;
  static constexpr int MT = TM / 16, NT = TN / 8;
  // Four threads copy a 64-byte row, so one pass of the CTA covers ROW_STRIDE rows.
  static constexpr int ROW_STRIDE = THREADS / 4;
  static constexpr int A_ROWS = BM / ROW_STRIDE;  // rows each thread copies (one chunk column)
  static constexpr int B_ROWS = BN / ROW_STRIDE;
  static constexpr int PITCH = BN + 1;  // int32 epilogue tile: row and column walks conflict-free
  static constexpr int PIPE = STAGES * (BM + BN) * BK;
  static constexpr int EPI = BM * PITCH * 4 + BM * BN + BM * 4;
  static constexpr int SMEM = PIPE > EPI ? PIPE : EPI;
  static_assert(BM % ROW_STRIDE == 0 && BN % ROW_STRIDE == 0, "whole passes of row copies");
  static_assert(TM % 16 == 0 && TN % 16 == 0, "warp tile must be whole m16 x n16 pieces");
  static_assert(A_ROWS >= 1 && B_ROWS >= 1, "every thread copies A and B chunks");
};

using Tile256x64 = ConvTile<256, 64, 4, 2, 4, 1>;
using Tile128x128 = ConvTile<128, 128, 2, 4, 4, 1>;
using Tile128x64 = ConvTile<128, 64, 4, 2, 4, 3>;
// The 64x64 tile in two forms (one kernel name, the same tiles): 4 warps of 32x32 when each CTA
// owns its whole reduction (more mma per copied chunk), 8 warps of 32x16 when split-K gives a
// few CTAs each a short stretch of it (more warps to cover the copies' latency). Measured on
// an H100 (docs/PERFORMANCE.md): ResNet-50 layer3 batch 32 unsplit 0.0345 ms with 4 warps
// against 0.0395 with 8; batch 1 split 0.025-0.028 ms with 8 against 0.038 with 4.
using Tile64x64 = ConvTile<64, 64, 2, 2, 4, 4>;
using Tile64x64Split = ConvTile<64, 64, 2, 4, 4, 1>;

// The shortest reduction (in 64-deep steps) worth splitting across CTAs.
constexpr std::int64_t kMinSplitSteps = 16;

__device__ __forceinline__ std::uint32_t swizzled(int row, int chunk) {
  return static_cast<std::uint32_t>(row * 64 + ((chunk ^ ((row >> 1) & 3)) << 4));
}

__device__ __forceinline__ void mma_u8s8(int (&c)[4], const std::uint32_t (&a)[4],
                                         const std::uint32_t (&b)[2]) {
  asm("mma.sync.aligned.m16n8k32.row.col.s32.u8.s8.s32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};\n"
      : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// The sum of 16 codes (one shared chunk), signed or unsigned as X is.
template <bool kUnsignedX>
__device__ __forceinline__ std::int32_t chunk_sum(const uint4& v, std::int32_t s) {
  if constexpr (kUnsignedX) {
    auto u = static_cast<std::uint32_t>(s);
    u = __dp4a(v.x, 0x01010101u, u), u = __dp4a(v.y, 0x01010101u, u);
    u = __dp4a(v.z, 0x01010101u, u), u = __dp4a(v.w, 0x01010101u, u);
    return static_cast<std::int32_t>(u);
  } else {
    s = __dp4a(static_cast<int>(v.x), 0x01010101, s),
    s = __dp4a(static_cast<int>(v.y), 0x01010101, s);
    s = __dp4a(static_cast<int>(v.z), 0x01010101, s),
    s = __dp4a(static_cast<int>(v.w), 0x01010101, s);
    return s;
  }
}

// The NHWC epilogue of one thread's column (rows first, first + step, ...) for any output kind.
template <class T, bool kXsum>
__device__ __forceinline__ void conv_rows_generic(const ConvEpilogue& e, const dev::ConvColumn& cc,
                                                  const std::int32_t* tile,
                                                  const std::int32_t* sxsum, std::uint8_t* codes,
                                                  bool vector, int col, int first, int rows,
                                                  std::int64_t index, std::int64_t index_step) {
  constexpr int kRowStep = T::THREADS / T::BN;
#pragma unroll 1
  for (int row = first; row < rows; row += kRowStep, index += index_step) {
    const std::uint32_t bits =
        dev::conv_output(e, cc, tile[row * T::PITCH + col], kXsum ? sxsum[row] : 0);
    if (vector) codes[row * T::BN + col] = static_cast<std::uint8_t>(bits);
    else dev::conv_put(e, index, bits);
  }
}

// The same for requantized codes with a fixed-point multiplier, no left shift and a multiplier
// other than INT32_MIN (dev::requantize_fixed_column's fast form), into the codes tile: per
// element a multiply-add, three shifts and two clamps. Clamping to [qlo - zy, qhi - zy] before
// adding zy equals the reference's clamps (those bounds lie inside +-2^24).
template <class T, bool kXsum>
__device__ __forceinline__ void requantize_fixed_rows(
    const ConvEpilogue& e, const dev::ConvColumn& cc, const std::int32_t* tile,
    const std::int32_t* sxsum, std::uint8_t* codes, int col, int first, int rows) {
  constexpr int kRowStep = T::THREADS / T::BN;
  const std::uint32_t k_zx_zw =
      static_cast<std::uint32_t>(e.k) * static_cast<std::uint32_t>(e.zx) * cc.zw;
  const std::int32_t lo = e.qlo - e.zy, hi = e.qhi - e.zy;
  const bool bias = e.bias_i32 != nullptr;
  bool overflow = false;
#pragma unroll 4
  for (int row = first; row < rows; row += kRowStep) {
    auto c = static_cast<std::uint32_t>(tile[row * T::PITCH + col]) - cc.zx_wsum;
    if constexpr (kXsum) c = c - cc.zw * static_cast<std::uint32_t>(sxsum[row]) + k_zx_zw;
    std::int32_t acc = static_cast<std::int32_t>(c);
    if (bias) {
      const std::int32_t v = static_cast<std::int32_t>(c + static_cast<std::uint32_t>(cc.bias_i32));
      overflow |= ((acc ^ v) & (cc.bias_i32 ^ v)) < 0;  // the int64 sum left int32
      acc = v;
    }
    std::int32_t h = static_cast<std::int32_t>(
        (static_cast<long long>(acc) * cc.fixed_multiplier + (1LL << 30)) >> 31);
    h = static_cast<std::int32_t>((static_cast<long long>(h) + (cc.half + ((h >> 31) & cc.neg))) >>
                                  cc.right);
    h = h < lo ? lo : h > hi ? hi : h;
    codes[row * T::BN + col] = static_cast<std::uint8_t>(h + e.zy);
  }
  if (overflow) *e.overflow = 1;
}

// With the pixel sums (kXsum) the 128x64 tile does not fit three CTAs' registers without
// spilling; it asks for two.
template <class T, bool kUnsignedX, bool kXsum>
__global__ void __launch_bounds__(T::THREADS, kXsum&& T::MIN_CTAS > 2 ? 2 : T::MIN_CTAS)
    conv_igemm_kernel(const std::uint8_t* __restrict__ x, const std::int8_t* __restrict__ packed,
                      const __grid_constant__ ConvGeometry g,
                      const __grid_constant__ ConvEpilogue e, int k_tiles_per_split,
                      std::int32_t* __restrict__ partial, std::int32_t* __restrict__ partial_xsum) {
  extern __shared__ __align__(128) std::uint8_t smem[];
  std::uint8_t* const sa = smem;
  std::uint8_t* const sb = smem + T::STAGES * T::BM * T::BK;
  const std::uint32_t sa_addr = dev::smem_addr(sa), sb_addr = dev::smem_addr(sb);
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int wm = warp % T::WM, wn = warp / T::WM;

  const int n_tiles = static_cast<int>((g.og + T::BN - 1) / T::BN);
  const int group = static_cast<int>(blockIdx.y) / n_tiles;
  const int n0 = (static_cast<int>(blockIdx.y) - group * n_tiles) * T::BN;  // within the group
  const std::int64_t m0 = static_cast<std::int64_t>(blockIdx.x) * T::BM;
  const std::int64_t pixels = g.oh * g.ow, m_total = g.n * pixels;
  const int cg = static_cast<int>(g.cg), kw_n = static_cast<int>(g.kw);
  const int h = static_cast<int>(g.h), w = static_cast<int>(g.w), c = static_cast<int>(g.c);
  const int dil_h = static_cast<int>(g.dilation_h), dil_w = static_cast<int>(g.dilation_w);
  const int k_total = static_cast<int>(g.k);

  const int k_tiles = static_cast<int>(g.kp / T::BK);
  const int kt_begin = static_cast<int>(blockIdx.z) * k_tiles_per_split;
  const int kt_count = max(0, min(k_tiles, kt_begin + k_tiles_per_split) - kt_begin);

  // This thread copies chunk `chunk` (16 of the 64 bytes of a step) of rows a_row0 + 64 i. Per
  // row, once: the offset in X of its window's first tap and which kernel rows (bit r) and
  // columns (bit 16 + s) of the window lie inside the image; per step, one tap offset shared by
  // all rows, so a copy costs a mask test and an add (the window's bounds are not recomputed).
  const int chunk = tid & 3, a_row0 = tid >> 2;
  const int kh_n = static_cast<int>(g.kh);
  const std::uint8_t* a_src[T::A_ROWS];
  std::uint32_t a_valid[T::A_ROWS];
#pragma unroll
  for (int i = 0; i < T::A_ROWS; ++i) {
    const std::int64_t m = m0 + a_row0 + T::ROW_STRIDE * i;
    a_src[i] = x;
    a_valid[i] = 0;
    if (m < m_total) {
      std::int64_t n;
      int oh, ow;
      if (m_total <= 0x7FFFFFFF) {  // 32-bit divisions (the 64-bit ones are library calls)
        const auto mm = static_cast<std::uint32_t>(m), pix = static_cast<std::uint32_t>(pixels);
        const std::uint32_t nn = mm / pix, p = mm - nn * pix;
        const auto owu = static_cast<std::uint32_t>(g.ow);
        const std::uint32_t ohu = p / owu;
        n = nn, oh = static_cast<int>(ohu), ow = static_cast<int>(p - ohu * owu);
      } else {
        n = m / pixels;
        const std::int64_t p = m - n * pixels;
        oh = static_cast<int>(p / g.ow), ow = static_cast<int>(p - (p / g.ow) * g.ow);
      }
      const int ih0 = oh * static_cast<int>(g.stride_h) - static_cast<int>(g.pad_top);
      const int iw0 = ow * static_cast<int>(g.stride_w) - static_cast<int>(g.pad_left);
      std::uint32_t v = 0;
      for (int r = 0; r < kh_n; ++r) {
        const int ih = ih0 + r * dil_h;
        if (ih >= 0 && ih < h) v |= 1u << r;
      }
      for (int q = 0; q < kw_n; ++q) {
        const int iw = iw0 + q * dil_w;
        if (iw >= 0 && iw < w) v |= 1u << (16 + q);
      }
      a_valid[i] = v;
      // May point before X (a window in the top or left padding): only its valid taps, at
      // non-negative offsets inside the image, are read.
      a_src[i] = x + (n * g.h * g.w * g.c + static_cast<std::int64_t>(group) * cg +
                      (static_cast<std::int64_t>(ih0) * w + iw0) * c);
    }
  }
  // Where this thread's chunk of the next step starts: k = (kh * KW + kw) * C/G + ci, and its
  // offset from a window's first tap.
  int ck = kt_begin * T::BK + chunk * 16;
  int cpos = ck / cg, cci = ck - cpos * cg;
  int ckh = cpos / kw_n, ckw = cpos - ckh * kw_n;
  std::uint32_t toff = (ckh * dil_h * w + ckw * dil_w) * c + cci;  // >= 0: taps go right, down
  const int tap_step = dil_w * c - cg, row_step = dil_h * w * c - kw_n * dil_w * c;
  const std::uint32_t fill1 = static_cast<std::uint32_t>(e.zx & 0xFF) * 0x01010101u;
  const uint4 fill = make_uint4(fill1, fill1, fill1, fill1);

  std::uint32_t a_dst[T::A_ROWS], b_dst[T::B_ROWS];
#pragma unroll
  for (int i = 0; i < T::A_ROWS; ++i) a_dst[i] = swizzled(a_row0 + T::ROW_STRIDE * i, chunk);
  const std::int8_t* b_src[T::B_ROWS];
  int b_step[T::B_ROWS], b_bytes[T::B_ROWS];
#pragma unroll
  for (int i = 0; i < T::B_ROWS; ++i) {
    const int row = a_row0 + T::ROW_STRIDE * i;
    const bool ok = n0 + row < g.og;
    b_dst[i] = swizzled(row, chunk);
    b_src[i] = ok ? packed + (static_cast<std::int64_t>(group) * g.og + n0 + row) * g.kp +
                        chunk * 16 + static_cast<std::int64_t>(kt_begin) * T::BK
                  : packed;
    b_step[i] = ok ? T::BK : 0;
    b_bytes[i] = ok ? 16 : 0;
  }

  auto load_tile = [&](int stage) {
    const bool live = ck < k_total;
    const std::uint32_t need = (1u << ckh) | (1u << (16 + ckw));
    const std::uint32_t a_stage = stage * T::BM * T::BK, b_stage = stage * T::BN * T::BK;
#pragma unroll
    for (int i = 0; i < T::A_ROWS; ++i) {
      // Inside the image: the codes; in the padding: zx; past K: zeros (cp.async's zero fill).
      const bool inside = (a_valid[i] & need) == need;
      if (live && !inside) {
        *reinterpret_cast<uint4*>(sa + a_stage + a_dst[i]) = fill;
      } else {
        dev::cp_async16(sa_addr + a_stage + a_dst[i], live ? a_src[i] + toff : x, live ? 16 : 0);
      }
    }
#pragma unroll
    for (int i = 0; i < T::B_ROWS; ++i) {
      dev::cp_async16(sb_addr + b_stage + b_dst[i], b_src[i], b_bytes[i]);
      b_src[i] += b_step[i];
    }
    // The next step's chunk: 64 further along k, across kernel positions when C/G < 64.
    ck += T::BK;
    cci += T::BK;
    toff += T::BK;
    while (cci >= cg) {
      cci -= cg;
      toff += tap_step;
      if (++ckw == kw_n) ckw = 0, ++ckh, toff += row_step;
    }
  };

  // ldmatrix offsets within a stage: A row wm * TM + mt * 16 + lane % 16, chunk kk * 2 + lane /
  // 16; B row wn * TN + np * 16 + lane % 8 + (lane / 16) * 8, chunk kk * 2 + (lane / 8) % 2. The
  // swizzle term (row >> 1) & 3 depends on lane alone, and kk flips bit 5 of the offset, so
  // mt, np and kk become constants added to two per-thread offsets.
  std::uint32_t a_ld = swizzled(wm * T::TM + (lane % 16), lane / 16);
  std::uint32_t b_ld = swizzled(wn * T::TN + (lane % 8) + (lane / 16) * 8, (lane / 8) % 2);

  int acc[T::MT][T::NT][4];
#pragma unroll
  for (int i = 0; i < T::MT; ++i)
#pragma unroll
    for (int j = 0; j < T::NT; ++j)
#pragma unroll
      for (int r = 0; r < 4; ++r) acc[i][j][r] = 0;
  std::int32_t xs[T::A_ROWS] = {};

  // Every iteration commits one group (possibly empty), so wait_group<STAGES - 2> always means
  // "the step about to be used has landed".
#pragma unroll
  for (int s = 0; s < T::STAGES - 1; ++s) {
    if (s < kt_count) load_tile(s);
    dev::cp_async_commit();
  }
  for (int it = 0; it < kt_count; ++it) {
    // Opaque to the compiler each step: kept in registers rather than recomputed from the thread
    // index (which ptxas otherwise does, about 30 instructions a step).
    asm volatile("" : "+r"(a_ld), "+r"(b_ld));
#pragma unroll
    for (int i = 0; i < T::A_ROWS; ++i) asm volatile("" : "+r"(a_dst[i]));
#pragma unroll
    for (int i = 0; i < T::B_ROWS; ++i) asm volatile("" : "+r"(b_dst[i]));
    dev::cp_async_wait<T::STAGES - 2>();
    __syncthreads();  // step `it` visible to all; everyone is done with the buffer refilled next
    const int next = it + T::STAGES - 1;
    if (next < kt_count) load_tile(next % T::STAGES);
    dev::cp_async_commit();

    const int stage = it % T::STAGES;
    const std::uint32_t a_base = sa_addr + stage * T::BM * T::BK;
    const std::uint32_t b_base = sb_addr + stage * T::BN * T::BK;
    if constexpr (kXsum) {
#pragma unroll
      for (int i = 0; i < T::A_ROWS; ++i)
        xs[i] = chunk_sum<kUnsignedX>(
            *reinterpret_cast<const uint4*>(sa + stage * T::BM * T::BK + a_dst[i]), xs[i]);
    }
#pragma unroll
    for (int kk = 0; kk < T::BK / 32; ++kk) {
      std::uint32_t af[T::MT][4], bf[T::NT][2];
#pragma unroll
      for (int mt = 0; mt < T::MT; ++mt)
        dev::ldmatrix_x4(af[mt][0], af[mt][1], af[mt][2], af[mt][3],
                         a_base + (a_ld ^ (kk << 5)) + mt * 16 * T::BK);
#pragma unroll
      for (int np = 0; np < T::NT / 2; ++np)
        dev::ldmatrix_x4(bf[2 * np][0], bf[2 * np][1], bf[2 * np + 1][0], bf[2 * np + 1][1],
                         b_base + (b_ld ^ (kk << 5)) + np * 16 * T::BK);
#pragma unroll
      for (int mt = 0; mt < T::MT; ++mt)
#pragma unroll
        for (int nt = 0; nt < T::NT; ++nt) {
          if constexpr (kUnsignedX) mma_u8s8(acc[mt][nt], af[mt], bf[nt]);
          else dev::mma_s8_m16n8k32(acc[mt][nt], af[mt], bf[nt]);
        }
    }
  }
  dev::cp_async_wait<0>();
  __syncthreads();  // the ring is free for the epilogue's tile

  // The four chunk columns of a row sit in adjacent lanes.
  if constexpr (kXsum) {
#pragma unroll
    for (int i = 0; i < T::A_ROWS; ++i) {
      xs[i] += __shfl_xor_sync(0xFFFFFFFFu, xs[i], 1);
      xs[i] += __shfl_xor_sync(0xFFFFFFFFu, xs[i], 2);
    }
  }
  const int og = static_cast<int>(g.og);
  const int o0 = group * og + n0;  // Y's channel of tile column 0

  if (gridDim.z > 1) {
    // Split-K: raw sums into partial [M, O], the pixel sums into partial_xsum [M, G].
    const int g_lane = lane / 4, t = lane % 4;
#pragma unroll
    for (int mt = 0; mt < T::MT; ++mt)
#pragma unroll
      for (int hh = 0; hh < 2; ++hh) {
        const std::int64_t m = m0 + wm * T::TM + mt * 16 + g_lane + hh * 8;
        if (m >= m_total) continue;
#pragma unroll
        for (int nt = 0; nt < T::NT; ++nt)
#pragma unroll
          for (int q = 0; q < 2; ++q) {
            const int col = n0 + wn * T::TN + nt * 8 + t * 2 + q;
            if (col < og) atomicAdd(partial + m * g.o + group * og + col, acc[mt][nt][hh * 2 + q]);
          }
      }
    if constexpr (kXsum) {
      if (n0 == 0 && chunk == 0) {
#pragma unroll
        for (int i = 0; i < T::A_ROWS; ++i) {
          const std::int64_t m = m0 + a_row0 + T::ROW_STRIDE * i;
          if (m < m_total) atomicAdd(partial_xsum + m * g.groups + group, xs[i]);
        }
      }
    }
    return;
  }

  std::int32_t* const tile = reinterpret_cast<std::int32_t*>(smem);
  std::uint8_t* const codes = smem + T::BM * T::PITCH * 4;  // [BM, BN] requantized codes
  std::int32_t* const sxsum = reinterpret_cast<std::int32_t*>(codes + T::BM * T::BN);
  {
    const int g_lane = lane / 4, t = lane % 4;
#pragma unroll
    for (int mt = 0; mt < T::MT; ++mt)
#pragma unroll
      for (int hh = 0; hh < 2; ++hh) {
        const int row = wm * T::TM + mt * 16 + g_lane + hh * 8;
#pragma unroll
        for (int nt = 0; nt < T::NT; ++nt) {
          const int col = wn * T::TN + nt * 8 + t * 2;
          tile[row * T::PITCH + col] = acc[mt][nt][hh * 2];
          tile[row * T::PITCH + col + 1] = acc[mt][nt][hh * 2 + 1];
        }
      }
    if constexpr (kXsum) {
      if (chunk == 0) {
#pragma unroll
        for (int i = 0; i < T::A_ROWS; ++i) sxsum[a_row0 + T::ROW_STRIDE * i] = xs[i];
      }
    }
  }
  __syncthreads();

  // Requantized NHWC codes go out 16 at a time when Y's rows allow it.
  const bool vector = !e.nchw && e.kind == ConvOut::requantize && g.o % 16 == 0 && o0 % 16 == 0 &&
                      (reinterpret_cast<std::uintptr_t>(e.y) & 15u) == 0;
  if (!e.nchw) {
    // Along the channels of a row: this thread's column is the same on every row it visits,
    // so its per-channel operands are loaded once.
    constexpr int kRowStep = T::THREADS / T::BN;
    static_assert(T::THREADS % T::BN == 0, "a thread keeps its column");
    const int col = tid % T::BN;
    const int rows = static_cast<int>(m_total - m0 < T::BM ? m_total - m0 : T::BM);
    if (n0 + col < og) {
      const dev::ConvColumn cc = dev::conv_column(e, o0 + col);
      if (vector && e.fixed_multiplier && cc.left == 0 && cc.fixed_multiplier != INT32_MIN) {
        // qlinear_conv's fixed-point requantization, the common case, with everything that does
        // not change along the column hoisted out of the loop: dev::conv_output's bits.
        requantize_fixed_rows<T, kXsum>(e, cc, tile, sxsum, codes, col, tid / T::BN, rows);
      } else {
        conv_rows_generic<T, kXsum>(e, cc, tile, sxsum, codes, vector, col, tid / T::BN, rows,
                                    (m0 + tid / T::BN) * g.o + o0 + col, kRowStep * g.o);
      }
    }
  } else {
    // Along the pixels of a channel.
#pragma unroll 1
    for (int i = tid; i < T::BM * T::BN; i += T::THREADS) {
      const int row = i % T::BM, col = i / T::BM;
      const std::int64_t m = m0 + row;
      if (m >= m_total || n0 + col >= og) continue;
      const std::uint32_t bits =
          dev::conv_output(e, o0 + col, tile[row * T::PITCH + col], kXsum ? sxsum[row] : 0);
      dev::conv_put(e, dev::conv_index(e, pixels, g.o, m, o0 + col), bits);
    }
  }
  if (!vector) return;
  __syncthreads();
  constexpr int kChunks = T::BN / 16;
#pragma unroll 1
  for (int i = tid; i < T::BM * kChunks; i += T::THREADS) {
    const int row = i / kChunks, col = (i % kChunks) * 16;
    const std::int64_t m = m0 + row;
    if (m >= m_total || n0 + col >= og) continue;
    auto* dst = static_cast<std::uint8_t*>(e.y) + m * g.o + o0 + col;
    if (n0 + col + 16 <= og) {
      *reinterpret_cast<uint4*>(dst) = *reinterpret_cast<const uint4*>(codes + row * T::BN + col);
    } else {
      for (int j = 0; j < og - n0 - col; ++j) dst[j] = codes[row * T::BN + col + j];
    }
  }
}

// Split-K's epilogue: every output from the summed partials.
__global__ void __launch_bounds__(256)
    conv_finish_kernel(const std::int32_t* __restrict__ partial,
                       const std::int32_t* __restrict__ partial_xsum, ConvGeometry g,
                       ConvEpilogue e) {
  const std::int64_t pixels = g.oh * g.ow, total = g.n * pixels * g.o;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t m = i / g.o, o = i - m * g.o;
    const std::int32_t xsum = e.need_xsum ? partial_xsum[m * g.groups + o / g.og] : 0;
    dev::conv_store_inline(e, pixels, g.o, m, o, partial[i], xsum);
  }
}

template <class T, bool kUnsignedX, bool kXsum>
void launch(const std::uint8_t* x, const std::int8_t* packed, const ConvGeometry& g,
            const ConvEpilogue& e, int splits, std::int32_t* partial, std::int32_t* partial_xsum,
            int device, cudaStream_t stream) {
  static std::atomic<bool> done[64] = {};  // the attribute is per device; plans share processes
  const int slot = device >= 0 && device < 64 ? device : 0;
  if (!done[slot].load(std::memory_order_acquire)) {
    check(cudaFuncSetAttribute(conv_igemm_kernel<T, kUnsignedX, kXsum>,
                               cudaFuncAttributeMaxDynamicSharedMemorySize, T::SMEM),
          "cudaFuncSetAttribute(conv_igemm_kernel, MaxDynamicSharedMemorySize)");
    done[slot].store(true, std::memory_order_release);
  }
  const std::int64_t m = g.n * g.oh * g.ow;
  const int k_tiles = static_cast<int>(g.kp / T::BK);
  const int per_split = std::max(1, (k_tiles + splits - 1) / splits);
  const int used = std::max(1, (k_tiles + per_split - 1) / per_split);
  const dim3 grid(static_cast<unsigned>((m + T::BM - 1) / T::BM),
                  static_cast<unsigned>(g.groups * ((g.og + T::BN - 1) / T::BN)),
                  static_cast<unsigned>(used));
  if (used > 1) {
    check(cudaMemsetAsync(partial, 0, static_cast<std::size_t>(m * g.o) * 4, stream),
          "cudaMemsetAsync(convolution split-K partials)");
    if (kXsum)
      check(cudaMemsetAsync(partial_xsum, 0, static_cast<std::size_t>(m * g.groups) * 4, stream),
            "cudaMemsetAsync(convolution split-K pixel sums)");
  }
  conv_igemm_kernel<T, kUnsignedX, kXsum>
      <<<grid, T::THREADS, T::SMEM, stream>>>(x, packed, g, e, per_split, partial, partial_xsum);
  check_launch("conv_igemm_kernel");
  if (used > 1) {
    const std::int64_t total = m * g.o;
    const auto blocks = static_cast<unsigned>(std::min<std::int64_t>((total + 255) / 256, 1 << 16));
    conv_finish_kernel<<<blocks, 256, 0, stream>>>(partial, partial_xsum, g, e);
    check_launch("conv_finish_kernel");
  }
}

template <class T>
void launch_tile(const std::uint8_t* x, const std::int8_t* packed, const ConvGeometry& g,
                 const ConvEpilogue& e, int splits, std::int32_t* partial,
                 std::int32_t* partial_xsum, int device, cudaStream_t stream) {
  if (g.x_unsigned) {
    if (e.need_xsum)
      launch<T, true, true>(x, packed, g, e, splits, partial, partial_xsum, device, stream);
    else launch<T, true, false>(x, packed, g, e, splits, partial, partial_xsum, device, stream);
  } else {
    if (e.need_xsum)
      launch<T, false, true>(x, packed, g, e, splits, partial, partial_xsum, device, stream);
    else launch<T, false, false>(x, packed, g, e, splits, partial, partial_xsum, device, stream);
  }
}

template <class T>
std::int64_t tiles_of(const ConvGeometry& g) {
  return ((g.n * g.oh * g.ow + T::BM - 1) / T::BM) * g.groups * ((g.og + T::BN - 1) / T::BN);
}

template <class T>
bool grid_holds(const ConvGeometry& g) {
  return (g.n * g.oh * g.ow + T::BM - 1) / T::BM <= 0x7FFFFFFF &&
         g.groups * ((g.og + T::BN - 1) / T::BN) <= 65535;
}

}  // namespace

std::optional<std::string> conv_pipelined_refusal(const ConvGeometry& g) {
  if (g.cg % 16 != 0)
    return "C / groups = " + std::to_string(g.cg) +
           " is not a multiple of 16 (the pipelined kernel copies 16 codes of one kernel "
           "position at a time)";
  if (g.kh > 16 || g.kw > 16)
    return "a " + std::to_string(g.kh) + "x" + std::to_string(g.kw) +
           " kernel (the pipelined kernel keeps one bit per kernel row and column, at most 16 "
           "each)";
  if (g.h * g.w * g.c > 0x7FFFFFFF || g.k > 0x7FFFFFFF || g.kp / 64 > 0x7FFFFFFF)
    return std::string(
        "one image of X or the reduction exceeds 2^31 - 1 codes (the pipelined "
        "kernel addresses them in int32)");
  if (!grid_holds<Tile64x64>(g))
    return "groups * ceil(O / groups / 64) = " + std::to_string(g.groups * ((g.og + 63) / 64)) +
           " exceeds 65535 CTA rows";
  return std::nullopt;
}

std::vector<ConvTileKind> conv_tile_order(const ConvGeometry& g, int multiprocessors) {
  const std::int64_t sms = std::max(1, multiprocessors);
  // Measured on an H200 (docs/PERFORMANCE.md, "Convolution (cuda)"): 128x64 (three CTAs per SM)
  // beat 256x64 and 128x128 wherever it made two CTAs per SM; below that 64x64 tiles won, their
  // reduction split across CTAs only when it is deep (splitting a 9-step reduction cost more
  // in its extra kernels than it gained).
  std::vector<ConvTileKind> out;
  if (tiles_of<Tile128x64>(g) >= 2 * sms)
    out = {ConvTileKind::t128x64, ConvTileKind::t64x64_splitk};
  else out = {ConvTileKind::t64x64_splitk, ConvTileKind::t128x64};
  out.push_back(g.og <= 64 ? ConvTileKind::t256x64 : ConvTileKind::t128x128);
  out.push_back(g.og <= 64 ? ConvTileKind::t128x128 : ConvTileKind::t256x64);
  std::erase_if(out, [&](ConvTileKind k) {
    switch (k) {
      case ConvTileKind::t256x64: return !grid_holds<Tile256x64>(g);
      case ConvTileKind::t128x128: return !grid_holds<Tile128x128>(g);
      case ConvTileKind::t128x64: return !grid_holds<Tile128x64>(g);
      case ConvTileKind::t64x64_splitk: return !grid_holds<Tile64x64>(g);
    }
    return true;
  });
  return out;
}

int conv_splits(const ConvGeometry& g, ConvTileKind tile, int multiprocessors) {
  if (tile != ConvTileKind::t64x64_splitk) return 1;
  const std::int64_t tiles = tiles_of<Tile64x64>(g), k_tiles = g.kp / 64;
  const std::int64_t want = 2 * std::max(1, multiprocessors);
  if (tiles >= want || k_tiles < kMinSplitSteps) return 1;
  // At least four steps per split, at most 65535 splits.
  const std::int64_t s = std::min({(want + tiles - 1) / tiles, k_tiles / 4, std::int64_t{65535}});
  return static_cast<int>(std::max<std::int64_t>(1, s));
}

void launch_conv_igemm_pipelined(const std::uint8_t* x, const std::int8_t* packed,
                                 const ConvGeometry& g, const ConvEpilogue& e, ConvTileKind tile,
                                 int splits, std::int32_t* partial, std::int32_t* partial_xsum,
                                 int device, cudaStream_t stream) {
  if (g.n * g.oh * g.ow <= 0 || g.og <= 0) return;
  switch (tile) {
    case ConvTileKind::t256x64:
      launch_tile<Tile256x64>(x, packed, g, e, 1, partial, partial_xsum, device, stream);
      break;
    case ConvTileKind::t128x128:
      launch_tile<Tile128x128>(x, packed, g, e, 1, partial, partial_xsum, device, stream);
      break;
    case ConvTileKind::t128x64:
      launch_tile<Tile128x64>(x, packed, g, e, 1, partial, partial_xsum, device, stream);
      break;
    case ConvTileKind::t64x64_splitk:
      if (splits > 1)
        launch_tile<Tile64x64Split>(x, packed, g, e, splits, partial, partial_xsum, device, stream);
      else launch_tile<Tile64x64>(x, packed, g, e, 1, partial, partial_xsum, device, stream);
      break;
  }
}

}  // namespace qforge::cuda
