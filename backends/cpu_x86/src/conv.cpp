#include "conv.h"

#include <emmintrin.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <numeric>
#include <optional>

#include "conv_implicit.h"
#include "conv_kernels.h"
#include "gemm_driver.h"
#include "gemm_epilogue.h"
#include "qforge/error.h"
#include "qforge/reference.h"

namespace qforge::cpu_x86 {
namespace {

// Output pixels per task of the im2col, depthwise and epilogue loops.
constexpr std::int64_t kRowsPerTask = 64;

struct Geometry {
  std::int64_t n, c, h, w, o, oh, ow, kh, kw, cg, og, k, pixels;
  explicit Geometry(const ConvDesc& d)
      : n(d.n),
        c(d.c),
        h(d.h),
        w(d.w),
        o(d.out_channels),
        oh(d.out_h()),
        ow(d.out_w()),
        kh(d.kernel_h),
        kw(d.kernel_w),
        cg(d.c / d.groups),
        og(d.out_channels / d.groups),
        k(d.c / d.groups * d.kernel_h * d.kernel_w),
        pixels(d.out_h() * d.out_w()) {}
};

std::size_t w_pair(const ConvDesc& d, std::int64_t o) {
  return d.w_params.scheme().granularity == Granularity::per_tensor ? 0
                                                                    : static_cast<std::size_t>(o);
}

std::size_t out_bytes(OpKind op) { return op == OpKind::qlinear_conv ? 1 : 4; }

// 8 x 8 bytes (rows of `ls` bytes apart) -> their transpose (rows of `ld` bytes apart): SSE2
// unpacks, the x86-64 baseline.
inline void transpose8x8_u8(const std::uint8_t* s, std::int64_t ls, std::uint8_t* d,
                            std::int64_t ld) {
  auto row = [&](int i) { return _mm_loadl_epi64(reinterpret_cast<const __m128i*>(s + i * ls)); };
  const __m128i a0 = _mm_unpacklo_epi8(row(0), row(1)), a1 = _mm_unpacklo_epi8(row(2), row(3));
  const __m128i a2 = _mm_unpacklo_epi8(row(4), row(5)), a3 = _mm_unpacklo_epi8(row(6), row(7));
  const __m128i b0 = _mm_unpacklo_epi16(a0, a1), b1 = _mm_unpackhi_epi16(a0, a1);
  const __m128i b2 = _mm_unpacklo_epi16(a2, a3), b3 = _mm_unpackhi_epi16(a2, a3);
  const __m128i c[4] = {_mm_unpacklo_epi32(b0, b2), _mm_unpackhi_epi32(b0, b2),
                        _mm_unpacklo_epi32(b1, b3), _mm_unpackhi_epi32(b1, b3)};
  for (int i = 0; i < 4; ++i) {
    _mm_storel_epi64(reinterpret_cast<__m128i*>(d + (2 * i) * ld), c[i]);
    _mm_storel_epi64(reinterpret_cast<__m128i*>(d + (2 * i + 1) * ld), _mm_srli_si128(c[i], 8));
  }
}

// 4 x 4 elements of 4 bytes, likewise.
inline void transpose4x4_u32(const std::uint32_t* s, std::int64_t ls, std::uint32_t* d,
                             std::int64_t ld) {
  auto row = [&](int i) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i * ls)); };
  const __m128i a0 = _mm_unpacklo_epi32(row(0), row(1)), a1 = _mm_unpackhi_epi32(row(0), row(1));
  const __m128i a2 = _mm_unpacklo_epi32(row(2), row(3)), a3 = _mm_unpackhi_epi32(row(2), row(3));
  auto store = [&](int i, __m128i v) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + i * ld), v);
  };
  store(0, _mm_unpacklo_epi64(a0, a2));
  store(1, _mm_unpackhi_epi64(a0, a2));
  store(2, _mm_unpacklo_epi64(a1, a3));
  store(3, _mm_unpackhi_epi64(a1, a3));
}

// [rows][cols] elements of `bytes` (1 or 4) each -> [cols][rows], in blocks of 64 x 64 on the
// pool: the NCHW <-> NHWC transposes of one image (rows = C, cols = H * W, or back).
void transpose(const std::uint8_t* src, std::uint8_t* dst, std::int64_t rows, std::int64_t cols,
               std::size_t bytes, ThreadPool& pool) {
  constexpr std::int64_t kBlock = 64;
  const std::int64_t row_blocks = (rows + kBlock - 1) / kBlock;
  const std::int64_t col_blocks = (cols + kBlock - 1) / kBlock;
  pool.parallel_for(row_blocks * col_blocks, [&](std::int64_t t) {
    const std::int64_t r0 = (t / col_blocks) * kBlock, c0 = (t % col_blocks) * kBlock;
    const std::int64_t r1 = std::min(rows, r0 + kBlock), c1 = std::min(cols, c0 + kBlock);
    auto scalar = [&](auto one, std::int64_t ra, std::int64_t rb, std::int64_t ca,
                      std::int64_t cb) {
      using T = decltype(one);
      const T* s = reinterpret_cast<const T*>(src);
      T* d = reinterpret_cast<T*>(dst);
      for (std::int64_t c = ca; c < cb; ++c)
        for (std::int64_t r = ra; r < rb; ++r) d[c * rows + r] = s[r * cols + c];
    };
    const std::int64_t step = bytes == 1 ? 8 : 4;
    const std::int64_t rv = r0 + (r1 - r0) / step * step, cv = c0 + (c1 - c0) / step * step;
    if (bytes == 1) {
      for (std::int64_t r = r0; r < rv; r += 8)
        for (std::int64_t c = c0; c < cv; c += 8)
          transpose8x8_u8(src + r * cols + c, cols, dst + c * rows + r, rows);
      scalar(std::uint8_t{}, rv, r1, c0, c1);
      scalar(std::uint8_t{}, r0, rv, cv, c1);
    } else {
      const auto* s = reinterpret_cast<const std::uint32_t*>(src);
      auto* d = reinterpret_cast<std::uint32_t*>(dst);
      for (std::int64_t r = r0; r < rv; r += 4)
        for (std::int64_t c = c0; c < cv; c += 4)
          transpose4x4_u32(s + r * cols + c, cols, d + c * rows + r, rows);
      scalar(std::uint32_t{}, rv, r1, c0, c1);
      scalar(std::uint32_t{}, r0, rv, cv, c1);
    }
  });
}

// The per-channel factors of the epilogue, computed once per run.
struct Epilogue {
  OpKind op;
  std::int64_t o = 0;  // output channels: the distance between output pixels
  const std::int32_t* bias_i32 = nullptr;
  const float* bias_f32 = nullptr;
  float sx = 1.0f;
  std::vector<float> sw;  // [O], then zeros up to O + 8 (the AVX2 store reads 8 at a time)
  // qlinear_conv, float multipliers: (sx * sw[o]) / sy per channel, as the reference computes
  // them, then zeros up to O + 8
  std::vector<float> multiplier;
  // qlinear_conv
  float sy = 1.0f;
  std::int32_t zy = 0;
  QuantRange range{true, -128, 127};  // the fused activation's bounds lo, hi
  RequantMode mode = RequantMode::float_multiplier;
  // fixed-point mode, per channel then zeros up to O + 8: reference::quantize_multiplier's
  // multiplier and its shift split into a left and a right shift
  std::vector<std::int32_t> fixed_multiplier, fixed_left, fixed_right;
  bool any_left = false;  // some channel's multiplier is 1 or more (a left shift)
  // The AVX-512 fixed-point store's constants for channels [0, O) (fixed_table_avx512).
  std::vector<std::int64_t> fixed_table;
  // conv_dequant
  float lo = -std::numeric_limits<float>::infinity();
  float hi = std::numeric_limits<float>::infinity();

  bool avx512 = false;  // the AVX-512 tier may run: its stores (conv_epilogue_avx512.cpp)

