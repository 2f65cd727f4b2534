// The implicit-GEMM convolution block (conv_implicit.h) written once over its tile operations,
// so that the AMX kernel and its emulation share every address and gather decision. Each
// variant's translation unit includes it inside its anonymous namespace, after <algorithm>,
// <cstring> and conv_implicit.h (ISA code must not be shared across translation units compiled
// with different flags, so nothing here may become one linker-merged inline function).
//
// Tiles: C tiles 0-3 ([2 row tiles][2 column tiles] of 16 x 16 int32), A tiles 4-5, B tiles
// 6-7, as in gemm_amx.cpp. The Tiles class provides, for MT row tiles and NT column tiles:
//   init<MT, NT>(c0, c1) (load the C tiles from 1 KiB each: column tile 0 from c0, 1 from c1),
//   step<MT, NT>(a0, a0_stride, a1, a1_stride, b0, b1) (load the A tiles from
//   their rows, the B tiles from 1 KiB each, multiply-add), store<MT, NT>(d, ld_bytes).
#pragma once

struct TileSource {
  const std::uint8_t* p;
  std::int64_t stride;
};

// The 16 rows of the A tile of output pixels (oh, ow_first + r), r < valid, for the tap whose
// input row is ih and first input column iw_first, channel block cb.
inline TileSource a_tile(const qforge::cpu_x86::IconvArgs& a, std::int64_t ih,
                         std::int64_t iw_first, int valid, std::int64_t cb, std::uint8_t* buf) {
  if (ih < 0 || ih >= a.h || valid <= 0) return {a.pad_tile, 64};
  const std::int64_t iw_last = iw_first + (valid - 1) * a.stride_w;
  const std::int64_t row_stride = a.stride_w * a.c;
  const std::int64_t off = (ih * a.w + iw_first) * a.c + cb * 64;
  if (!a.x_flip && iw_first >= 0 && iw_last < a.w && off + 15 * row_stride + 64 <= a.x_bytes)
    return {a.x + off, row_stride};
  const std::int64_t bytes = std::min<std::int64_t>(64, a.c - cb * 64);
  for (int r = 0; r < 16; ++r) {
    std::uint8_t* dst = buf + r * 64;
    const std::int64_t iw = iw_first + r * a.stride_w;
    if (r >= valid || iw < 0 || iw >= a.w) {
      std::memset(dst, a.pad, 64);
      continue;
    }
    const std::uint8_t* src = a.x + (ih * a.w + iw) * a.c + cb * 64;
    if (a.x_flip)
      for (std::int64_t i = 0; i < bytes; ++i) dst[i] = static_cast<std::uint8_t>(src[i] ^ 0x80);
    else std::memcpy(dst, src, static_cast<std::size_t>(bytes));
    std::memset(dst + bytes, a.pad, static_cast<std::size_t>(64 - bytes));
  }
  return {buf, 64};
}

template <class Tiles, int MT, int NT>
void iconv_pair(const qforge::cpu_x86::IconvArgs& a, const qforge::cpu_x86::IconvBlock& blk,
                std::int64_t panel) {
  Tiles::template init<MT, NT>(a.c_init + panel * 256, a.c_init + (panel + 1) * 256);
  const std::int8_t* b0 = a.b + panel * a.steps * 1024;
  const std::int8_t* b1 = b0 + a.steps * 1024;
  const int valid0 = std::min(16, blk.rows), valid1 = blk.rows - 16;
  std::int64_t s = 0;
  for (std::int64_t kh = 0; kh < a.kh; ++kh) {
    const std::int64_t ih = blk.oh * a.stride_h - a.pad_top + kh * a.dilation_h;
    for (std::int64_t kw = 0; kw < a.kw; ++kw) {
      const std::int64_t iw0 = blk.ow0 * a.stride_w - a.pad_left + kw * a.dilation_w;
      for (std::int64_t cb = 0; cb < a.cblocks; ++cb, ++s) {
        const TileSource t0 = a_tile(a, ih, iw0, valid0, cb, blk.gather);
        TileSource t1 = t0;
        if (MT > 1) t1 = a_tile(a, ih, iw0 + 16 * a.stride_w, valid1, cb, blk.gather + 1024);
        Tiles::template step<MT, NT>(t0.p, t0.stride, t1.p, t1.stride, b0 + s * 1024,
                                     b1 + s * 1024);
      }
    }
  }
  Tiles::template store<MT, NT>(blk.acc + (panel - blk.panel0) * 16, blk.ld * 4);
}

template <class Tiles>
void iconv_block(const qforge::cpu_x86::IconvArgs& a, const qforge::cpu_x86::IconvBlock& blk) {
  const bool two_rows = blk.rows > 16;
  for (std::int64_t p = blk.panel0; p < blk.panel0 + blk.panels; p += 2) {
    const bool two_cols = blk.panel0 + blk.panels - p >= 2;
    if (two_rows) {
      if (two_cols) iconv_pair<Tiles, 2, 2>(a, blk, p);
      else iconv_pair<Tiles, 2, 1>(a, blk, p);
    } else {
      if (two_cols) iconv_pair<Tiles, 1, 2>(a, blk, p);
      else iconv_pair<Tiles, 1, 1>(a, blk, p);
    }
  }
}
