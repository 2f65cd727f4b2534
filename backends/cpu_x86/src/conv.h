// Quantized 2-D convolution (conv_integer, qlinear_conv, conv_dequant) on cpu_x86's int8 GEMM.
//
// Method: the convolution of one image and one group is a GEMM
//     C[p, o] = sum_k (A[p, k] - zx) * (B[o, k] - zw[o])
// with p an output pixel (oh, ow), o an output channel of the group and k = (kh, kw, ci) one tap
// of the kernel window. A is the im2col matrix of the NHWC input (row p holds the window of
// pixel p, channels innermost; a tap outside the input holds zx, so it adds 0, as ONNX pads
// X - zx) and B the group's weights reordered from OIHW to [O][KH][KW][C/G], packed once
// (X86PackedWeights, nk). A 1x1 convolution with stride 1, no pads and one group reads X as A
// without a copy. NCHW inputs are transposed to NHWC first and the result transposed back.
//
// The GEMM writes int32 sums; the epilogue then adds an int32 bias (detecting a sum that leaves
// int32, as the reference does), requantizes or dequantizes per output channel and clamps for
// the fused activation, in the reference's order of float operations (docs/NUMERICS.md).
//
// Depthwise convolutions (groups == C, any channel multiplier O / C) run a direct kernel instead
// (conv_depthwise_avx2.cpp): one GEMM per channel would multiply 1-column panels. Where AMX
// runs, one-group convolutions take the implicit GEMM instead (conv_implicit.h): A tiles loaded
// from the NHWC rows of each tap, the sums kept in tiles across taps, the epilogue per block. So do
// convolutions with one group and a short reduction C * KH * KW <= kSmallKMax
// (conv_small_k_avx2.cpp), which read X in place in either layout.
//
// A batch of at least two images per thread is split by image: each thread runs every step of
// its images (transposes, im2col, GEMM, epilogue) on its own scratch, in cache, with one
// fork-join for the whole batch.
//
// The sums are exact in int32 because check_descriptor refuses reductions C/G * KH * KW above
// reference::int32_safe_reduction.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "kernel_table.h"
#include "op_runs.h"
#include "packing.h"
#include "qforge/op_desc.h"

namespace qforge::cpu_x86 {

// The GEMM of one group for one image: m = OH * OW, n = O / G, k = C / G * KH * KW, A the
// activations' params, B group g's weight params (per tensor, or its slice of the per-channel
// ones), nk layout.
MatmulDesc conv_group_matmul(const ConvDesc& d, std::int64_t g);

// True when the direct depthwise kernel serves d: groups == C (O is then C times the channel
// multiplier).
bool conv_depthwise_direct(const ConvDesc& d);
// True when the short-reduction kernel serves d: one group, C * KH * KW <= kSmallKMax.
bool conv_small_k_direct(const ConvDesc& d);
// Whether the automatic choice prefers it: also few output channels (O <= 64), where packing A
// for a GEMM costs more than the products it saves.
bool conv_small_k_preferred(const ConvDesc& d);
// True when the implicit-GEMM kernels (conv_implicit.h) serve d: one group.
bool conv_implicit_direct(const ConvDesc& d);
// Whether the automatic choice prefers them (where AMX runs): one group and at least 16 input
// channels, so that padding each tap's channels to the tile depth of 64 wastes at most 3/4.
bool conv_implicit_preferred(const ConvDesc& d);

// How a convolution runs, which decides how its weights are prepared.
enum class ConvPath : std::uint8_t { gemm, depthwise, small_k, implicit };

// The weights of the implicit-GEMM kernels (layout in conv_implicit.h) and the per-channel terms
// of their zero-point compensation. With a' the input in the u8 domain (int8 X + 128), za' its
// zero point and w_s8 = w - shift (shift 128 for uint8 W, else 0), the exact sum is
//   sum_k (a' - za')(w - zw[o]) = D + rf[o] * rowsum(a') + comp[o],
//   rf[o] = shift - zw[o],  comp[o] = K za' zw[o] - za' sum_k w,
// in wrapping int32 (the true sum fits int32, so arithmetic modulo 2^32 gives it exactly).
struct ImplicitWeights {
  AlignedBytes b;       // [panels][steps][16][64]
  AlignedBytes c_init;  // [panels][16 rows][16] int32: comp of the panel's channels, 0 past O
  std::int64_t cblocks = 0, steps = 0, panels = 0;
  std::vector<std::int32_t> rf, comp;  // [O]
  bool needs_rowsum = false;           // some rf[o] != 0
};

// The weights of one convolution prepared for its kernel: packed GEMM panels per group, the
// centered int32 taps of the depthwise kernel ([KH * KW][O], w - zw[o]), or the centered int16
// tap pairs of the short-reduction kernel (SmallKArgs::pairs).
class ConvWeights {
 public:
  ConvWeights(const ConvDesc& d, const void* w, ConvPath path, ThreadPool* pool);