  Epilogue(OpKind kind, const ConvDesc& d, const void* bias, bool use_avx512)
      : op(kind), o(d.out_channels), avx512(use_avx512) {
    if (d.bias == ConvBias::int32) bias_i32 = static_cast<const std::int32_t*>(bias);
    if (d.bias == ConvBias::f32) bias_f32 = static_cast<const float*>(bias);
    sx = d.x_params.scale();
    sw.assign(static_cast<std::size_t>(o + 8), 0.0f);
    for (std::int64_t i = 0; i < o; ++i)
      sw[static_cast<std::size_t>(i)] = d.w_params.scale(w_pair(d, i));
    if (op == OpKind::qlinear_conv) {
      const QuantizationParams& yp = *d.y_params;
      sy = yp.scale();
      zy = yp.zero_point();
      range = {yp.dtype() == DType::int8, yp.qmin(), yp.qmax()};
      // The fused activation's bounds in output codes, as the reference's conv_output_clamp.
      auto q = [&](float v) { return reference::quantize_value(v, sy, zy, yp.qmin(), yp.qmax()); };
      if (d.activation == ConvActivation::relu) range.qmin = q(0.0f);
      if (d.activation == ConvActivation::relu6) range.qmin = q(0.0f), range.qmax = q(6.0f);
      if (d.activation == ConvActivation::clamp)
        range.qmin = q(d.clamp_min), range.qmax = q(d.clamp_max);
      mode = d.requant_mode;
      if (mode == RequantMode::float_multiplier) {
        multiplier.assign(static_cast<std::size_t>(o + 8), 0.0f);
        for (std::size_t i = 0; i < static_cast<std::size_t>(o); ++i)
          multiplier[i] = (sx * sw[i]) / sy;  // float32, in this order
      }
      if (mode == RequantMode::fixed_point) {
        fixed_multiplier.assign(static_cast<std::size_t>(o + 8), 0);
        fixed_left.assign(static_cast<std::size_t>(o + 8), 0);
        fixed_right.assign(static_cast<std::size_t>(o + 8), 0);
        for (std::size_t i = 0; i < static_cast<std::size_t>(o); ++i) {
          // Shifts within [-31, 31] (quantize_multiplier flushes smaller ones to 0).
          const auto m = reference::quantize_multiplier(static_cast<double>((sx * sw[i]) / sy));
          fixed_multiplier[i] = m.multiplier;
          fixed_left[i] = m.shift > 0 ? m.shift : 0;
          fixed_right[i] = m.shift > 0 ? 0 : -m.shift;
          any_left = any_left || fixed_left[i] != 0;
        }
#if QFORGE_CPU_X86_HAVE_AVX512VNNI
        if (avx512) {
          fixed_table.resize(static_cast<std::size_t>((o + 15) / 16 * kFixedTableWords));
          fixed_table_avx512(fixed_multiplier.data(), fixed_left.data(), fixed_right.data(), o,
                             fixed_table.data());
        }
#endif
      }
    }
    if (op == OpKind::conv_dequant) {
      if (d.activation == ConvActivation::relu) lo = 0.0f;
      if (d.activation == ConvActivation::relu6) lo = 0.0f, hi = 6.0f;
      if (d.activation == ConvActivation::clamp) lo = d.clamp_min, hi = d.clamp_max;
    }
  }

  // Turns acc ([rows][ld] int32 sums of output channels [o0, o0 + cols)) into the outputs of
  // `rows` consecutive output pixels, `out` pointing at the first pixel's channel o0 of the
  // NHWC result. rows <= kRowsPerTask. acc is overwritten; its rows are readable up to a
  // multiple of 8 columns (past the last row too). Returns false when acc + an int32 bias leaves
  // int32.
  bool apply(std::int32_t* acc, std::int64_t ld, std::int64_t rows, std::int64_t o0,
             std::int64_t cols, void* out) const {
#if QFORGE_CPU_X86_HAVE_AVX512VNNI
    if (avx512) return apply_avx512(acc, ld, rows, o0, cols, out);
#endif
    if (bias_i32) {
      // Wrapping int32 adds (in uint32, defined) that vectorize; a sum overflowed iff both
      // operands differ in sign from it.
      std::uint32_t overflow = 0;
      const auto* b = reinterpret_cast<const std::uint32_t*>(bias_i32 + o0);
      for (std::int64_t r = 0; r < rows; ++r) {
        auto* a = reinterpret_cast<std::uint32_t*>(acc + r * ld);
        for (std::int64_t c = 0; c < cols; ++c) {
          const std::uint32_t sum = a[c] + b[c];
          overflow |= (a[c] ^ sum) & (b[c] ^ sum);
          a[c] = sum;
        }
      }
      if (overflow >> 31) return false;
    }
    switch (op) {
      case OpKind::conv_integer: {
        auto* y = static_cast<std::int32_t*>(out);
        for (std::int64_t r = 0; r < rows; ++r)
          std::memcpy(y + r * o, acc + r * ld, static_cast<std::size_t>(cols) * 4);
        return true;
      }
      case OpKind::qlinear_conv: {
        auto* y = static_cast<std::uint8_t*>(out);
        const TileRef t{acc, ld, static_cast<int>(rows), static_cast<int>(cols),
                        static_cast<int>((cols + 7) / 8 * 8)};
        if (mode == RequantMode::float_multiplier) {
          store_requant_columns_avx2(t, multiplier.data() + o0, zy, range, y, o);
          return true;
        }
        store_requant_fixed_avx2(t, fixed_multiplier.data() + o0, fixed_left.data() + o0,
                                 fixed_right.data() + o0, zy, range, y, o);
        return true;
      }
      case OpKind::conv_dequant: {
        store_conv_dequant_avx2(acc, ld, rows, cols, sx, sw.data() + o0,
                                bias_f32 ? bias_f32 + o0 : nullptr, lo, hi,
                                static_cast<float*>(out), o);
        return true;
      }
      default: break;
    }
    throw Error(ErrorCode::internal, "cpu_x86: conv epilogue for " + std::string(to_string(op)));
  }

#if QFORGE_CPU_X86_HAVE_AVX512VNNI
  bool apply_avx512(std::int32_t* acc, std::int64_t ld, std::int64_t rows, std::int64_t o0,
                    std::int64_t cols, void* out) const {
    const std::int32_t* bias = bias_i32 ? bias_i32 + o0 : nullptr;
    switch (op) {
      case OpKind::conv_integer:
        return store_conv_int32_avx512(acc, ld, rows, cols, bias, static_cast<std::int32_t*>(out),
                                       o);
      case OpKind::qlinear_conv: {
        auto* y = static_cast<std::uint8_t*>(out);
        if (mode == RequantMode::float_multiplier)
          return store_requant_columns_avx512(acc, ld, rows, cols, bias, multiplier.data() + o0, zy,
                                              range.qmin, range.qmax, y, o);
        const std::int64_t* table = fixed_table.data() + o0 / 16 * kFixedTableWords;
        if (o0 % 16 != 0) {  // a group starting inside a block of the table: one of its own
          thread_local std::vector<std::int64_t> own;
          own.resize(static_cast<std::size_t>((cols + 15) / 16 * kFixedTableWords));
          fixed_table_avx512(fixed_multiplier.data() + o0, fixed_left.data() + o0,
                             fixed_right.data() + o0, cols, own.data());
          table = own.data();
        }
        return store_requant_fixed_avx512(acc, ld, rows, cols, bias, table, fixed_left.data() + o0,
                                          any_left, zy, range.qmin, range.qmax, y, o);
      }
      case OpKind::conv_dequant:
        return store_conv_dequant_avx512(acc, ld, rows, cols, bias, sx, sw.data() + o0,
                                         bias_f32 ? bias_f32 + o0 : nullptr, lo, hi,
                                         static_cast<float*>(out), o);
      default: break;
    }
    throw Error(ErrorCode::internal, "cpu_x86: conv epilogue for " + std::string(to_string(op)));
  }
#endif
};

// Whether the NHWC input is already the im2col matrix of the whole batch.
bool input_is_im2col(const ConvDesc& d) {
  return d.kernel_h == 1 && d.kernel_w == 1 && d.stride_h == 1 && d.stride_w == 1 &&
         d.pad_top == 0 && d.pad_left == 0 && d.pad_bottom == 0 && d.pad_right == 0 &&
         d.groups == 1;
}

