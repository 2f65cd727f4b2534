#include "nhwc_pool.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>

namespace qforge::model::quantize {
namespace {

// The channel loop is contiguous: compiled for AVX2 and for the baseline, picked at load time.
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define QFORGE_NHWC_POOL_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define QFORGE_NHWC_POOL_CLONES
#endif

// The common 2x2 stride-2 window, unpadded and inside the input, with channels in blocks of 16
// (one 16-byte vector): the max of each row pair first (one contiguous pass over the pair),
// then of each column pair of that, 16 channels at a time. The max of codes is exact, so the
// order of the four taps does not change the result.
template <typename T>
[[gnu::always_inline]] inline void pool_2x2(const T* __restrict x, T* __restrict y, std::int64_t n,
                                            std::int64_t h, std::int64_t w, std::int64_t c,
                                            std::int64_t oh_n, std::int64_t ow_n) {
  constexpr std::int64_t kBlock = 16;
  thread_local std::vector<T> pair_row;
  pair_row.resize(static_cast<std::size_t>(w * c));
  T* __restrict v = pair_row.data();
  for (std::int64_t b = 0; b < n; ++b)
    for (std::int64_t oh = 0; oh < oh_n; ++oh) {
      const T* r0 = x + ((b * h + 2 * oh) * w) * c;
      const T* r1 = r0 + w * c;
      for (std::int64_t k = 0; k < 2 * ow_n * c; ++k) v[k] = std::max(r0[k], r1[k]);
      T* out = y + ((b * oh_n + oh) * ow_n) * c;
      for (std::int64_t ow = 0; ow < ow_n; ++ow)
        for (std::int64_t i0 = 0; i0 < c; i0 += kBlock)
          for (std::int64_t i = 0; i < kBlock; ++i)
            out[ow * c + i0 + i] = std::max(v[2 * ow * c + i0 + i], v[(2 * ow + 1) * c + i0 + i]);
    }
}

template <typename T>
[[gnu::always_inline]] inline void pool(const T* x, T* y, std::int64_t n, std::int64_t h,
                                        std::int64_t w, std::int64_t c, std::int64_t oh_n,
                                        std::int64_t ow_n, const PoolWindow& p) {
  if (p.kernel_h == 2 && p.kernel_w == 2 && p.stride_h == 2 && p.stride_w == 2 &&
      p.dilation_h == 1 && p.dilation_w == 1 && p.pad_top == 0 && p.pad_left == 0 &&
      2 * oh_n <= h && 2 * ow_n <= w && c % 16 == 0) {
    pool_2x2(x, y, n, h, w, c, oh_n, ow_n);
    return;
  }
  for (std::int64_t b = 0; b < n; ++b)
    for (std::int64_t oh = 0; oh < oh_n; ++oh)
      for (std::int64_t ow = 0; ow < ow_n; ++ow) {
        T* out = y + ((b * oh_n + oh) * ow_n + ow) * c;
        std::fill(out, out + c, std::numeric_limits<T>::lowest());
        for (std::int64_t kh = 0; kh < p.kernel_h; ++kh) {
          const std::int64_t ih = oh * p.stride_h - p.pad_top + kh * p.dilation_h;
          if (ih < 0 || ih >= h) continue;
          for (std::int64_t kw = 0; kw < p.kernel_w; ++kw) {
            const std::int64_t iw = ow * p.stride_w - p.pad_left + kw * p.dilation_w;
            if (iw < 0 || iw >= w) continue;
            const T* in = x + ((b * h + ih) * w + iw) * c;
            for (std::int64_t i = 0; i < c; ++i) out[i] = std::max(out[i], in[i]);
          }
        }
      }
}

QFORGE_NHWC_POOL_CLONES void pool_s8(const std::int8_t* x, std::int8_t* y, std::int64_t n,
                                     std::int64_t h, std::int64_t w, std::int64_t c,
                                     std::int64_t oh, std::int64_t ow, const PoolWindow& p) {
  pool(x, y, n, h, w, c, oh, ow, p);
}
QFORGE_NHWC_POOL_CLONES void pool_u8(const std::uint8_t* x, std::uint8_t* y, std::int64_t n,
                                     std::int64_t h, std::int64_t w, std::int64_t c,
                                     std::int64_t oh, std::int64_t ow, const PoolWindow& p) {
  pool(x, y, n, h, w, c, oh, ow, p);
}

}  // namespace

std::optional<PoolWindow> nhwc_pool_window(const Node& node) {
  if (node.op_type != "MaxPool") return std::nullopt;
  for (std::size_t i = 1; i < node.outputs.size(); ++i)
    if (!node.outputs[i].empty()) return std::nullopt;
  if (node.attr_int_or("storage_order", 0) != 0) return std::nullopt;
  const std::string auto_pad = node.attr_string_or("auto_pad", "NOTSET");
  if (auto_pad != "NOTSET" && auto_pad != "VALID") return std::nullopt;
  const auto kernel = node.attr_ints_or("kernel_shape", {});
  const auto strides = node.attr_ints_or("strides", {1, 1});
  const auto dilations = node.attr_ints_or("dilations", {1, 1});
  const auto pads = node.attr_ints_or("pads", {0, 0, 0, 0});
  if (kernel.size() != 2 || strides.size() != 2 || dilations.size() != 2 || pads.size() != 4)
    return std::nullopt;
  PoolWindow p{kernel[0],    kernel[1],    strides[0], strides[1],
               dilations[0], dilations[1], pads[0],    pads[1]};
  if (auto_pad == "VALID") p.pad_top = p.pad_left = 0;
  return p;
}

void max_pool_nhwc(const void* x, void* y, bool is_signed, std::int64_t n, std::int64_t h,
                   std::int64_t w, std::int64_t c, std::int64_t oh, std::int64_t ow,
                   const PoolWindow& window) {
  if (is_signed)
    pool_s8(static_cast<const std::int8_t*>(x), static_cast<std::int8_t*>(y), n, h, w, c, oh, ow,
            window);
  else
    pool_u8(static_cast<const std::uint8_t*>(x), static_cast<std::uint8_t*>(y), n, h, w, c, oh, ow,
            window);
}

}  // namespace qforge::model::quantize
