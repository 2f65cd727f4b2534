// The AVX2 pieces of the convolution: the direct depthwise kernel (conv_depthwise_avx2.cpp), the
// direct kernel for short reductions (conv_small_k_avx2.cpp) and conv_dequant's epilogue
// (conv_epilogue_avx2.cpp).
#pragma once

#include <cstdint>

namespace qforge::cpu_x86 {

// One NHWC image convolved depthwise with one output channel per input channel (a channel
// multiplier widens X first, conv.cpp): for output pixels [p0, p1),
// acc[(p - p0) * c + ch] = sum over taps inside the input of (x - zx) * taps[tap * c + ch], with
// taps already centered (w - zw[ch]). Taps outside the input add 0 (ONNX pads X - zx).
struct DepthwiseArgs {
  const std::uint8_t* x;  // [h][w][c] codes
  bool x_signed;          // int8 codes (else uint8)
  std::int32_t zx;
  const std::int32_t* taps;  // [kh * kw][c]
  std::int64_t c, h, w, kh, kw;
  std::int64_t stride_h, stride_w, dilation_h, dilation_w, pad_top, pad_left;
  std::int64_t out_w;
  // The AVX-512 kernel's weights (ConvWeights::dw_pairs), the start of its sums
  // (ConvWeights::dw_init, for this zx), their channels (ConvWeights::dw_channels) and a row of
  // max(c, out_w * c) + 32 bytes of zx's code.
  const std::int16_t* pairs = nullptr;
  const std::int32_t* dw_init = nullptr;
  std::int64_t table_c = 0;
  const std::uint8_t* zx_row = nullptr;
};
// The AVX-512 depthwise tables cover lcm(c, 32) channels when that is at most
// kDepthwiseMaxPeriod (a whole number of pixels: runs of pixels then read as one vector of
// channels), else c rounded up to 32.
inline constexpr std::int64_t kDepthwiseMaxPeriod = 1024;
std::int64_t depthwise_table_channels(std::int64_t c);
void depthwise_rows_avx2(const DepthwiseArgs& a, std::int64_t p0, std::int64_t p1,
                         std::int32_t* acc);
// The same in AVX-512 VNNI (conv_depthwise_avx512.cpp), for windows of at most
// kDepthwiseAvx512MaxTaps taps: taps in pairs through vpdpwssd, 32 channels at a time; at stride
// 1 the pixels whose window lies inside the input are taken as one vector of pixels x channels.
inline constexpr std::int64_t kDepthwiseAvx512MaxTaps = 64;
void depthwise_rows_avx512(const DepthwiseArgs& a, std::int64_t p0, std::int64_t p1,
                           std::int32_t* acc);

// The four-tap depthwise kernel in AVX-512 VNNI (conv_depthwise_dot4_avx512.cpp): vpdpbusd on
// the input bytes of 4 horizontal taps per channel lane, for c a multiple of 16 and centered
// weights that fit int8. For output rows [oh0, oh1) of one image and channels [c0, c0 + 16):
// acc[((oh - oh0) * out_w + ow) * 16 + lane] = init[c0 + lane] + sum over taps of
// x' * (w - zw), x' the input code (int8: + 128) or, outside the input, zx_code; with init =
// -zx_code * sum of taps (+ a bias) that is sum (x - zx)(w - zw) (+ bias), wrapping int32.
struct DepthwiseDot4Args {
  const std::uint8_t* x;  // one image, [h][w][c] codes
  bool x_signed;          // int8 codes: read with the sign bit flipped
  std::uint8_t zx_code;   // zx, + 128 for int8
  // Centered weights by kernel row k, group of 4 taps g, channel, tap j (4g + j < kw, else 0):
  // [k][g][c][4] (ConvWeights::dw_quads).
  const std::int8_t* quads;
  const std::int32_t* init;  // [c]
  std::int64_t c, h, w, kh, kw;
  std::int64_t stride_h, stride_w, dilation_h, dilation_w, pad_top, pad_left;
  std::int64_t out_w;
  // Lines are kept per thread across calls with the same `call` (one per convolution run, the
  // same X throughout), x and c0, so that a thread's successive tasks reuse the rows they share.
  std::uint64_t call;
  // qlinear_conv's requantization in registers (DepthwiseRequant) into y, this image's
  // [out_h][out_w][c] outputs, instead of the sums into acc; null: the sums.
  const struct DepthwiseRequant* requant = nullptr;
  std::uint8_t* y = nullptr;
};
// The AVX-512 epilogue's requantization (store_requant_columns_avx512 with float multipliers,
// else store_requant_fixed_avx512) per channel, [c] each.
struct DepthwiseRequant {
  bool fixed, any_left;
  const float* multiplier;
  const std::int32_t *fixed_multiplier, *left, *right;
  std::int32_t zy, qmin, qmax;
  // fixed_table_avx512's table for channels [0, c): which form each block of 16 channels takes.
  const std::int64_t* fixed_table;
};
// The most kernel rows x groups of 4 taps (kh * ceil(kw / 4)) the four-tap kernel takes.
inline constexpr std::int64_t kDepthwiseDot4MaxSteps = 64;
void depthwise_dot4_block_avx512(const DepthwiseDot4Args& a, std::int64_t oh0, std::int64_t oh1,
                                 std::int64_t c0, std::int32_t* acc);

// The longest reduction C * KH * KW (one group) the short-reduction kernel takes.
inline constexpr std::int64_t kSmallKMax = 64;

// One image convolved with one group (groups == 1) whose reduction k = C * KH * KW is at most
// kSmallKMax: for output pixels [p0, p1), acc[(p - p0) * o_padded + o] =
// sum over k of (x - zx) * (w[o][k] - zw[o]), k in OIHW order (ci, kh, kw); taps outside the
// input add 0 (ONNX pads X - zx). X is read in place, NCHW or NHWC, so no transpose or im2col
// buffer is needed. Each pixel's centered window is laid out in int16 and multiplied by pairs of
// taps with pmaddwd: |x - zx| and |w - zw| are at most 255, so each pair sum fits int32 and so
// does the whole sum (k <= 64).
struct SmallKArgs {
  const std::uint8_t* x;  // one image, [c][h][w] (nchw) or [h][w][c]
  bool x_signed;          // int8 codes (else uint8)
  bool nchw;
  std::int32_t zx;
  // Centered weights in pairs of taps: pairs[(j * o_padded + o) * 2 + e] = w[o][2j + e] - zw[o]
  // (0 past k and past o), j < (k + 1) / 2.
  const std::int16_t* pairs;
  std::int64_t k, o_padded;  // o_padded: O rounded up to a multiple of 8
  std::int64_t c, h, w, kh, kw;
  std::int64_t stride_h, stride_w, dilation_h, dilation_w, pad_top, pad_left;
  std::int64_t out_w;
};
// conv_dequant's outputs of `rows` pixels and `cols` channels: clamp(((float(acc) * sx) * sw[c])
// + bias[c], lo, hi) (bias null: none), acc rows `ld` apart and readable up to a multiple of 8
// columns, out rows `ldo` apart; sw and bias are read for the valid columns only.
void store_conv_dequant_avx2(const std::int32_t* acc, std::int64_t ld, std::int64_t rows,
                             std::int64_t cols, float sx, const float* sw, const float* bias,
                             float lo, float hi, float* out, std::int64_t ldo);

// The AVX-512 epilogue (conv_epilogue_avx512.cpp, the AVX-512 VNNI tier): the AVX2 stores
// arithmetic 16 channels at a time over acc rows `ld` apart, `cols` valid channels, out rows
// `ldo` apart. Each first adds the int32 bias (null: none) in wrapping int32 and returns false
// when a sum left int32 (the outputs are then to be discarded). The requantizing stores write
// sat(rne(float(acc) * multiplier) + zy) (float mode) or TFLite's fixed point (multiplier,
// left and right shifts per channel; any_left: some left shift is not 0), clamped to
// [qmin, qmax] (whole groups of 64 channels narrowed with saturating packs and written as one
// 64-byte store per row); conv_dequant's computes clamp(((float(acc) * sx) * sw[c]) + bias[c], lo,
// hi).
bool store_conv_int32_avx512(const std::int32_t* acc, std::int64_t ld, std::int64_t rows,
                             std::int64_t cols, const std::int32_t* bias, std::int32_t* out,
                             std::int64_t ldo);
bool store_requant_columns_avx512(const std::int32_t* acc, std::int64_t ld, std::int64_t rows,
                                  std::int64_t cols, const std::int32_t* bias,
                                  const float* multiplier, std::int32_t zy, std::int32_t qmin,
                                  std::int32_t qmax, std::uint8_t* out, std::int64_t ldo);
// The fixed-point store's per-channel constants, computed once per convolution rather than per
// block: kFixedTableWords int64 per 16 channels, for channels [0, cols) of multiplier, left and
// right. Each block of 16 holds the general form (FixedChannels, conv_requant_avx512.h: any
// shift), the shorter form for right shifts of 1 or more (FixedChannelsRight) and which of the
// two its store takes: the shorter one when every channel of the block has no left shift and a
// right shift of at least 1, so a block is never worse off than before and most are better.
inline constexpr std::int64_t kFixedTableWords = 128;
void fixed_table_avx512(const std::int32_t* multiplier, const std::int32_t* left,
                        const std::int32_t* right, std::int64_t cols, std::int64_t* table);
// table: fixed_table_avx512's for channels from the first of acc's columns.
bool store_requant_fixed_avx512(const std::int32_t* acc, std::int64_t ld, std::int64_t rows,
                                std::int64_t cols, const std::int32_t* bias,
                                const std::int64_t* table, const std::int32_t* left, bool any_left,
                                std::int32_t zy, std::int32_t qmin, std::int32_t qmax,
                                std::uint8_t* out, std::int64_t ldo);
bool store_conv_dequant_avx512(const std::int32_t* acc, std::int64_t ld, std::int64_t rows,
                               std::int64_t cols, const std::int32_t* bias_i32, float sx,
                               const float* sw, const float* bias, float lo, float hi, float* out,
                               std::int64_t ldo);

void small_k_rows_avx2(const SmallKArgs& a, std::int64_t p0, std::int64_t p1, std::int32_t* acc);

}  // namespace qforge::cpu_x86