// im2col of one NHWC image for group g, output pixels [p0, p1): row p holds the taps (kh, kw)
// in order, each with the group's C / G channels; taps outside the input hold zx.
void im2col_rows(const ConvDesc& d, const Geometry& g, const std::uint8_t* x, std::int64_t group,
                 std::uint8_t zx, std::int64_t p0, std::int64_t p1, std::uint8_t* a) {
  const auto cg = static_cast<std::size_t>(g.cg);
  for (std::int64_t p = p0; p < p1; ++p) {
    const std::int64_t oh = p / g.ow, ow = p % g.ow;
    std::uint8_t* row = a + p * g.k;
    for (std::int64_t kh = 0; kh < g.kh; ++kh) {
      const std::int64_t ih = oh * d.stride_h - d.pad_top + kh * d.dilation_h;
      for (std::int64_t kw = 0; kw < g.kw; ++kw) {
        const std::int64_t iw = ow * d.stride_w - d.pad_left + kw * d.dilation_w;
        std::uint8_t* dst = row + (kh * g.kw + kw) * g.cg;
        if (ih < 0 || ih >= g.h || iw < 0 || iw >= g.w) std::memset(dst, zx, cg);
        else std::memcpy(dst, x + (ih * g.w + iw) * g.c + group * g.cg, cg);
      }
    }
  }
}

// Scratch of the calling thread, reused across runs (a plan runs from many threads at once:
// each has its own).
struct ConvScratch {
  AlignedBytes x_nhwc, y_nhwc, a;
  AlignedBytes x_wide;  // depthwise with a channel multiplier: each channel repeated
  std::vector<std::int32_t> acc;
};
ConvScratch& conv_scratch() {
  thread_local ConvScratch s;
  return s;
}

// Whether a depthwise convolution runs the four-tap kernel (run_depthwise_dot4).
bool runs_depthwise_dot4(const KernelInfo& kernel, const ConvWeights& w) {
#if QFORGE_CPU_X86_HAVE_AVX512VNNI
  return kernel.isa == Isa::avx512_vnni && w.dw_quads() != nullptr;
#else
  (void)kernel;
  (void)w;
  return false;
#endif
}

#if QFORGE_CPU_X86_HAVE_AVX512VNNI
// The four-tap depthwise kernel (depthwise_dot4_block_avx512) over the whole batch, each task a
// contiguous range of output rows (below), taken by blocks of 16 channels with the epilogue after
// each block (at most kDot4TaskPixels pixels at a time when the sums go through a buffer), so
// that its sums stay in the L1 cache. Tasks are larger than the pair kernel's because a task
// rebuilds the input lines it shares with its neighbours.
bool run_depthwise_dot4(const GemmContext& ctx, const ConvDesc& d, const Geometry& g,
                        const std::uint8_t* x, const ConvWeights& w, const Epilogue& e,
                        std::uint8_t* y) {
  constexpr std::int64_t kDot4TaskPixels = 512;
  // Two tasks per thread where a thread has at least kDot4RowsForTwoTasks rows: a late worker's
  // second task then goes to a neighbour. Fewer rows keep one task (one contiguous range) per
  // thread, since every task rebuilds the kh - 1 input lines it shares with the task before
  // (docs/PERFORMANCE.md, "Depthwise convolution at 16 threads: ... (branch dw16b)").
  constexpr std::int64_t kDot4RowsForTwoTasks = 8;
  static std::atomic<std::uint64_t> calls{0};
  const std::size_t es = out_bytes(e.op);
  const bool x_signed = d.x_params.dtype() == DType::int8;
  const auto zx_code = static_cast<std::uint32_t>(d.x_params.zero_point() + (x_signed ? 128 : 0));
  const std::int64_t taps = g.kh * g.kw;
  // An int32 bias that no sum can carry out of int32 (|sum| <= taps * 255 * 255) starts the sums
  // instead of taking the epilogue's add and overflow check.
  bool fold = e.bias_i32 != nullptr;
  for (std::int64_t o = 0; o < g.o && fold; ++o)
    fold = std::abs(static_cast<std::int64_t>(e.bias_i32[o])) <=
           std::numeric_limits<std::int32_t>::max() - taps * 255 * 255;
  std::vector<std::int32_t> init(static_cast<std::size_t>(g.o));
  for (std::int64_t o = 0; o < g.o; ++o) {
    const std::uint32_t bias = fold ? static_cast<std::uint32_t>(e.bias_i32[o]) : 0u;
    init[static_cast<std::size_t>(o)] =
        static_cast<std::int32_t>(bias - zx_code * w.dw_tap_sums()[o]);
  }
  const Epilogue* epilogue = &e;
  std::optional<Epilogue> without_bias;
  if (fold) {
    without_bias.emplace(e);
    without_bias->bias_i32 = nullptr;
    epilogue = &*without_bias;
  }
  // qlinear_conv with no int32 bias left to add: the kernel requantizes in registers.
  const bool in_kernel = e.op == OpKind::qlinear_conv && e.avx512 && !epilogue->bias_i32;
  // Tasks of whole output rows of the batch (image after image; the row counts of two tasks
  // differ by at most one), each row with every block of 16 channels. A task writes whole
  // output pixels: tasks that split a row's blocks between them write parts of the same cache
  // lines, which then move between cores. It runs its rows block by block, so that a block's
  // line ring carries over from row to row. The pool's affine hand-out gives thread p the p-th
  // contiguous share of the rows in every call, so that the input rows it reads and the output
  // lines it writes stay in its own L2 from call to call instead of moving between cores.
  const std::int64_t blocks = g.o / 16, rows = g.n * g.oh;
  const std::int64_t threads = ctx.pool.threads();
  const std::int64_t tasks =
      std::min(rows, threads * (rows >= kDot4RowsForTwoTasks * threads ? 2 : 1));
  const std::int64_t pixel_cap =
      in_kernel ? g.oh
                : std::max<std::int64_t>(1, kDot4TaskPixels / std::max<std::int64_t>(1, g.ow));
  const DepthwiseDot4Args args{nullptr,      x_signed,     static_cast<std::uint8_t>(zx_code),
                               w.dw_quads(), init.data(),  g.o,
                               g.h,          g.w,          g.kh,
                               g.kw,         d.stride_h,   d.stride_w,
                               d.dilation_h, d.dilation_w, d.pad_top,
                               d.pad_left,   g.ow,         ++calls};
  const DepthwiseRequant requant{e.mode == RequantMode::fixed_point,
                                 e.any_left,
                                 e.multiplier.data(),
                                 e.fixed_multiplier.data(),
                                 e.fixed_left.data(),
                                 e.fixed_right.data(),
                                 e.zy,
                                 e.range.qmin,
                                 e.range.qmax,
                                 e.fixed_table.data()};
  std::atomic<bool> ok{true};
  ctx.pool.parallel_for_affine(tasks, [&](std::int64_t t) {
    const std::int64_t r_begin = t * rows / tasks, r_end = (t + 1) * rows / tasks;
    for (std::int64_t n = r_begin / g.oh; n * g.oh < r_end; ++n) {
      const std::int64_t oh0 = std::max<std::int64_t>(0, r_begin - n * g.oh);
      const std::int64_t oh1 = std::min(g.oh, r_end - n * g.oh);
      DepthwiseDot4Args a = args;
      a.x = x + n * g.h * g.w * g.o;
      if (in_kernel) {
        a.requant = &requant;
        a.y = y + n * g.pixels * g.o;
      }
      for (std::int64_t b = 0; b < blocks; ++b) {
        if (in_kernel) {
          depthwise_dot4_block_avx512(a, oh0, oh1, b * 16, nullptr);
          continue;
        }
        thread_local std::vector<std::int32_t> acc;
        acc.resize(static_cast<std::size_t>(pixel_cap * g.ow * 16 + 8));
        for (std::int64_t r0 = oh0; r0 < oh1; r0 += pixel_cap) {
          const std::int64_t r1 = std::min(oh1, r0 + pixel_cap), pixels = (r1 - r0) * g.ow;
          depthwise_dot4_block_avx512(a, r0, r1, b * 16, acc.data());
          if (!epilogue->apply(
                  acc.data(), 16, pixels, b * 16, 16,
                  y + ((n * g.pixels + r0 * g.ow) * g.o + b * 16) * static_cast<std::int64_t>(es)))
            ok = false;
        }
      }
    }
  });
  return ok;
}
#endif

