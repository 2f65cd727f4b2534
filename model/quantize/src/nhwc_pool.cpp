#include "nhwc_pool.h"

#include <algorithm>
#include <cstring>
#include <limits>

namespace qforge::model::quantize {
namespace {

// The channel loop is contiguous: compiled for AVX2 and for the baseline, picked at load time.
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define QFORGE_NHWC_POOL_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define QFORGE_NHWC_POOL_CLONES
#endif

template <typename T>
[[gnu::always_inline]] inline void pool(const T* x, T* y, std::int64_t n, std::int64_t h,
                                        std::int64_t w, std::int64_t c, std::int64_t oh_n,
                                        std::int64_t ow_n, const PoolWindow& p) {
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
