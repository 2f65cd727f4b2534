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

// The 32 output pixels of a block: per row its image's first byte in X and the input row and
// column under the window's first tap; per A tile its rows in use and whether they lie in one
// output row (consecutive columns, so the tile may be one strided load).
struct BlockRows {
  std::int64_t image[32], ih[32], iw[32];
  int valid[2];
  bool one_row[2];

  BlockRows(const qforge::cpu_x86::IconvArgs& a, const qforge::cpu_x86::IconvBlock& blk) {
    const std::int64_t pixels = a.out_h * a.out_w;
    std::int64_t n = blk.p0 / pixels, oh = blk.p0 % pixels / a.out_w, ow = blk.p0 % a.out_w;
    std::int64_t row_of[32];
    for (int r = 0; r < blk.rows; ++r) {
      image[r] = n * a.h * a.w * a.c;
      ih[r] = oh * a.stride_h - a.pad_top;
      iw[r] = ow * a.stride_w - a.pad_left;
      row_of[r] = n * a.out_h + oh;
      if (++ow == a.out_w) {
        ow = 0;
        if (++oh == a.out_h) oh = 0, ++n;
      }
    }
    for (int t = 0; t < 2; ++t) {
      valid[t] = std::clamp(blk.rows - 16 * t, 0, 16);
      one_row[t] = valid[t] > 0 && row_of[16 * t] == row_of[16 * t + valid[t] - 1];
    }
  }
};

// Row r of a gathered tile: 64 bytes of input pixel (ih, iw) of the image at `image` from
// channel 64 cb (the pad byte past C), or 64 pad bytes when the pixel is outside the input.
inline void gather_row(const qforge::cpu_x86::IconvArgs& a, std::int64_t image, std::int64_t ih,
                       std::int64_t iw, std::int64_t cb, std::uint8_t* dst) {
  if (ih < 0 || ih >= a.h || iw < 0 || iw >= a.w) {
    std::memset(dst, a.pad, 64);
    return;
  }
  const std::uint8_t* src = a.x + image + (ih * a.w + iw) * a.c + cb * 64;
  const std::int64_t bytes = std::min<std::int64_t>(64, a.c - cb * 64);
  if (bytes == 64) {  // a whole channel block: fixed-size copies the compiler unrolls
    if (a.x_flip)
      for (int i = 0; i < 64; ++i) dst[i] = static_cast<std::uint8_t>(src[i] ^ 0x80);
    else std::memcpy(dst, src, 64);
    return;
  }
  if (a.x_flip)
    for (std::int64_t i = 0; i < bytes; ++i) dst[i] = static_cast<std::uint8_t>(src[i] ^ 0x80);
  else std::memcpy(dst, src, static_cast<std::size_t>(bytes));
  std::memset(dst + bytes, a.pad, static_cast<std::size_t>(64 - bytes));
}