// Depthwise: output channel o reads input channel o / multiplier (multiplier = O / C). With a
// multiplier above 1 the input is widened first to O channels, each repeated, so that the
// kernel again multiplies contiguous channels of X by contiguous taps.
bool run_depthwise(const GemmContext& ctx, const KernelInfo& kernel, const ConvDesc& d,
                   const Geometry& g, const std::uint8_t* x, const ConvWeights& w,
                   const Epilogue& e, std::uint8_t* y, ConvScratch& s) {
  const std::size_t es = out_bytes(e.op);
  // Tasks of whole output rows (the kernel steps along a row), about kRowsPerTask pixels, fewer
  // rows when that leaves the pool's threads short of tasks (one image).
  std::int64_t rows_per_task =
      std::max<std::int64_t>(1, kRowsPerTask / std::max<std::int64_t>(1, g.ow));
  const std::int64_t want_tasks = 4 * ctx.pool.threads();
  while (rows_per_task > 1 && g.n * ((g.oh + rows_per_task - 1) / rows_per_task) < want_tasks)
    rows_per_task /= 2;
  const std::int64_t task_pixels = rows_per_task * g.ow;
  const std::int64_t chunks = g.pixels == 0 ? 0 : (g.pixels + task_pixels - 1) / task_pixels;
  const std::int64_t multiplier = g.o / g.c;
  const std::int64_t in_pixels = g.n * g.h * g.w;
  if (multiplier > 1 && in_pixels > 0) {
    s.x_wide.reset(static_cast<std::size_t>(in_pixels * g.o), /*zero=*/false);
    const std::int64_t tasks = (in_pixels + 255) / 256;
    ctx.pool.parallel_for(tasks, [&](std::int64_t t) {
      for (std::int64_t p = t * 256; p < std::min(in_pixels, (t + 1) * 256); ++p)
        for (std::int64_t o = 0; o < g.o; ++o)
          s.x_wide.data()[p * g.o + o] = x[p * g.c + o / multiplier];
    });
    x = s.x_wide.data();
  }
  const bool avx512 = kernel.isa == Isa::avx512_vnni && g.kh * g.kw <= kDepthwiseAvx512MaxTaps;
#if QFORGE_CPU_X86_HAVE_AVX512VNNI
  if (runs_depthwise_dot4(kernel, w)) return run_depthwise_dot4(ctx, d, g, x, w, e, y);
#endif
  std::atomic<bool> ok{true};
  // Out-of-input taps of the AVX-512 kernel read this row: zx's code, 0 once centered (a run of
  // pixels reads up to a whole output row of them).
  const std::vector<std::uint8_t> zx_row(
      static_cast<std::size_t>(std::max<std::int64_t>(1, g.ow) * g.o + 64),
      static_cast<std::uint8_t>(d.x_params.zero_point()));
  // An int32 bias that no sum can carry out of int32 (|sum| <= taps * 255 * 255) starts the
  // AVX-512 kernel's sums instead of taking the epilogue's add and overflow check.
  std::vector<std::int32_t> init_with_bias;
  const Epilogue* epilogue = &e;
  std::optional<Epilogue> without_bias;
  if (avx512 && e.bias_i32) {
    const std::int64_t bound = g.kh * g.kw * 255 * 255;
    bool fits = true;
    for (std::int64_t o = 0; o < g.o && fits; ++o)
      fits = std::abs(static_cast<std::int64_t>(e.bias_i32[o])) <=
             std::numeric_limits<std::int32_t>::max() - bound;
    if (fits) {
      init_with_bias.assign(w.dw_init(), w.dw_init() + w.dw_channels());
      for (std::int64_t v = 0; v < w.dw_channels(); ++v) {
        // The init's lane order (ConvWeights::dw_init): lane half * 16 + L * 4 + i holds table
        // channel 8L + 4 * half + i of its block.
        const std::int64_t c = v % 32, at = v / 32 * 32 + (c % 8 / 4) * 16 + (c / 8) * 4 + c % 4;
        auto& slot = init_with_bias[static_cast<std::size_t>(at)];
        slot = static_cast<std::int32_t>(static_cast<std::uint32_t>(slot) +
                                         static_cast<std::uint32_t>(e.bias_i32[v % g.o]));
      }
      without_bias.emplace(e);
      without_bias->bias_i32 = nullptr;
      epilogue = &*without_bias;
    }
  }
  DepthwiseArgs args{nullptr,
                     d.x_params.dtype() == DType::int8,
                     d.x_params.zero_point(),
                     w.taps(),
                     g.o,
                     g.h,
                     g.w,
                     g.kh,
                     g.kw,
                     d.stride_h,
                     d.stride_w,
                     d.dilation_h,
                     d.dilation_w,
                     d.pad_top,
                     d.pad_left,
                     g.ow,
                     w.dw_pairs(),
                     init_with_bias.empty() ? w.dw_init() : init_with_bias.data(),
                     w.dw_channels(),
                     zx_row.data()};
  ctx.pool.parallel_for(g.n * chunks, [&](std::int64_t t) {
    const std::int64_t n = t / chunks, p0 = (t % chunks) * task_pixels;
    const std::int64_t p1 = std::min(g.pixels, p0 + task_pixels);
    thread_local std::vector<std::int32_t> acc;
    acc.resize(static_cast<std::size_t>(task_pixels * g.o + 8));
    DepthwiseArgs a = args;
    a.x = x + n * g.h * g.w * g.o;
#if QFORGE_CPU_X86_HAVE_AVX512VNNI
    if (avx512) depthwise_rows_avx512(a, p0, p1, acc.data());
    else depthwise_rows_avx2(a, p0, p1, acc.data());
#else
    depthwise_rows_avx2(a, p0, p1, acc.data());
#endif
    if (!epilogue->apply(acc.data(), g.o, p1 - p0, 0, g.o,
                         y + ((n * g.pixels + p0) * g.o) * static_cast<std::int64_t>(es)))
      ok = false;
  });
  return ok;
}

// One group, a short reduction: X read in place (either layout), tasks of kRowsPerTask output
// pixels of one image. An NCHW result goes through a per-task tile of [pixels][O] outputs.
bool run_small_k(const GemmContext& ctx, const ConvDesc& d, const Geometry& g,
                 const std::uint8_t* x, const ConvWeights& w, const Epilogue& e, std::uint8_t* y) {
  const std::size_t es = out_bytes(e.op);
  const bool nchw = d.layout == ConvLayout::nchw;
  const std::int64_t o_padded = (g.o + 7) / 8 * 8;
  const std::int64_t chunks = (g.pixels + kRowsPerTask - 1) / kRowsPerTask;
  const SmallKArgs args{nullptr,      d.x_params.dtype() == DType::int8,
                        nchw,         d.x_params.zero_point(),
                        w.pairs(),    g.k,
                        o_padded,     g.c,
                        g.h,          g.w,
                        g.kh,         g.kw,
                        d.stride_h,   d.stride_w,
                        d.dilation_h, d.dilation_w,
                        d.pad_top,    d.pad_left,
                        g.ow};
  std::atomic<bool> ok{true};
  ctx.pool.parallel_for(g.n * chunks, [&](std::int64_t t) {
    const std::int64_t n = t / chunks, p0 = (t % chunks) * kRowsPerTask;
    const std::int64_t p1 = std::min(g.pixels, p0 + kRowsPerTask), rows = p1 - p0;
    thread_local std::vector<std::int32_t> acc;
    thread_local std::vector<std::uint8_t> tile;
    acc.resize(static_cast<std::size_t>(kRowsPerTask * o_padded + 8));
    SmallKArgs a = args;
    a.x = x + n * g.c * g.h * g.w;
    small_k_rows_avx2(a, p0, p1, acc.data());
    const auto ses = static_cast<std::int64_t>(es);
    if (!nchw) {
      if (!e.apply(acc.data(), o_padded, rows, 0, g.o, y + (n * g.pixels + p0) * g.o * ses))
        ok = false;
      return;
    }
    tile.resize(static_cast<std::size_t>(rows * g.o) * es);
    if (!e.apply(acc.data(), o_padded, rows, 0, g.o, tile.data())) {
      ok = false;
      return;
    }
    // The tile's transpose into the image's channel planes: SSE2 blocks, then the edges.
    auto scatter = [&](auto one, std::int64_t step, auto block) {
      using T = decltype(one);
      const T* src = reinterpret_cast<const T*>(tile.data());
      T* dst = reinterpret_cast<T*>(y + n * g.o * g.pixels * ses) + p0;
      const std::int64_t rv = rows / step * step, ov = g.o / step * step;
      for (std::int64_t r = 0; r < rv; r += step)
        for (std::int64_t o = 0; o < ov; o += step)
          block(src + r * g.o + o, g.o, dst + o * g.pixels + r, g.pixels);
      for (std::int64_t o = 0; o < g.o; ++o)
        for (std::int64_t r = o < ov ? rv : 0; r < rows; ++r)
          dst[o * g.pixels + r] = src[r * g.o + o];
    };
    if (es == 1) scatter(std::uint8_t{}, 8, transpose8x8_u8);
    else scatter(std::uint32_t{}, 4, transpose4x4_u32);
  });
  return ok;
}

