// The implicit-GEMM convolution kernels (one group, NHWC input): the A tiles of the GEMM are
// loaded straight from the input rows of each kernel tap, with no im2col buffer and no packing
// pass, and the int32 sums of a block of output pixels stay in tile registers across every tap
// and channel block (docs/CPU_X86.md, "Convolution").
//
// Geometry: a block is up to 32 consecutive output pixels of the batch in (image, output row,
// column) order, so a block may run across output rows and images and every tile row is used
// whatever the output width (two A tiles of 16 pixels), against up to `panels` panels of 16
// output channels, two at a time. For tap (kh, kw) and channel block cb, row r of an A tile is
// the input pixel under output pixel r of the tile, bytes [64 cb, 64 cb + 64) of it: when the
// tile's pixels lie in one output row and every one of them is inside the input, that is one
// tile load from X with a row stride of stride_w * C bytes (overlapping rows when C < 64; the
// bytes past C meet zero weights). In a stride-1 convolution whose output is as large as its
// input, consecutive pixels stay C bytes apart across output rows and images, so a tile of two
// output rows with no pixel in the padding is one such load too. Any other tile is gathered row
// by row into a 1 KiB buffer, the pad byte (zx) in place of a pixel outside the input; a one-row
// tile whose input row is outside the input reads a tile of pad bytes. int8 X is always gathered,
// with its sign bit flipped into the u8 domain that tdpbusd multiplies. Each block decides and
// gathers its A tiles once, into a table of every step's two tiles, and every pair of panels then
// reads that table.
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

// Where the 16 rows of an A tile come from: rows `stride` bytes apart from p.
struct IconvTile {
  const std::uint8_t* p;
  std::int64_t stride;
};

struct IconvArgs {
  const std::uint8_t* x;         // the batch's first pixel, NHWC
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
  std::int64_t out_h, out_w;  // output rows and columns of one image
  std::int64_t stride_h, stride_w, dilation_h, dilation_w, pad_top, pad_left;
};

// One block: output pixels p0 .. p0 + rows - 1 of the batch (p = (n * out_h + oh) * out_w + ow),
// 1 <= rows <= 32, against panels [panel0, panel0 + panels). Writes D + c_init to acc ([32][ld]
// int32: 16 rows, or 32 when rows > 16; panel p in columns (p - panel0) * 16 ..). scratch:
// iconv_scratch_bytes(a) bytes, 64-byte aligned (the gathered tiles, then the tile table).
struct IconvBlock {
  std::int64_t p0;
  int rows;
  std::int64_t panel0, panels;
  std::int32_t* acc;
  std::int64_t ld;
  std::uint8_t* scratch;
};

inline std::int64_t iconv_scratch_bytes(const IconvArgs& a) {
  return a.steps * (2 * 1024 + 2 * static_cast<std::int64_t>(sizeof(IconvTile)));
}

using IconvFn = void (*)(const IconvArgs&, const IconvBlock&);

// AMX-INT8 (conv_implicit_amx.cpp; needs amx_begin() on the thread first).
void iconv_block_amx(const IconvArgs& a, const IconvBlock& blk);
// The same algorithm with the tile registers emulated in memory (conv_implicit_scalar.cpp): runs
// on any x86-64, so the tile addressing, gathers and compensation are tested everywhere.
void iconv_block_scalar(const IconvArgs& a, const IconvBlock& blk);

}  // namespace qforge::cpu_x86