// A tile t of the block for tap (kh, kw) and channel block cb: straight from X when its pixels
// lie in one output row (or, in a stride-1 'same' convolution, in any rows), inside the input and
// inside X's bytes; a tile of pad bytes when they lie in one output row whose input row is
// outside the input; else gathered into buf.
inline qforge::cpu_x86::IconvTile a_tile(const qforge::cpu_x86::IconvArgs& a, const BlockRows& br,
                                         int t, std::int64_t kh, std::int64_t kw, std::int64_t cb,
                                         std::uint8_t* buf) {
  const int r0 = 16 * t, valid = br.valid[t];
  const std::int64_t dh = kh * a.dilation_h, dw = kw * a.dilation_w;
  if (br.one_row[t]) {
    const std::int64_t ih = br.ih[r0] + dh;
    if (ih < 0 || ih >= a.h) return {a.pad_tile, 64};
    const std::int64_t iw_first = br.iw[r0] + dw;
    const std::int64_t iw_last = iw_first + (valid - 1) * a.stride_w;
    const std::int64_t row_stride = a.stride_w * a.c;
    const std::int64_t off = br.image[r0] + (ih * a.w + iw_first) * a.c + cb * 64;
    if (!a.x_flip && iw_first >= 0 && iw_last < a.w && off + 15 * row_stride + 64 <= a.x_bytes)
      return {a.x + off, row_stride};
  }
  if (a.c - cb * 64 >= 64) {
    // Stride 1 with the output as large as the input (a 'same' convolution): pixel p of the
    // batch lies at byte p * C of X, so consecutive pixels stay C bytes apart across output
    // rows and images, and a tile of two output rows is still one strided load when none of
    // its pixels is in the padding (every tap but those of the first and last column).
    if (br.one_row[t] == false && valid == 16 && !a.x_flip && a.stride_h == 1 && a.stride_w == 1 &&
        a.h == a.out_h && a.w == a.out_w) {
      bool inside = true;
      for (int r = 0; r < 16; ++r)
        inside = inside &&
                 static_cast<std::uint64_t>(br.ih[r0 + r] + dh) < static_cast<std::uint64_t>(a.h) &&
                 static_cast<std::uint64_t>(br.iw[r0 + r] + dw) < static_cast<std::uint64_t>(a.w);
      const std::int64_t off =
          br.image[r0] + ((br.ih[r0] + dh) * a.w + br.iw[r0] + dw) * a.c + cb * 64;
      if (inside && off + 15 * a.c + 64 <= a.x_bytes) return {a.x + off, a.c};
    }
    // A whole channel block: each row is 64 bytes of X or of the pad tile, chosen without a
    // branch (which rows lie in the padding changes from tap to tap) and copied at a fixed size.
    for (int r = 0; r < 16; ++r) {
      const std::uint8_t* src = a.pad_tile;
      if (r < valid) {
        const auto ih = static_cast<std::uint64_t>(br.ih[r0 + r] + dh);
        const auto iw = static_cast<std::uint64_t>(br.iw[r0 + r] + dw);
        if (ih < static_cast<std::uint64_t>(a.h) && iw < static_cast<std::uint64_t>(a.w))
          src = a.x + br.image[r0 + r] +
                (static_cast<std::int64_t>(ih) * a.w + static_cast<std::int64_t>(iw)) * a.c +
                cb * 64;
      }
      if (a.x_flip && src != a.pad_tile)
        for (int i = 0; i < 64; ++i) buf[r * 64 + i] = static_cast<std::uint8_t>(src[i] ^ 0x80);
      else std::memcpy(buf + r * 64, src, 64);
    }
    return {buf, 64};
  }
  for (int r = 0; r < 16; ++r) {
    if (r >= valid) std::memset(buf + r * 64, a.pad, 64);
    else gather_row(a, br.image[r0 + r], br.ih[r0 + r] + dh, br.iw[r0 + r] + dw, cb, buf + r * 64);
  }
  return {buf, 64};
}

template <class Tiles, int MT, int NT>
void iconv_pair(const qforge::cpu_x86::IconvArgs& a, const qforge::cpu_x86::IconvBlock& blk,
                const qforge::cpu_x86::IconvTile* table, std::int64_t panel) {
  Tiles::template init<MT, NT>(a.c_init + panel * 256, a.c_init + (panel + 1) * 256);
  const std::int8_t* b0 = a.b + panel * a.steps * 1024;
  const std::int8_t* b1 = b0 + a.steps * 1024;
  for (std::int64_t s = 0; s < a.steps; ++s) {
    const qforge::cpu_x86::IconvTile& t0 = table[2 * s];
    const qforge::cpu_x86::IconvTile& t1 = table[2 * s + 1];
    Tiles::template step<MT, NT>(t0.p, t0.stride, t1.p, t1.stride, b0 + s * 1024, b1 + s * 1024);
  }
  Tiles::template store<MT, NT>(blk.acc + (panel - blk.panel0) * 16, blk.ld * 4);
}

template <class Tiles>
void iconv_block(const qforge::cpu_x86::IconvArgs& a, const qforge::cpu_x86::IconvBlock& blk) {
  const BlockRows br(a, blk);
  const bool two_rows = blk.rows > 16;
  // The A tiles of every step (kh, kw, cb), decided and gathered once for all panel pairs:
  // table[2 s + t], gathered tiles at scratch + (2 s + t) KiB.
  auto* table = reinterpret_cast<qforge::cpu_x86::IconvTile*>(blk.scratch + a.steps * 2048);
  std::int64_t s = 0;
  for (std::int64_t kh = 0; kh < a.kh; ++kh)
    for (std::int64_t kw = 0; kw < a.kw; ++kw)
      for (std::int64_t cb = 0; cb < a.cblocks; ++cb, ++s) {
        table[2 * s] = a_tile(a, br, 0, kh, kw, cb, blk.scratch + s * 2048);
        table[2 * s + 1] =
            two_rows ? a_tile(a, br, 1, kh, kw, cb, blk.scratch + s * 2048 + 1024) : table[2 * s];
      }
  for (std::int64_t p = blk.panel0; p < blk.panel0 + blk.panels; p += 2) {
    const bool two_cols = blk.panel0 + blk.panels - p >= 2;
    if (two_rows) {
      if (two_cols) iconv_pair<Tiles, 2, 2>(a, blk, table, p);
      else iconv_pair<Tiles, 2, 1>(a, blk, table, p);
    } else {
      if (two_cols) iconv_pair<Tiles, 1, 2>(a, blk, table, p);
      else iconv_pair<Tiles, 1, 1>(a, blk, table, p);
    }
  }
}