// The sum of output pixel p's window (p = (n * out_h + oh) * out_w + ow over the batch) in the
// u8 domain of the implicit kernel (pads hold the pad byte), over a's geometry (the flattened
// one for 1x1 stride-1 convolutions).
std::uint32_t implicit_rowsum(const IconvArgs& a, const Geometry& g, std::int64_t p,
                              const ConvDesc& d) {
  const std::int64_t n = p / (a.out_h * a.out_w), oh = p / a.out_w % a.out_h, ow = p % a.out_w;
  const std::uint8_t* image = a.x + n * a.h * a.w * g.c;
  std::uint32_t sum = 0;
  for (std::int64_t kh = 0; kh < g.kh; ++kh) {
    const std::int64_t ih = oh * a.stride_h - a.pad_top + kh * d.dilation_h;
    for (std::int64_t kw = 0; kw < g.kw; ++kw) {
      const std::int64_t iw = ow * a.stride_w - a.pad_left + kw * d.dilation_w;
      if (ih < 0 || ih >= a.h || iw < 0 || iw >= a.w) {
        sum += static_cast<std::uint32_t>(g.c) * a.pad;
        continue;
      }
      const std::uint8_t* px = image + (ih * a.w + iw) * g.c;
      // int8 codes v are v + 128 in the u8 domain: their stored byte with the sign bit flipped.
      const std::uint8_t flip = a.x_flip ? 0x80 : 0;
      for (std::int64_t c = 0; c < g.c; ++c) sum += static_cast<std::uint8_t>(px[c] ^ flip);
    }
  }
  return sum;
}

// Releases the thread's tile configuration (kernel.end) when a task leaves, also by an exception.
struct KernelSession {
  const KernelInfo& kernel;
  explicit KernelSession(const KernelInfo& k) : kernel(k) {
    if (kernel.begin) kernel.begin();
  }
  ~KernelSession() {
    if (kernel.end) kernel.end();
  }
  KernelSession(const KernelSession&) = delete;
  KernelSession& operator=(const KernelSession&) = delete;
};

// An int32 bias that no sum can carry out of int32 (|sum| <= K * 255 * 255) joins the
// compensation the implicit kernel's tiles start from, so the epilogue takes no add and no
// overflow check: in wrapping int32 the result is the true sum plus the bias, which fits. Writes
// the starting tiles with the bias into `init` and returns true when it fits.
bool fold_bias(const Geometry& g, const ImplicitWeights& iw, const Epilogue& e,
               AlignedBytes& init) {
  if (!e.bias_i32) return false;
  const std::int64_t bound = g.k * 255 * 255;
  bool fits = bound <= std::numeric_limits<std::int32_t>::max();
  for (std::int64_t o = 0; o < g.o && fits; ++o)
    fits = std::abs(static_cast<std::int64_t>(e.bias_i32[o])) <=
           std::numeric_limits<std::int32_t>::max() - bound;
  if (!fits) return false;
  init.reset(iw.c_init.size(), /*zero=*/false);
  auto* t = reinterpret_cast<std::uint32_t*>(init.data());
  std::memcpy(t, iw.c_init.data(), iw.c_init.size());
  for (std::int64_t o = 0; o < g.o; ++o)
    for (std::int64_t r = 0; r < 16; ++r)
      t[(o / 16) * 256 + r * 16 + o % 16] += static_cast<std::uint32_t>(e.bias_i32[o]);
  return true;
}

// The implicit kernel's starting tiles with the bias folded in, and the epilogue without it.
struct FoldedBias {
  const std::int32_t* init;
  const Epilogue* epilogue;
};

