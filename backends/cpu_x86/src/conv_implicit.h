// The implicit-GEMM convolution kernels (one group, NHWC input): the A tiles of the GEMM are
// loaded straight from the input rows of each kernel tap, with no im2col buffer and no packing
// pass, and the int32 sums of a block of output pixels stay in tile registers across every tap
// and channel block (docs/CPU_X86.md, "Convolution").
//
// Geometry: a block is up to 32 output pixels of one output row (two A tiles of 16 pixels,
// ow0 .. ow0 + 31) against up to `panels` panels of 16 output channels, two at a time. For tap
// (kh, kw) and channel block cb the 16 rows of an A tile are the input pixels
// (ih, iw0 + r * stride_w), bytes [64 cb, 64 cb + 64) of each: when every pixel of the tile is
// inside the input, that is one tile load from X with a row stride of stride_w * C bytes
// (overlapping rows when C < 64; the bytes past C meet zero weights). A tile with a pixel
// outside the input is gathered into a 1 KiB buffer first, the pad byte (zx) in its place; a tap
// whose input row is outside the input reads a tile of pad bytes. int8 X is always gathered,
// with its sign bit flipped into the u8 domain that tdpbusd multiplies.
//
// Weights (ConvWeights, conv.cpp): OIHW reordered to [O][KH][KW][C rounded up to 64], the
// padding zero, then packed as panels of 16 channels of 1 KiB tiles in the VNNI layout, step
// s = tap * cblocks + cb: byte ((p * steps + s) * 16 + g) * 64 + j * 4 + t holds
// W_s8[o = 16 p + j][k = 64 s + 4 g + t] (uint8 weights stored as w - 128).
//
// The kernels write D plus the per-channel compensation constants (c_init); the driver
// (conv.cpp) adds the row-sum term where the weights need it and runs the epilogue on the block
// while it is in cache.
#pragma once

#include <cstdint>

namespace qforge::cpu_x86 {

struct IconvArgs {
  const std::uint8_t* x;         // the image's (or flattened batch's) first pixel, NHWC
  std::int64_t x_bytes;          // bytes readable from x (a direct tile load must stay inside)
  bool x_flip;                   // int8 X: gather with the sign bit flipped (u8 domain)
  std::uint8_t pad;              // the padding byte in the u8 domain
  const std::uint8_t* pad_tile;  // 1 KiB of pad bytes
  const std::int8_t* b;          // packed weights (above)
  // Per panel a 16 x 16 int32 tile whose rows all hold the panel's compensation constants: the
  // sum tiles start from it instead of zero, so the block leaves the kernel compensated (but
  // for the row-sum term, conv.h's ImplicitWeights).
  const std::int32_t* c_init;
  std::int64_t steps;  // KH * KW * cblocks: 1 KiB tiles per panel
  std::int64_t c, cblocks, h, w, kh, kw;
  std::int64_t stride_h, stride_w, dilation_h, dilation_w, pad_top, pad_left;
};

// One block: output pixels (oh, ow0 .. ow0 + rows - 1), 1 <= rows <= 32, against panels
// [panel0, panel0 + panels). Writes D + c_init to acc ([32][ld] int32: 16 rows, or 32 when rows >
// 16; panel p in columns (p - panel0) * 16 ..). gather: 2 KiB of scratch.
struct IconvBlock {
  std::int64_t oh, ow0;
  int rows;
  std::int64_t panel0, panels;
  std::int32_t* acc;
  std::int64_t ld;
  std::uint8_t* gather;
};

using IconvFn = void (*)(const IconvArgs&, const IconvBlock&);

// AMX-INT8 (conv_implicit_amx.cpp; needs amx_begin() on the thread first).
void iconv_block_amx(const IconvArgs& a, const IconvBlock& blk);
// The same algorithm with the tile registers emulated in memory (conv_implicit_scalar.cpp): runs
// on any x86-64, so the tile addressing, gathers and compensation are tested everywhere.
void iconv_block_scalar(const IconvArgs& a, const IconvBlock& blk);

}  // namespace qforge::cpu_x86
