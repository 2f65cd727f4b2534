// The convolution's operand preparation (NCHW to NHWC, weight packing) and the direct
// depthwise kernel on the CUDA cores.
#include <algorithm>

#include "check.h"
#include "kernels/conv.h"
#include "kernels/conv_epilogue.cuh"

namespace qforge::cuda {
namespace {

constexpr int kTile = 32;

// One 32x32 tile of one image's [C, P] plane to [P, C] through shared memory, so that both the
// reads and the writes run along contiguous bytes.
__global__ void __launch_bounds__(kTile * 8)
    nchw_to_nhwc_kernel(const std::uint8_t* __restrict__ src, std::int64_t c, std::int64_t pixels,
                        std::int64_t images, std::uint8_t* __restrict__ dst) {
  __shared__ std::uint8_t tile[kTile][kTile + 4];
  const std::int64_t p0 = static_cast<std::int64_t>(blockIdx.x) * kTile;
  const std::int64_t c0 = static_cast<std::int64_t>(blockIdx.y) * kTile;
  for (std::int64_t image = blockIdx.z; image < images; image += gridDim.z) {
    const std::uint8_t* s = src + image * c * pixels;
    std::uint8_t* d = dst + image * c * pixels;
    for (int r = threadIdx.y; r < kTile; r += 8) {
      const std::int64_t ci = c0 + r, p = p0 + threadIdx.x;
      if (ci < c && p < pixels) tile[r][threadIdx.x] = s[ci * pixels + p];
    }
    __syncthreads();
    for (int r = threadIdx.y; r < kTile; r += 8) {
      const std::int64_t p = p0 + r, ci = c0 + threadIdx.x;
      if (ci < c && p < pixels) d[p * c + ci] = tile[threadIdx.x][r];
    }
    __syncthreads();
  }
}

__global__ void __launch_bounds__(256)
    pack_weights_kernel(const std::uint8_t* __restrict__ w, std::uint32_t flip, ConvGeometry g,
                        std::int8_t* __restrict__ packed) {
  const std::int64_t total = g.o * g.kp;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t o = i / g.kp, k = i - o * g.kp;
    std::uint32_t v = 0;
    if (k < g.k) {
      const std::int64_t pos = k / g.cg, ci = k - pos * g.cg;  // pos = kh * KW + kw
      v = static_cast<std::uint32_t>(w[(o * g.cg + ci) * g.kh * g.kw + pos]) ^ flip;
    }
    packed[i] = static_cast<std::int8_t>(v & 0xFFu);
  }
}

template <bool kUnsignedX, bool kUnsignedW>
__global__ void __launch_bounds__(256)
    depthwise_kernel(const std::uint8_t* __restrict__ x, const std::uint8_t* __restrict__ w,
                     IntVec zw, ConvGeometry g, ConvEpilogue e) {
  const std::int64_t pixels = g.oh * g.ow;
  const std::int64_t total = g.n * pixels * g.o;
  const std::int32_t zx = e.zx;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t o = i % g.o, m = i / g.o;
    const std::int64_t n = m / pixels, p = m - n * pixels;
    const std::int64_t oh = p / g.ow, ow = p - oh * g.ow;
    const std::int64_t ci = o / g.og;  // the group's only input channel
    const std::int32_t z = dev::at(zw, o);
    const std::uint8_t* wo = w + o * g.kh * g.kw;
    const std::uint8_t* xn = x + n * g.h * g.w * g.c + ci;
    std::int32_t acc = 0;
    for (std::int64_t kh = 0; kh < g.kh; ++kh) {
      const std::int64_t ih = oh * g.stride_h - g.pad_top + kh * g.dilation_h;
      if (ih < 0 || ih >= g.h) continue;
      for (std::int64_t kw = 0; kw < g.kw; ++kw) {
        const std::int64_t iw = ow * g.stride_w - g.pad_left + kw * g.dilation_w;
        if (iw < 0 || iw >= g.w) continue;
        const std::uint8_t xb = __ldg(xn + (ih * g.w + iw) * g.c);
        const std::uint8_t wb = __ldg(wo + kh * g.kw + kw);
        const std::int32_t xv = kUnsignedX
                                    ? static_cast<std::int32_t>(xb)
                                    : static_cast<std::int32_t>(static_cast<std::int8_t>(xb));
        const std::int32_t wv = kUnsignedW
                                    ? static_cast<std::int32_t>(wb)
                                    : static_cast<std::int32_t>(static_cast<std::int8_t>(wb));
        acc += (xv - zx) * (wv - z);  // exact: the reduction is within the int32-safe bound
      }
    }
    dev::conv_store_inline(e, pixels, g.o, m, o, acc, 0);
  }
}

unsigned grid_for(std::int64_t total, int threads) {
  return static_cast<unsigned>(std::min<std::int64_t>((total + threads - 1) / threads, 1 << 20));
}

}  // namespace

void launch_nchw_to_nhwc(const std::uint8_t* src, std::int64_t n, std::int64_t c,
                         std::int64_t pixels, std::uint8_t* dst, cudaStream_t stream) {
  if (n <= 0 || c <= 0 || pixels <= 0) return;
  const dim3 grid(static_cast<unsigned>((pixels + kTile - 1) / kTile),
                  static_cast<unsigned>((c + kTile - 1) / kTile),
                  static_cast<unsigned>(std::min<std::int64_t>(n, 65535)));
  nchw_to_nhwc_kernel<<<grid, dim3(kTile, 8), 0, stream>>>(src, c, pixels, n, dst);
  check_launch("nchw_to_nhwc_kernel");
}

void launch_pack_conv_weights(const std::uint8_t* w, bool flip_sign, const ConvGeometry& g,
                              std::int8_t* packed, cudaStream_t stream) {
  const std::int64_t total = g.o * g.kp;
  if (total <= 0) return;
  pack_weights_kernel<<<grid_for(total, 256), 256, 0, stream>>>(w, flip_sign ? 0x80u : 0u, g,
                                                                packed);
  check_launch("pack_weights_kernel");
}

void launch_conv_depthwise(const std::uint8_t* x, const std::uint8_t* w, bool w_unsigned, IntVec zw,
                           const ConvGeometry& g, const ConvEpilogue& e, cudaStream_t stream) {
  const std::int64_t total = g.n * g.oh * g.ow * g.o;
  if (total <= 0) return;
  const unsigned grid = grid_for(total, 256);
  if (g.x_unsigned && w_unsigned)
    depthwise_kernel<true, true><<<grid, 256, 0, stream>>>(x, w, zw, g, e);
  else if (g.x_unsigned) depthwise_kernel<true, false><<<grid, 256, 0, stream>>>(x, w, zw, g, e);
  else if (w_unsigned) depthwise_kernel<false, true><<<grid, 256, 0, stream>>>(x, w, zw, g, e);
  else depthwise_kernel<false, false><<<grid, 256, 0, stream>>>(x, w, zw, g, e);
  check_launch("depthwise_kernel");
}

}  // namespace qforge::cuda