// One group through the implicit-GEMM kernel (conv_implicit.h) on NHWC X. The output pixels of
// the whole batch, in (image, row, column) order, are cut into blocks of 32 (a block may run
// across output rows and images, so no tile row idles at the end of a row), and the output
// channels into chunks of up to 128: a work item is one block against one chunk, items of one
// block adjacent. Each pool thread configures its tiles once (kernel.begin) and then takes runs
// of items from a shared counter until none is left: the tile configuration and release, and
// the pool's hand-out, are paid once per thread and call instead of once per item, while the
// counter still evens out the threads' load. A run is one item while that leaves every thread
// many runs (one 56 x 56 image gives 98 blocks), longer when the batch gives many more, so that
// the threads do not queue on the counter's cache line. Each item runs the kernel into its
// int32 sums, adds the rest of the compensation and runs the epilogue while the block is in
// cache. A 1x1 convolution with stride 1 and no pads is one output row of N * H * W pixels, so
// its tiles are contiguous runs of X.
bool run_implicit(const GemmContext& ctx, const KernelInfo& kernel, const ConvDesc& d,
                  const Geometry& g, const std::uint8_t* x, const ConvWeights& w, const Epilogue& e,
                  std::uint8_t* y, const FoldedBias* folded) {
  constexpr std::int64_t kBlockRows = 32, kChunkPanels = 8;
  // Runs per thread that the counter hands out at least, and the longest run.
  constexpr std::int64_t kRunsPerThread = 16, kMaxRun = 16;
  const ImplicitWeights& iw = w.implicit();
  const std::size_t es = out_bytes(e.op);
  const bool flat = input_is_im2col(d);
  const std::int64_t in_h = flat ? 1 : g.h, in_w = flat ? g.n * g.h * g.w : g.w;
  const std::int64_t out_h = flat ? 1 : g.oh, out_w = flat ? g.n * g.pixels : g.ow;
  const bool x_signed = d.x_params.dtype() == DType::int8;
  const auto pad = static_cast<std::uint8_t>(d.x_params.zero_point() + (x_signed ? 128 : 0));
  const std::int32_t* c_init = reinterpret_cast<const std::int32_t*>(iw.c_init.data());
  const Epilogue* epilogue = &e;
  std::optional<Epilogue> without_bias;
  if (folded) {  // prepared once by the plan
    c_init = folded->init;
    epilogue = folded->epilogue;
  } else {
    thread_local AlignedBytes with_bias;
    if (fold_bias(g, iw, e, with_bias)) {
      c_init = reinterpret_cast<const std::int32_t*>(with_bias.data());
      without_bias.emplace(e);
      without_bias->bias_i32 = nullptr;
      epilogue = &*without_bias;
    }
  }
  alignas(64) std::uint8_t pad_tile[1024];
  std::memset(pad_tile, pad, sizeof(pad_tile));
  const IconvArgs a{x,
                    g.n * g.h * g.w * g.c,
                    x_signed,
                    pad,
                    pad_tile,
                    reinterpret_cast<const std::int8_t*>(iw.b.data()),
                    c_init,
                    iw.steps,
                    g.c,
                    iw.cblocks,
                    in_h,
                    in_w,
                    g.kh,
                    g.kw,
                    out_h,
                    out_w,
                    d.stride_h,
                    d.stride_w,
                    d.dilation_h,
                    d.dilation_w,
                    d.pad_top,
                    d.pad_left};
  const std::int64_t total = g.n * g.pixels;  // output pixels of the batch
  const std::int64_t blocks = (total + kBlockRows - 1) / kBlockRows;
  const std::int64_t chunks = (iw.panels + kChunkPanels - 1) / kChunkPanels;
  const std::int64_t items = blocks * chunks;
  const std::int64_t threads = std::min<std::int64_t>(ctx.pool.threads(), items);
  const std::int64_t run = std::clamp<std::int64_t>(items / (threads * kRunsPerThread), 1, kMaxRun);
  const auto scratch_bytes = static_cast<std::size_t>(iconv_scratch_bytes(a));
  std::atomic<bool> ok{true};
  // The counter on a cache line of its own: every fetch_add would otherwise evict the line
  // from the other threads, and with it whatever of a (or of the caller's other locals) shares it.
  struct alignas(64) Counter {
    std::atomic<std::int64_t> next{0};
  } counter;
  ctx.pool.parallel_for(threads, [&, &shared_args = a](std::int64_t) {
    const IconvArgs a = shared_args;  // read on every tile step: a copy in this thread's cache
    // 64-byte aligned, so that no row of a tile store or of the gathered tiles splits a line.
    thread_local AlignedBytes acc_bytes, scratch;
    acc_bytes.reset(static_cast<std::size_t>(kBlockRows * kChunkPanels * 16 + 16) * 4, false);
    scratch.reset(scratch_bytes, /*zero=*/false);
    auto* acc = reinterpret_cast<std::int32_t*>(acc_bytes.data());
    const KernelSession session(kernel);
    for (;;) {
      const std::int64_t i0 = counter.next.fetch_add(run, std::memory_order_relaxed);
      if (i0 >= items) break;
      for (std::int64_t i = i0; i < std::min(items, i0 + run); ++i) {
        const std::int64_t chunk = i % chunks, b = i / chunks;
        const std::int64_t panel0 = chunk * kChunkPanels;
        const std::int64_t panels = std::min(kChunkPanels, iw.panels - panel0);
        const std::int64_t o0 = panel0 * 16, cols = std::min(g.o - o0, panels * 16);
        const std::int64_t ld = panels * 16;
        const std::int64_t p0 = b * kBlockRows, rows = std::min(kBlockRows, total - p0);
        kernel.iconv(a, {p0, static_cast<int>(rows), panel0, panels, acc, ld, scratch.data()});
        // The row-sum term of the compensation (the kernel added the rest), in wrapping int32
        // (uint32 arithmetic).
        if (iw.needs_rowsum) {
          const auto* rf = reinterpret_cast<const std::uint32_t*>(iw.rf.data()) + o0;
          for (std::int64_t r = 0; r < rows; ++r) {
            const std::uint32_t rowsum = implicit_rowsum(a, g, p0 + r, d);
            auto* row = reinterpret_cast<std::uint32_t*>(acc + r * ld);
            for (std::int64_t c = 0; c < cols; ++c) row[c] += rf[c] * rowsum;
          }
        }
        if (!epilogue->apply(acc, ld, rows, o0, cols,
                             y + (p0 * g.o + o0) * static_cast<std::int64_t>(es)))
          ok = false;
      }
    }
  });
  return ok;
}

bool run_gemm_groups(const GemmContext& ctx, const KernelInfo& kernel, const ConvDesc& d,
                     const Geometry& g, const std::uint8_t* x, const ConvWeights& w,
                     const Epilogue& e, std::uint8_t* y, ConvScratch& s) {
  const std::size_t es = out_bytes(e.op);
  const bool direct = input_is_im2col(d);
  // One GEMM over the whole batch when X is already A, else one per image and group.
  const std::int64_t images = direct ? 1 : g.n;
  const std::int64_t m = direct ? g.n * g.pixels : g.pixels;
  const std::int64_t ld = g.og;
  s.acc.resize(static_cast<std::size_t>(m * ld + 8));  // + 8: the epilogue reads 8 at a time
  if (!direct && g.k > 0) s.a.reset(static_cast<std::size_t>(g.pixels * g.k), /*zero=*/false);
  const auto zx = static_cast<std::uint8_t>(d.x_params.zero_point());
  const std::int64_t chunks = (m + kRowsPerTask - 1) / kRowsPerTask;
  std::atomic<bool> ok{true};
  for (std::int64_t n = 0; n < images; ++n) {
    const std::uint8_t* xn = x + n * g.h * g.w * g.c;
    for (std::int64_t grp = 0; grp < d.groups; ++grp) {
      if (g.k == 0) {
        std::fill(s.acc.begin(), s.acc.end(), 0);
      } else {
        const std::uint8_t* a = xn;
        if (!direct) {
          ctx.pool.parallel_for(chunks, [&](std::int64_t t) {
            const std::int64_t p0 = t * kRowsPerTask;
            im2col_rows(d, g, xn, grp, zx, p0, std::min(m, p0 + kRowsPerTask), s.a.data());
          });
          a = s.a.data();
        }
        MatmulDesc md = conv_group_matmul(d, grp);
        md.m = m;
        const X86PackedWeights& b = w.group(grp);
        run_gemm(exact_for_weights(kernel, b.holds_min), md, a, b,
                 {GemmOutput::Kind::int32, s.acc.data()}, ctx.pool, ctx.scratch, ctx.tuning);
      }
      ctx.pool.parallel_for(chunks, [&](std::int64_t t) {
        const std::int64_t p0 = t * kRowsPerTask, rows = std::min(m, p0 + kRowsPerTask) - p0;
        const std::int64_t first = n * g.pixels + p0;  // output pixel of the batch
        if (!e.apply(s.acc.data() + p0 * ld, ld, rows, grp * g.og, g.og,
                     y + (first * g.o + grp * g.og) * static_cast<std::int64_t>(es)))
          ok = false;
      });
      if (!ok) return false;
    }
  }
  return ok;
}

}  // namespace

MatmulDesc conv_group_matmul(const ConvDesc& d, std::int64_t g) {
  const std::int64_t og = d.groups > 0 ? d.out_channels / d.groups : 0;
  const QuantizationParams& wp = d.w_params;
  MatmulDesc m{.m = d.out_h() * d.out_w(),
               .n = og,
               .k = d.groups > 0 ? d.c / d.groups * d.kernel_h * d.kernel_w : 0,
               .a = d.x_params,
               .b = wp,
               .b_layout = MatrixLayout::nk,
               .y = std::nullopt};
  if (wp.scheme().granularity == Granularity::per_channel) {
    const auto first = static_cast<std::ptrdiff_t>(g * og);
    std::vector<float> scales(wp.scales().begin() + first, wp.scales().begin() + first + og);
    std::vector<std::int32_t> zps(wp.zero_points().begin() + first,
                                  wp.zero_points().begin() + first + og);
    m.b = QuantizationParams(wp.dtype(), wp.scheme(), std::move(scales), std::move(zps));
  }
  return m;
}

bool conv_depthwise_direct(const ConvDesc& d) { return d.c > 0 && d.groups == d.c; }

std::int64_t depthwise_table_channels(std::int64_t c) {
  const std::int64_t period = std::lcm(c, std::int64_t{32});
  return period <= kDepthwiseMaxPeriod ? period : (c + 31) / 32 * 32;
}

bool conv_small_k_direct(const ConvDesc& d) {
  return d.groups == 1 && d.c * d.kernel_h * d.kernel_w <= kSmallKMax;
}

bool conv_small_k_preferred(const ConvDesc& d) {
  return conv_small_k_direct(d) && d.out_channels <= 64;
}

bool conv_implicit_direct(const ConvDesc& d) { return d.groups == 1 && d.c > 0; }

bool conv_implicit_preferred(const ConvDesc& d) { return conv_implicit_direct(d) && d.c >= 16; }