  ConvPath path() const noexcept { return path_; }
  // Some packed group holds -128 (the maddubs kernels are then inexact, exact_for_weights).
  bool holds_min() const noexcept { return holds_min_; }
  const X86PackedWeights& group(std::int64_t g) const { return *groups_[static_cast<size_t>(g)]; }
  const std::int32_t* taps() const noexcept { return taps_.data(); }
  // Channels in the AVX-512 depthwise tables (depthwise_table_channels): a multiple of 32.
  std::int64_t dw_channels() const noexcept { return dw_channels_; }
  // The AVX-512 depthwise kernel's centered weights: per block of 32 table channels (channel v
  // of the table is output channel v % O) and pair of taps
  // (2j, 2j + 1; a missing last tap 0) 64 int16 in vpunpcklwd / vpunpckhwd order:
  // [block][pair][lo: 128-bit lane L, i < 4: (w[2j][8L + i], w[2j + 1][8L + i]);
  //               hi: the same for channels 8L + 4 + i].
  const std::int16_t* dw_pairs() const noexcept { return dw_pairs_.data(); }
  // Per block of 32 channels the AVX-512 depthwise kernel's initial sums, in the lane order of
  // its two accumulators (lo: lane 4L + i is channel 8L + i; hi: channel 8L + 4 + i):
  // -zx * sum over taps of (w - zw), wrapping int32 (zx from the descriptor's X params).
  const std::int32_t* dw_init() const noexcept { return dw_init_.data(); }
  // The four-tap kernel's centered weights (DepthwiseDot4Args::quads), or null when O is not a
  // multiple of 16, a centered weight leaves int8 or the window has more than
  // kDepthwiseDot4MaxSteps kernel rows x groups of 4 taps.
  const std::int8_t* dw_quads() const noexcept {
    return dw_quads_.empty() ? nullptr : dw_quads_.data();
  }
  // With dw_quads: per output channel the sum over taps of (w - zw), wrapping uint32, so that a
  // run's initial sums cost one multiply-add per channel instead of a pass over all taps.
  const std::uint32_t* dw_tap_sums() const noexcept { return dw_tap_sums_.data(); }
  const std::int16_t* pairs() const noexcept { return pairs_.data(); }
  const ImplicitWeights& implicit() const noexcept { return implicit_; }
  std::size_t bytes() const noexcept;

 private:
  ConvPath path_ = ConvPath::gemm;
  bool holds_min_ = false;
  std::vector<std::unique_ptr<X86PackedWeights>> groups_;
  std::vector<std::int32_t> taps_;
  std::vector<std::int16_t> dw_pairs_;
  std::int64_t dw_channels_ = 0;
  std::vector<std::int32_t> dw_init_;
  std::vector<std::int8_t> dw_quads_;
  std::vector<std::uint32_t> dw_tap_sums_;
  std::vector<std::int16_t> pairs_;
  ImplicitWeights implicit_;
  template <class Code>
  void pack_implicit(const ConvDesc& d, const Code& code);
};

// Whether acc + bias[o] fits int32 for every input, given the weights and an int32 bias:
// max|x - zx| * sum_k |w[o, k] - zw[o]| + |bias[o]| <= INT32_MAX for every o. When it holds, a
// plan need not keep W to let the reference report an overflow.
bool conv_bias_cannot_overflow(const ConvDesc& d, const void* w, const std::int32_t* bias);

// What run_conv otherwise derives on every call from the descriptor and the bias: the epilogue's
// per-channel factors (the fixed-point multipliers and their AVX-512 table, the float
// multipliers) and the implicit kernel's starting tiles with an int32 bias folded in. A plan
// whose weights (and bias, if any) are fixed computes them once; `bias` is copied (null: none).
struct ConvRunConstants;
std::shared_ptr<const ConvRunConstants> prepare_conv_run(const GemmTuning& tuning, OpKind op,
                                                         const ConvDesc& d, const ConvWeights& w,
                                                         const void* bias);

// Runs the convolution with `kernel` (a GEMM kernel, or the direct kernel of the path the weights
// were prepared for). bias follows d.bias (null when none); `prepared`, when given, is
// prepare_conv_run's for these weights and this bias, and stands in for it. Returns false when
// an output plus the int32 bias leaves int32: the caller then runs the reference, which reports
// the position.
bool run_conv(const GemmContext& ctx, const KernelInfo& kernel, OpKind op, const ConvDesc& d,
              const void* x, const ConvWeights& w, const void* bias, void* y,
              const ConvRunConstants* prepared = nullptr);

}  // namespace qforge::cpu_x86
