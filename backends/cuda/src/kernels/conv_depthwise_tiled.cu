// The tiled depthwise convolution (conv.h): a CTA computes 8 output rows by 16 output columns
// of 32 output channels of one image. It first brings the input tile the window needs, halo
// included, into shared memory (16-byte loads when C % 16 == 0 and the channel multiplier is 1,
// so that the 32 channels are two aligned chunks of each pixel; byte loads otherwise), with zx
// where the window reads padding, and the weights less their zero points as int32. Warp r then
// computes row r: lane l channel l, 16 outputs along the row, from shared memory only. With
// padding holding zx, acc = sum x * w' - zx * sum w' over every tap is the reference's
// sum (x - zx) * w' exactly (int32 wrap-around; the reduction bound keeps the result in int32).
#include <algorithm>

#include "check.h"
#include "kernels/conv.h"
#include "kernels/conv_epilogue.cuh"

namespace qforge::cuda {
namespace {

constexpr int kRows = 8, kCols = 16, kChannels = 32, kThreads = kRows * 32;
// The sums pass through shared memory to the store loop: indexed by a loop counter, an array
// in registers would live in local memory for the whole reduction.
constexpr int kStaged = kThreads * kCols * 4;

struct DwTile {
  int in_rows, in_cols;  // the input tile, halo included
  int x_bytes;           // in_rows * in_cols * kChannels, rounded up to 16
};

DwTile dw_tile(const ConvGeometry& g) {
  DwTile t;
  t.in_rows = static_cast<int>((kRows - 1) * g.stride_h + (g.kh - 1) * g.dilation_h + 1);
  t.in_cols = static_cast<int>((kCols - 1) * g.stride_w + (g.kw - 1) * g.dilation_w + 1);
  t.x_bytes = (t.in_rows * t.in_cols * kChannels + 15) / 16 * 16;
  return t;
}

std::int64_t dw_smem(const ConvGeometry& g) {
  const std::int64_t rows = (kRows - 1) * g.stride_h + (g.kh - 1) * g.dilation_h + 1;
  const std::int64_t cols = (kCols - 1) * g.stride_w + (g.kw - 1) * g.dilation_w + 1;
  return (rows * cols * kChannels + 15) / 16 * 16 + g.kh * g.kw * kChannels * 4 + kChannels * 4 +
         kStaged;
}

// kStrideW: the horizontal stride when it is 1 (the loads of a row then use constant offsets),
// 0 for any other, read from g.
template <bool kUnsignedX, bool kUnsignedW, int kStrideW>
__global__ void __launch_bounds__(kThreads)
    depthwise_tiled_kernel(const std::uint8_t* __restrict__ x, const std::uint8_t* __restrict__ w,
                           IntVec zw, const __grid_constant__ ConvGeometry g,
                           const __grid_constant__ ConvEpilogue e, DwTile t, bool vector) {
  extern __shared__ __align__(16) std::uint8_t smem[];
  std::uint8_t* const sx = smem;
  const int taps = static_cast<int>(g.kh * g.kw);
  std::int32_t* const sw = reinterpret_cast<std::int32_t*>(smem + t.x_bytes);  // [taps, 32]
  std::int32_t* const swsum = sw + taps * kChannels;                           // [32]
  std::int32_t* const staged = swsum + kChannels;  // [kCols, kThreads]: the sums to store

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int col_tiles = static_cast<int>((g.ow + kCols - 1) / kCols);
  const int oh0 = static_cast<int>(blockIdx.x) / col_tiles * kRows;
  const int ow0 = (static_cast<int>(blockIdx.x) % col_tiles) * kCols;
  const std::int64_t o0 = static_cast<std::int64_t>(blockIdx.y) * kChannels;
  const std::int64_t mult = g.og;  // output channels per input channel
  const std::int64_t ci0 = o0 / mult;
  const int ih0 = oh0 * static_cast<int>(g.stride_h) - static_cast<int>(g.pad_top);
  const int iw0 = ow0 * static_cast<int>(g.stride_w) - static_cast<int>(g.pad_left);
  const int h = static_cast<int>(g.h), wd = static_cast<int>(g.w);
  const std::uint8_t zx = static_cast<std::uint8_t>(e.zx & 0xFF);

  // Weights of this thread's channel less its zero point, and their sum.
  for (int i = tid; i < taps * kChannels; i += kThreads) {
    const int tap = i / kChannels, cl = i % kChannels;
    const std::int64_t o = o0 + cl;
    std::int32_t v = 0;
    if (o < g.o) {
      const std::uint8_t b = __ldg(w + o * taps + tap);
      v = (kUnsignedW ? static_cast<std::int32_t>(b)
                      : static_cast<std::int32_t>(static_cast<std::int8_t>(b))) -
          dev::at(zw, o);
    }
    sw[i] = v;
  }

  for (std::int64_t image = blockIdx.z; image < g.n; image += gridDim.z) {
    const std::uint8_t* xn = x + image * g.h * g.w * g.c;
    __syncthreads();  // the previous image's reads of the tile are done
    if (vector) {
      // C % 16 == 0, multiplier 1: two aligned 16-byte chunks per pixel.
      const int chunks = t.in_rows * t.in_cols * 2;
      for (int i = tid; i < chunks; i += kThreads) {
        const int pix = i >> 1, half = i & 1;
        const int ih = ih0 + pix / t.in_cols, iw = iw0 + pix % t.in_cols;
        const std::int64_t ci = ci0 + half * 16;
        uint4 v;
        if (ci >= g.c) v = make_uint4(0, 0, 0, 0);
        else if (ih >= 0 && ih < h && iw >= 0 && iw < wd)
          v = __ldg(reinterpret_cast<const uint4*>(
              xn + (static_cast<std::int64_t>(ih) * wd + iw) * g.c + ci));
        else {
          const std::uint32_t f = static_cast<std::uint32_t>(zx) * 0x01010101u;
          v = make_uint4(f, f, f, f);
        }
        *reinterpret_cast<uint4*>(sx + i * 16) = v;
      }
    } else {
      const int bytes = t.in_rows * t.in_cols * kChannels;
      for (int i = tid; i < bytes; i += kThreads) {
        const int pix = i / kChannels, cl = i % kChannels;
        const int ih = ih0 + pix / t.in_cols, iw = iw0 + pix % t.in_cols;
        const std::int64_t ci = ci0 + cl;
        std::uint8_t v = zx;
        if (ci >= g.c) v = 0;
        else if (ih >= 0 && ih < h && iw >= 0 && iw < wd)
          v = __ldg(xn + (static_cast<std::int64_t>(ih) * wd + iw) * g.c + ci);
        sx[i] = v;
      }
    }
    if (image == blockIdx.z && tid < kChannels) {
      std::int32_t s = 0;
      for (int tap = 0; tap < taps; ++tap) s += sw[tap * kChannels + tid];
      swsum[tid] = s;
    }
    __syncthreads();

    const std::int64_t o = o0 + lane;
    const int oh = oh0 + warp;
    if (o >= g.o || oh >= g.oh) continue;
    const int cl = static_cast<int>(o / mult - ci0);  // this output's input channel in the tile
    std::int32_t acc[kCols] = {};
    const int sh = static_cast<int>(g.stride_h);
    const int sww = kStrideW > 0 ? kStrideW : static_cast<int>(g.stride_w);
    const int dh = static_cast<int>(g.dilation_h), dw = static_cast<int>(g.dilation_w);
    const int kw_n = static_cast<int>(g.kw);
    for (int tap = 0; tap < taps; ++tap) {
      const int kh = tap / kw_n, kw = tap - kh * kw_n;
      const std::int32_t wv = sw[tap * kChannels + lane];
      const std::uint8_t* row = sx + ((warp * sh + kh * dh) * t.in_cols + kw * dw) * kChannels + cl;
#pragma unroll
      for (int j = 0; j < kCols; ++j) {
        const std::uint8_t b = row[j * sww * kChannels];
        const std::int32_t xv = kUnsignedX ? static_cast<std::int32_t>(b)
                                           : static_cast<std::int32_t>(static_cast<std::int8_t>(b));
        acc[j] += xv * wv;
      }
    }
    const std::int32_t correction = e.zx * swsum[lane];
    const std::int64_t pixels = g.oh * g.ow;
    const std::int64_t m_row = image * pixels + static_cast<std::int64_t>(oh) * g.ow;
#pragma unroll
    for (int j = 0; j < kCols; ++j) staged[j * kThreads + tid] = acc[j];
    const dev::ConvColumn column = dev::conv_column(e, o);
#pragma unroll 1
    for (int j = 0; j < kCols; ++j) {
      if (ow0 + j >= g.ow) break;
      const std::int32_t v =
          static_cast<std::int32_t>(static_cast<std::uint32_t>(staged[j * kThreads + tid]) -
                                    static_cast<std::uint32_t>(correction));
      dev::conv_put(e, dev::conv_index(e, pixels, g.o, m_row + ow0 + j, o),
                    dev::conv_output(e, column, v, 0));
    }
  }
}

template <int kStrideW>
void launch_dw(const std::uint8_t* x, const std::uint8_t* w, bool w_unsigned, IntVec zw,
               const ConvGeometry& g, const ConvEpilogue& e, const DwTile& t, bool vector,
               dim3 grid, std::size_t smem, cudaStream_t stream) {
  if (g.x_unsigned && w_unsigned)
    depthwise_tiled_kernel<true, true, kStrideW>
        <<<grid, kThreads, smem, stream>>>(x, w, zw, g, e, t, vector);
  else if (g.x_unsigned)
    depthwise_tiled_kernel<true, false, kStrideW>
        <<<grid, kThreads, smem, stream>>>(x, w, zw, g, e, t, vector);
  else if (w_unsigned)
    depthwise_tiled_kernel<false, true, kStrideW>
        <<<grid, kThreads, smem, stream>>>(x, w, zw, g, e, t, vector);
  else
    depthwise_tiled_kernel<false, false, kStrideW>
        <<<grid, kThreads, smem, stream>>>(x, w, zw, g, e, t, vector);
}

}  // namespace

std::optional<std::string> conv_depthwise_tiled_refusal(const ConvGeometry& g) {
  if (g.groups != g.c || g.c <= 0) return std::string("not depthwise (groups != C)");
  if (dw_smem(g) > 48 * 1024)
    return "the input tile with its halo and the weights need " + std::to_string(dw_smem(g)) +
           " bytes of shared memory (kernel, stride and dilation too large); at most 49152";
  if ((g.oh + kRows - 1) / kRows * ((g.ow + kCols - 1) / kCols) > 0x7FFFFFFF ||
      (g.o + kChannels - 1) / kChannels > 65535)
    return "the output (OH * OW / 128 tiles, O / 32 channel blocks) exceeds the grid";
  return std::nullopt;
}

void launch_conv_depthwise_tiled(const std::uint8_t* x, const std::uint8_t* w, bool w_unsigned,
                                 IntVec zw, const ConvGeometry& g, const ConvEpilogue& e,
                                 cudaStream_t stream) {
  if (g.n * g.oh * g.ow * g.o <= 0) return;
  const DwTile t = dw_tile(g);
  const bool vector =
      g.c % 16 == 0 && g.og == 1 && (reinterpret_cast<std::uintptr_t>(x) & 15u) == 0;
  const dim3 grid(static_cast<unsigned>((g.oh + kRows - 1) / kRows * ((g.ow + kCols - 1) / kCols)),
                  static_cast<unsigned>((g.o + kChannels - 1) / kChannels),
                  static_cast<unsigned>(std::min<std::int64_t>(g.n, 65535)));
  const auto smem = static_cast<std::size_t>(dw_smem(g));
  if (g.stride_w == 1) launch_dw<1>(x, w, w_unsigned, zw, g, e, t, vector, grid, smem, stream);
  else launch_dw<0>(x, w, w_unsigned, zw, g, e, t, vector, grid, smem, stream);
  check_launch("depthwise_tiled_kernel");
}

}  // namespace qforge::cuda