ConvWeights::ConvWeights(const ConvDesc& d, const void* w, ConvPath path, ThreadPool* pool)
    : path_(path) {
  const Geometry g(d);
  const auto* src = static_cast<const std::uint8_t*>(w);
  const bool is_signed = d.w_params.dtype() == DType::int8;
  auto code = [&](std::int64_t i) -> std::int32_t {
    return is_signed ? static_cast<std::int8_t>(src[i]) : src[i];
  };
  const std::int64_t taps = g.kh * g.kw;
  if (path == ConvPath::small_k) {
    // [O][K] -> centered pairs [(K + 1) / 2][O rounded up to 8][2]
    const std::int64_t o_padded = (g.o + 7) / 8 * 8;
    pairs_.assign(static_cast<std::size_t>((g.k + 1) / 2 * o_padded * 2), 0);
    for (std::int64_t o = 0; o < g.o; ++o) {
      const std::int32_t zw = d.w_params.zero_point(w_pair(d, o));
      for (std::int64_t k = 0; k < g.k; ++k)
        pairs_[static_cast<std::size_t>(((k / 2) * o_padded + o) * 2 + k % 2)] =
            static_cast<std::int16_t>(code(o * g.k + k) - zw);
    }
    return;
  }
  if (path == ConvPath::implicit) {
    pack_implicit(d, code);
    return;
  }
  if (path == ConvPath::depthwise) {
    // [O][1][KH][KW] -> centered [KH * KW][O]
    taps_.resize(static_cast<std::size_t>(taps * g.o));
    for (std::int64_t o = 0; o < g.o; ++o) {
      const std::int32_t zw = d.w_params.zero_point(w_pair(d, o));
      for (std::int64_t t = 0; t < taps; ++t)
        taps_[static_cast<std::size_t>(t * g.o + o)] = code(o * taps + t) - zw;
    }
    const std::int64_t pairs = (taps + 1) / 2;
    dw_channels_ = depthwise_table_channels(g.o);
    const std::int64_t blocks = dw_channels_ / 32;
    dw_pairs_.assign(static_cast<std::size_t>(blocks * pairs * 64), 0);
    dw_init_.assign(static_cast<std::size_t>(blocks * 32), 0);
    const auto zx = static_cast<std::uint32_t>(d.x_params.zero_point());
    // Table channel v holds output channel v % O: past O the table repeats the channels, which
    // the kernel's runs of pixels read as the next pixel's (masked off elsewhere).
    for (std::int64_t v = 0; v < dw_channels_; ++v) {
      const std::int64_t o = v % g.o;
      const std::int64_t b = v / 32, c = v % 32, lane = c / 8, half = c % 8 / 4, i = c % 4;
      std::uint32_t sum = 0;
      for (std::int64_t t = 0; t < taps; ++t) {
        const std::int32_t tap = taps_[static_cast<std::size_t>(t * g.o + o)];
        const std::int64_t at = ((b * pairs + t / 2) * 2 + half) * 32 + lane * 8 + 2 * i + t % 2;
        dw_pairs_[static_cast<std::size_t>(at)] = static_cast<std::int16_t>(tap);
        sum += static_cast<std::uint32_t>(tap);
      }
      dw_init_[static_cast<std::size_t>(b * 32 + half * 16 + lane * 4 + i)] =
          static_cast<std::int32_t>(0u - zx * sum);
    }
    const std::int64_t groups = (g.kw + 3) / 4;
    const bool fits_int8 = std::all_of(taps_.begin(), taps_.end(),
                                       [](std::int32_t t) { return t >= -128 && t <= 127; });
    if (g.o % 16 == 0 && fits_int8 && g.kh * groups <= kDepthwiseDot4MaxSteps) {
      dw_quads_.assign(static_cast<std::size_t>(g.kh * groups * g.o * 4), 0);
      for (std::int64_t kh = 0; kh < g.kh; ++kh)
        for (std::int64_t kw = 0; kw < g.kw; ++kw)
          for (std::int64_t o = 0; o < g.o; ++o)
            dw_quads_[static_cast<std::size_t>(((kh * groups + kw / 4) * g.o + o) * 4 + kw % 4)] =
                static_cast<std::int8_t>(
                    taps_[static_cast<std::size_t>((kh * g.kw + kw) * g.o + o)]);
      dw_tap_sums_.assign(static_cast<std::size_t>(g.o), 0u);
      for (std::int64_t t = 0; t < taps; ++t)
        for (std::int64_t o = 0; o < g.o; ++o)
          dw_tap_sums_[static_cast<std::size_t>(o)] +=
              static_cast<std::uint32_t>(taps_[static_cast<std::size_t>(t * g.o + o)]);
    }
    return;
  }
  if (g.k == 0 || g.og == 0) return;
  // OIHW -> [O][KH][KW][C / G], the order of the im2col rows.
  std::vector<std::uint8_t> reordered(static_cast<std::size_t>(g.o * g.k));
  for (std::int64_t o = 0; o < g.o; ++o)
    for (std::int64_t ci = 0; ci < g.cg; ++ci)
      for (std::int64_t t = 0; t < taps; ++t)
        reordered[static_cast<std::size_t>(o * g.k + t * g.cg + ci)] =
            src[(o * g.cg + ci) * taps + t];
  for (std::int64_t grp = 0; grp < d.groups; ++grp) {
    groups_.push_back(std::make_unique<X86PackedWeights>(
        conv_group_matmul(d, grp), reordered.data() + grp * g.og * g.k, pool));
    holds_min_ = holds_min_ || groups_.back()->holds_min;
  }
}

template <class Code>
void ConvWeights::pack_implicit(const ConvDesc& d, const Code& code) {
  const Geometry g(d);
  const std::int64_t taps = g.kh * g.kw;
  ImplicitWeights& iw = implicit_;
  iw.cblocks = (g.c + 63) / 64;
  iw.steps = taps * iw.cblocks;
  iw.panels = (g.o + 15) / 16;
  iw.b.reset(static_cast<std::size_t>(iw.panels * iw.steps * 1024), /*zero=*/true);
  auto* b = reinterpret_cast<std::int8_t*>(iw.b.data());
  const std::int32_t shift = d.w_params.dtype() == DType::int8 ? 0 : 128;
  const bool x_signed = d.x_params.dtype() == DType::int8;
  const auto za = static_cast<std::uint32_t>(d.x_params.zero_point() + (x_signed ? 128 : 0));
  iw.rf.assign(static_cast<std::size_t>(g.o), 0);
  iw.comp.assign(static_cast<std::size_t>(g.o), 0);
  for (std::int64_t o = 0; o < g.o; ++o) {
    const std::int32_t zw = d.w_params.zero_point(w_pair(d, o));
    std::int64_t colsum = 0;
    std::int8_t* panel = b + (o / 16) * iw.steps * 1024 + (o % 16) * 4;
    for (std::int64_t ci = 0; ci < g.c; ++ci)
      for (std::int64_t t = 0; t < taps; ++t) {
        const std::int32_t v = code((o * g.c + ci) * taps + t);
        colsum += v;
        const std::int64_t k = t * iw.cblocks * 64 + ci;  // [tap][C rounded up to 64]
        panel[(k / 64) * 1024 + (k % 64 / 4) * 64 + k % 4] = static_cast<std::int8_t>(v - shift);
      }
    const auto i = static_cast<std::size_t>(o);
    iw.rf[i] = shift - zw;
    iw.comp[i] = static_cast<std::int32_t>(static_cast<std::uint32_t>(g.k) * za *
                                               static_cast<std::uint32_t>(zw) -
                                           za * static_cast<std::uint32_t>(colsum));
    iw.needs_rowsum = iw.needs_rowsum || iw.rf[i] != 0;
  }
  iw.c_init.reset(static_cast<std::size_t>(iw.panels * 1024), /*zero=*/true);
  auto* c_init = reinterpret_cast<std::int32_t*>(iw.c_init.data());
  for (std::int64_t o = 0; o < g.o; ++o)
    for (std::int64_t r = 0; r < 16; ++r)
      c_init[(o / 16) * 256 + r * 16 + o % 16] = iw.comp[static_cast<std::size_t>(o)];
}

bool conv_bias_cannot_overflow(const ConvDesc& d, const void* w, const std::int32_t* bias) {
  const Geometry g(d);
  const auto& xt = traits(d.x_params.dtype());
  const std::int64_t zx = d.x_params.zero_point();
  const std::int64_t max_x = std::max(zx - xt.qmin, xt.qmax - zx);
  const auto* src = static_cast<const std::uint8_t*>(w);
  const bool is_signed = d.w_params.dtype() == DType::int8;
  for (std::int64_t o = 0; o < g.o; ++o) {
    const std::int64_t zw = d.w_params.zero_point(w_pair(d, o));
    std::int64_t sum = 0;
    for (std::int64_t i = o * g.k; i < (o + 1) * g.k; ++i)
      sum += std::llabs((is_signed ? static_cast<std::int8_t>(src[i]) : src[i]) - zw);
    if (max_x * sum + std::llabs(bias[o]) > std::numeric_limits<std::int32_t>::max()) return false;
  }
  return true;
}

std::size_t ConvWeights::bytes() const noexcept {
  std::size_t b = taps_.size() * sizeof(std::int32_t) + pairs_.size() * sizeof(std::int16_t) +
                  dw_pairs_.size() * sizeof(std::int16_t) + dw_init_.size() * 4 + dw_quads_.size() +
                  dw_tap_sums_.size() * 4 + implicit_.b.size() + implicit_.c_init.size() +
                  (implicit_.rf.size() + implicit_.comp.size()) * 4;
  for (const auto& g : groups_) b += g->bytes();
  return b;
}

namespace {

// The convolution of d's whole batch on the calling thread's scratch, each step split across
// the pool (the path for batches too small to give every thread its own images).
bool run_batch(const GemmContext& ctx, const KernelInfo& kernel, const ConvDesc& d,
               const Geometry& g, const Epilogue& e, const void* x, const ConvWeights& w, void* y,
               ConvScratch& s, const FoldedBias* folded) {
  const std::size_t es = out_bytes(e.op);
  const bool nchw = d.layout == ConvLayout::nchw;
  const auto* xs = static_cast<const std::uint8_t*>(x);
  if (nchw && g.h * g.w * g.c > 0) {
    s.x_nhwc.reset(static_cast<std::size_t>(g.n * g.c * g.h * g.w), /*zero=*/false);
    for (std::int64_t n = 0; n < g.n; ++n)
      transpose(xs + n * g.c * g.h * g.w, s.x_nhwc.data() + n * g.c * g.h * g.w, g.c, g.h * g.w, 1,
                ctx.pool);
    xs = s.x_nhwc.data();
  }
  auto* ys = static_cast<std::uint8_t*>(y);
  if (nchw) {
    s.y_nhwc.reset(static_cast<std::size_t>(g.n * g.pixels * g.o) * es, /*zero=*/false);
    ys = s.y_nhwc.data();
  }
  const bool ok =
      w.path() == ConvPath::depthwise  ? run_depthwise(ctx, kernel, d, g, xs, w, e, ys, s)
      : w.path() == ConvPath::implicit ? run_implicit(ctx, kernel, d, g, xs, w, e, ys, folded)
                                       : run_gemm_groups(ctx, kernel, d, g, xs, w, e, ys, s);
  if (!ok) return false;
  if (nchw) {
    const std::int64_t image = g.pixels * g.o * static_cast<std::int64_t>(es);
    for (std::int64_t n = 0; n < g.n; ++n)
      transpose(ys + n * image, static_cast<std::uint8_t*>(y) + n * image, g.pixels, g.o, es,
                ctx.pool);
  }
  return true;
}

// Whether each thread should take whole images: with at least two per thread the pool is
// busy without splitting an image, and every step of an image (transposes, im2col, GEMM,
// epilogue) then runs on one thread on data that stays in its cache, with one fork-join for
// the batch instead of several per image. A 1x1 NHWC convolution reads X as the GEMM's A for
// the whole batch at once and gains nothing from the split.
bool split_by_image(const ConvDesc& d, const KernelInfo& kernel, const ConvWeights& w,
                    const ThreadPool& pool) {
  if (d.n < 2 || w.path() == ConvPath::implicit) return false;  // its tasks span the batch
  if (d.layout == ConvLayout::nhwc && input_is_im2col(d)) return false;
  // The four-tap depthwise kernel splits the whole batch into ranges of whole rows itself, about
  // two tasks per thread, and an NHWC image needs no per-image scratch.
  if (d.layout == ConvLayout::nhwc && w.path() == ConvPath::depthwise &&
      runs_depthwise_dot4(kernel, w))
    return false;
  return pool.threads() == 1 || d.n >= 2 * static_cast<std::int64_t>(pool.threads());
}

}  // namespace

struct ConvRunConstants {
  std::vector<std::uint8_t> bias;  // the plan's fixed bias, its own copy (empty: none)
  std::optional<Epilogue> epilogue;
  AlignedBytes init;  // the implicit kernel's starting tiles with the int32 bias folded in
  std::optional<Epilogue> without_bias;  // set when init holds the bias
};

std::shared_ptr<const ConvRunConstants> prepare_conv_run(const GemmTuning& tuning, OpKind op,
                                                         const ConvDesc& d, const ConvWeights& w,
                                                         const void* bias) {
  auto c = std::make_shared<ConvRunConstants>();
  if (d.bias != ConvBias::none && bias) {
    const auto* b = static_cast<const std::uint8_t*>(bias);
    c->bias.assign(b, b + d.out_channels * 4);  // int32 or float32 per output channel
  }
  c->epilogue.emplace(op, d, c->bias.empty() ? nullptr : c->bias.data(), tuning.avx512_epilogue);
  if (w.path() == ConvPath::implicit &&
      fold_bias(Geometry(d), w.implicit(), *c->epilogue, c->init)) {
    c->without_bias.emplace(*c->epilogue);
    c->without_bias->bias_i32 = nullptr;
  }
  return c;
}

bool run_conv(const GemmContext& ctx, const KernelInfo& kernel, OpKind op, const ConvDesc& d,
              const void* x, const ConvWeights& w, const void* bias, void* y,
              const ConvRunConstants* prepared) {
  const Geometry g(d);
  if (g.n * g.o * g.pixels == 0) return true;
  std::optional<Epilogue> per_call;
  const Epilogue& e =
      prepared ? *prepared->epilogue : per_call.emplace(op, d, bias, ctx.tuning.avx512_epilogue);
  std::optional<FoldedBias> folded;
  if (prepared && prepared->without_bias)
    folded = FoldedBias{reinterpret_cast<const std::int32_t*>(prepared->init.data()),
                        &*prepared->without_bias};
  if (w.path() == ConvPath::small_k)
    return run_small_k(ctx, d, g, static_cast<const std::uint8_t*>(x), w, e,
                       static_cast<std::uint8_t*>(y));
  if (!split_by_image(d, kernel, w, ctx.pool))
    return run_batch(ctx, kernel, d, g, e, x, w, y, conv_scratch(), folded ? &*folded : nullptr);
  // One task per image. The pool runs a parallel_for called from inside a task on the calling
  // thread, so every step below stays on the task's thread, with that thread's scratch.
  ConvDesc one = d;
  one.n = 1;
  const Geometry g1(one);
  const std::int64_t x_image = g.c * g.h * g.w;
  const std::int64_t y_image = g.o * g.pixels * static_cast<std::int64_t>(out_bytes(op));
  std::atomic<bool> ok{true};
  ctx.pool.parallel_for(g.n, [&](std::int64_t n) {
    thread_local GemmScratch gemm_scratch;
    const GemmContext own{ctx.pool, gemm_scratch, ctx.tuning};
    if (!run_batch(own, kernel, one, g1, e, static_cast<const std::uint8_t*>(x) + n * x_image, w,
                   static_cast<std::uint8_t*>(y) + n * y_image, conv_scratch(), nullptr))
      ok = false;
  });
  return ok;
}

}  // namespace qforge::cpu_x86
