// The block-wise weight GEMM on the tensor cores (mma.sync m16n8k32 s8, sm_80+); see
// gemm_blockwise.h for what it computes.
//
// A CTA computes a BM x BN output tile over its share of K in stages of 64 codes (two 32-code
// groups, one mma.sync K step each) through a cp.async ring: A as int8 rows (swizzled like the
// int8 GEMM, read with ldmatrix), B as its raw codes (4-bit: 32 bytes per row and stage, two
// codes per byte), and per stage the scales (and zero points, column sums, row sums) of the
// blocks the stage touches.
//
// 4-bit B is unpacked in registers. The mma B fragment of thread (g, t) is column g, codes
// 4t..4t+3 (b0) and 16+4t..16+4t+3 (b1) of the group: bytes 2t, 2t+1 and 8+2t, 9+2t of the row's
// 16-byte group. Two 32-bit shared loads and one byte permute gather them into x; the low
// nibbles of x are codes 4t, 4t+2, 16+4t, 18+4t and the high nibbles the odd ones, so two more
// permutes interleave them into b0 and b1. Centring happens on four bytes at once: with
// X = 0x88 (int4: (v ^ 8) - 8 = v) or 0x80 (uint4) per byte, ((nibble ^ X) - (zb + 8|0)) ^ 0x80
// is the int8 value b - zb, and no byte borrows from its neighbour (each byte stays >= 0x80 - 15
// before the last XOR).
//
// Exactness of the float epilogue (matmul_dequant): each block's raw sum is accumulated by the
// tensor cores on top of 0x4B400000, the bits of 1.5 * 2^23, so the int32 result read as a
// float is 1.5 * 2^23 + raw exactly while |raw| < 2^22, and subtracting 1.5 * 2^23 gives
// float(raw) with one full-rate FADD instead of a quarter-rate conversion. The zero-point terms
// are then added with FMAs whose operands and results are integers below 2^24, hence exact:
// C_j = raw - zb'_j rowsum_j(A') - za' colsum_j(B centred). Limits that keep this true:
// |raw| <= block * 128 * 15 (4-bit) or block * 128 * 128 (8-bit) < 2^22 and |C_j| <= block *
// 255 * 255 < 2^24, i.e. block <= 256 (4-bit) and <= 128 (8-bit) (blockwise_max_block). Only
// acc += C_j * sb[n, j] (one FMA per block) and y = acc * sa + bias round.
#include <algorithm>
#include <atomic>
#include <numeric>

#include "check.h"
#include "kernels/epilogue.cuh"
#include "kernels/gemm_blockwise.h"
#include "kernels/gemm_mma.cuh"
#include "kernels/ptx.cuh"

namespace qforge::cuda {
namespace {

constexpr int kMagicBits = 0x4B400000;  // 1.5 * 2^23
constexpr float kMagic = 12582912.0f;

template <int BM_, int BN_, int WM_, int WN_, int STAGES_>
struct BwTile {
  static constexpr int BM = BM_, BN = BN_, WM = WM_, WN = WN_, STAGES = STAGES_;
  static constexpr int BK = 64;  // codes of K per stage: two groups of 32
  static constexpr int THREADS = WM * WN * 32;
  static constexpr int TM = BM / WM, TN = BN / WN;
  static constexpr int MT = TM / 16, NT = TN / 8;
  static constexpr int SLOTS = 4;  // blocks one stage can touch (block 16: 4; otherwise <= 2)
  static_assert(TM % 16 == 0 && TN % 8 == 0, "warp tile must be whole m16 x n8 pieces");
};

using Bw128x128 = BwTile<128, 128, 2, 4, 4>;
using Bw16x128 = BwTile<16, 128, 1, 4, 4>;

// Byte offsets inside one pipeline stage.
template <class T, int Bits>
struct BwSmem {
  static constexpr int A = 0;
  static constexpr int B = A + T::BM * 64;
  static constexpr int SCALES = B + T::BN * (Bits == 4 ? 32 : 64);
  static constexpr int ZPS = SCALES + T::SLOTS * T::BN * 4;
  static constexpr int CSUM = ZPS + T::SLOTS * T::BN * 4;
  static constexpr int NZB = CSUM + T::SLOTS * T::BN * 4;
  static constexpr int RSUM = NZB + T::SLOTS * T::BN * 4;
  static constexpr int STAGE = RSUM + T::SLOTS * T::BM * 4;
  static constexpr int TOTAL = T::STAGES * STAGE + 16;  // + the split-K "last CTA" flag
  static_assert(STAGE % 128 == 0, "stages stay 128-byte aligned");
};

// The int8 GEMM's swizzle for 64-byte rows (gemm_mma.cu): chunk c of row r at c ^ ((r >> 1) & 3).
__device__ __forceinline__ std::uint32_t swizzled64(int row, int chunk) {
  return static_cast<std::uint32_t>(row * 64 + ((chunk ^ ((row >> 1) & 3)) << 4));
}
// 4-bit B rows are 32 bytes (two 16-byte groups); swapping the groups of rows 4-7 mod 8 puts
// the eight rows one fragment load touches into different banks.
__device__ __forceinline__ std::uint32_t swizzled32(int row, int chunk) {
  return static_cast<std::uint32_t>(row * 32 + ((chunk ^ ((row >> 2) & 1)) << 4));
}

// Shared-memory reads by byte offset from the dynamic shared array: ordinary C++ loads, so the
// compiler keeps them after the barriers and cp.async waits (which clobber memory) and may
// schedule them freely otherwise.
__device__ __forceinline__ std::uint32_t lds32(const std::uint8_t* smem, std::uint32_t off) {
  return *reinterpret_cast<const std::uint32_t*>(smem + off);
}
__device__ __forceinline__ float2 lds_f2(const std::uint8_t* smem, std::uint32_t off) {
  return *reinterpret_cast<const float2*>(smem + off);
}
__device__ __forceinline__ float lds_f(const std::uint8_t* smem, std::uint32_t off) {
  return *reinterpret_cast<const float*>(smem + off);
}

// Groups of 8 tile rows sweep the N tiles together (L2 reuse), as in the int8 GEMM.
__device__ __forceinline__ void tile_coords(int tiles_m, int tiles_n, int& tm, int& tn) {
  constexpr int kGroup = 8;
  const int id = blockIdx.x;
  const int per_group = kGroup * tiles_n;
  const int first_m = (id / per_group) * kGroup;
  const int group_m = min(tiles_m - first_m, kGroup);
  tm = first_m + (id % per_group) % group_m;
  tn = (id % per_group) / group_m;
}

// Four centred int8 codes: ((v ^ x) - zz) ^ 0x80 per byte (see the top of the file).
__device__ __forceinline__ std::uint32_t centre(std::uint32_t v, std::uint32_t zz) {
  return (v - zz) ^ 0x80808080u;
}
// zz for a zero point: (zb + 8) per byte for int4, zb for uint4.
__device__ __forceinline__ std::uint32_t zero_bytes(std::int32_t zb, bool is_signed) {
  return (static_cast<std::uint32_t>(zb + (is_signed ? 8 : 0)) & 0xFFu) * 0x01010101u;
}

// y = acc * sa (+ bias) for columns n, n + 1 of row m, as the output type. Out of line: the
// kernels call it once per fragment pair at the end, and 32 inlined copies of every output
// type would only crowd the instruction cache.
static __device__ __noinline__ void store_float_pair(const BlockwiseGemm& p, std::int64_t m,
                                                     std::int64_t n, float v0, float v1) {
  if (m >= p.m || n >= p.n) return;
  const bool both = n + 1 < p.n;
  const float sa = dev::at(p.sa, m);
  v0 = __fmul_rn(v0, sa);
  v1 = __fmul_rn(v1, sa);
  if (p.bias) {  // only then: adding +0.0 would turn -0.0 into +0.0
    v0 = __fadd_rn(v0, p.bias[n]);
    if (both) v1 = __fadd_rn(v1, p.bias[n + 1]);
  }
  const std::int64_t off = m * p.ldc + n;
  const bool paired = both && p.paired;
  if (p.out_type == FloatType::f32) {
    float* out = static_cast<float*>(p.out) + off;
    if (paired) {
      *reinterpret_cast<float2*>(out) = make_float2(v0, v1);
    } else {
      out[0] = v0;
      if (both) out[1] = v1;
    }
  } else if (p.out_type == FloatType::f16) {
    __half* out = static_cast<__half*>(p.out) + off;
    if (paired) {
      *reinterpret_cast<__half2*>(out) = __halves2half2(__float2half_rn(v0), __float2half_rn(v1));
    } else {
      out[0] = __float2half_rn(v0);
      if (both) out[1] = __float2half_rn(v1);
    }
  } else {
    __nv_bfloat16* out = static_cast<__nv_bfloat16*>(p.out) + off;
    if (paired) {
      *reinterpret_cast<__nv_bfloat162*>(out) =
          __halves2bfloat162(__float2bfloat16_rn(v0), __float2bfloat16_rn(v1));
    } else {
      out[0] = __float2bfloat16_rn(v0);
      if (both) out[1] = __float2bfloat16_rn(v1);
    }
  }
}

// What a kernel instance produces, fixed at compile time so that each keeps only its own
// accumulators and code path: int32 output (whole raw sums); float output with blocks of 32
// (each group's block sum starts from the magic bits in temporaries), of 16 (two blocks per
// group, two mma each with the other half of B zeroed), or of 64 or more (a block's raw sum
// persists across groups in acc_i).
enum class BwMode : int { int_out, float_block32, float_block16, float_multi };

// Zp: some zero-point term is present (A's zero point with column sums, or 8-bit B's zero
// points with row sums); without one, a block's flush is one FADD and one FFMA per output.
template <class T, int Bits, BwMode Mode, bool Zp>
__global__ void __launch_bounds__(T::THREADS)
    qbw_gemm_kernel(const __grid_constant__ BlockwiseGemm p) {
  constexpr bool kFloat = Mode != BwMode::int_out;
  constexpr bool kPersistentInt = Mode == BwMode::int_out || Mode == BwMode::float_multi;
  using S = BwSmem<T, Bits>;
  extern __shared__ __align__(128) std::uint8_t smem[];
  const std::uint32_t s0 = dev::smem_addr(smem);
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int wm = warp % T::WM, wn = warp / T::WM;
  const int g = lane / 4, t = lane % 4;

  const int tiles_m = static_cast<int>((p.m + T::BM - 1) / T::BM);
  const int tiles_n = static_cast<int>((p.n + T::BN - 1) / T::BN);
  int tm, tn;
  tile_coords(tiles_m, tiles_n, tm, tn);
  const std::int64_t m0 = static_cast<std::int64_t>(tm) * T::BM;
  const std::int64_t n0 = static_cast<std::int64_t>(tn) * T::BN;

  // Group and block positions in 32-bit arithmetic (a 64-bit division is a call, and the
  // registers around it spill): K itself stays below 2^31 codes.
  const int block = static_cast<int>(p.b.block);
  const int groups = static_cast<int>(p.groups);
  const int g_begin = static_cast<int>(blockIdx.y) * p.groups_per_split;  // even, a block boundary
  const int g_end = min(groups, g_begin + p.groups_per_split);
  const int kt_count = max(0, (g_end - g_begin + 1) / 2);
  const int kt_begin = g_begin / 2;
  const bool use_csum = Zp && kFloat && p.a_zero_points && p.b.col_sums != nullptr;
  const bool use_zb =
      Zp && p.b.neg_zero_points != nullptr && p.row_sums != nullptr;  // 8-bit affine B

  // Each thread's share of a stage's copies, fixed for the CTA: the row pointers and shared
  // offsets are computed once here, so that a stage costs a few adds per copy.
  constexpr int kBChunks = Bits == 4 ? 2 : 4;  // 16-byte chunks per B row and stage
  constexpr int kACopies = (T::BM * 4 + T::THREADS - 1) / T::THREADS;
  constexpr int kBCopies = (T::BN * kBChunks + T::THREADS - 1) / T::THREADS;
  static_assert(T::THREADS % T::BN == 0 && (T::SLOTS * T::BN) % T::THREADS == 0,
                "aux copies split evenly");
  constexpr int kAuxCopies = T::SLOTS * T::BN / T::THREADS;  // one column, several slots
  const std::int8_t* a_src[kACopies];
  std::uint32_t a_dst[kACopies];
  int a_col[kACopies];  // byte offset of the chunk inside the stage's K range; -1: no copy
#pragma unroll
  for (int i = 0; i < kACopies; ++i) {
    const int c = tid + i * T::THREADS, row = c / 4, chunk = c % 4;
    const bool mine = c < T::BM * 4;
    const bool ok = mine && m0 + row < p.m;
    a_src[i] = ok ? p.a + (m0 + row) * p.lda + chunk * 16 : p.a;
    a_dst[i] = S::A + swizzled64(mine ? row : 0, chunk);
    a_col[i] = !mine ? -1 : ok ? chunk * 16 : -2;  // -2: zero-fill (row past M)
  }
  const std::uint8_t* b_src[kBCopies];
  std::uint32_t b_dst[kBCopies];
  int b_col[kBCopies];
#pragma unroll
  for (int i = 0; i < kBCopies; ++i) {
    const int c = tid + i * T::THREADS, row = c / kBChunks, chunk = c % kBChunks;
    const bool mine = c < T::BN * kBChunks;
    const bool ok = mine && n0 + row < p.n;
    b_src[i] = ok ? p.b.codes + (n0 + row) * p.b.ld + chunk * 16 : p.b.codes;
    b_dst[i] =
        S::B + (Bits == 4 ? swizzled32(mine ? row : 0, chunk) : swizzled64(mine ? row : 0, chunk));
    b_col[i] = !mine ? -1 : ok ? chunk * 16 : -2;
  }
  const int aux_col = tid % T::BN, aux_slot0 = tid / T::BN;
  const bool aux_ok = n0 + aux_col < p.n;
  const std::int64_t aux_row = aux_ok ? (n0 + aux_col) * p.b.blocks : 0;

  auto load_stage = [&](int stage, int kt) {
    const std::uint32_t base = s0 + stage * S::STAGE;
    const std::int64_t k0 = static_cast<std::int64_t>(kt) * T::BK;
#pragma unroll
    for (int i = 0; i < kACopies; ++i) {
      if (a_col[i] == -1) continue;
      const bool ok = a_col[i] >= 0 && k0 + a_col[i] < p.lda;
      dev::cp_async16(base + a_dst[i], ok ? a_src[i] + k0 : p.a, ok ? 16 : 0);
    }
    const std::int64_t kb = Bits == 4 ? k0 / 2 : k0;  // B bytes before this stage
#pragma unroll
    for (int i = 0; i < kBCopies; ++i) {
      if (b_col[i] == -1) continue;
      const bool ok = b_col[i] >= 0 && kb + b_col[i] < p.b.ld;
      dev::cp_async16(base + b_dst[i], ok ? b_src[i] + kb : p.b.codes, ok ? 16 : 0);
    }
    // The blocks this stage touches: j_first .. j_first + slots - 1 (no division for the
    // fixed block sizes).
    const int j_first = Mode == BwMode::float_block32   ? 2 * kt
                        : Mode == BwMode::float_block16 ? 4 * kt
                                                        : kt * T::BK / block;
    const int slots = Mode == BwMode::float_block32 ? 2
                      : Mode == BwMode::float_block16
                          ? 4
                          : min(T::SLOTS, (kt * T::BK + T::BK - 1) / block - j_first + 1);
#pragma unroll
    for (int i = 0; i < kAuxCopies; ++i) {
      const int slot = aux_slot0 + i * (T::THREADS / T::BN);
      if (slot >= slots) continue;
      const std::int64_t j = j_first + slot;
      const bool ok = aux_ok && j < p.b.blocks;
      const std::int64_t idx = ok ? aux_row + j : 0;
      const std::uint32_t at = base + static_cast<std::uint32_t>((slot * T::BN + aux_col) * 4);
      if (kFloat) dev::cp_async4(at + S::SCALES, p.b.scales + idx, ok ? 4 : 0);
      if (Bits == 4 && p.b.zero_points)
        dev::cp_async4(at + S::ZPS, p.b.zero_points + idx, ok ? 4 : 0);
      if (use_csum) dev::cp_async4(at + S::CSUM, p.b.col_sums + idx, ok ? 4 : 0);
      if (use_zb) dev::cp_async4(at + S::NZB, p.b.neg_zero_points + idx, ok ? 4 : 0);
    }
    if (use_zb) {
      for (int i = tid; i < slots * T::BM; i += T::THREADS) {
        const int slot = i / T::BM, row = i % T::BM;
        const std::int64_t gm = m0 + row, j = j_first + slot;
        const bool ok = gm < p.m && j < p.b.blocks;
        dev::cp_async4(base + S::RSUM + static_cast<std::uint32_t>((slot * T::BM + row) * 4),
                       p.row_sums + (ok ? gm * p.b.blocks + j : 0), ok ? 4 : 0);
      }
    }
  };

  // Accumulators: acc_i holds the whole raw sum (int32 output) or a block's raw sum on top of
  // the magic bits (float_multi); acc_f the scaled float sum. The compiler drops the unused one.
  int acc_i[T::MT][T::NT][4];
  float acc_f[T::MT][T::NT][4];
#pragma unroll
  for (int i = 0; i < T::MT; ++i)
#pragma unroll
    for (int j = 0; j < T::NT; ++j)
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        acc_i[i][j][r] = 0;
        acc_f[i][j][r] = 0.0f;
      }
  (void)kPersistentInt;
  // -za' of the thread's rows (float output), rows g and g + 8 of each m16 piece.
  float nza[T::MT][2];
  bool upper_rows[T::MT];  // rows g + 8 exist: skip their work for M <= 8
#pragma unroll
  for (int mt = 0; mt < T::MT; ++mt) {
    const std::int64_t r0 = m0 + wm * T::TM + mt * 16 + g;
    nza[mt][0] = r0 < p.m ? -static_cast<float>(dev::at(p.za, r0)) : 0.0f;
    nza[mt][1] = r0 + 8 < p.m ? -static_cast<float>(dev::at(p.za, r0 + 8)) : 0.0f;
    upper_rows[mt] = m0 + wm * T::TM + mt * 16 + 8 < p.m;
  }

#pragma unroll
  for (int s = 0; s < T::STAGES - 1; ++s) {
    if (s < kt_count) load_stage(s, kt_begin + s);
    dev::cp_async_commit();
  }

  const std::uint32_t zz_const = zero_bytes(p.b.zero_point0, p.b.is_signed);
  const std::uint32_t xmask = p.b.is_signed ? 0x88888888u : 0x80808080u;

  for (int it = 0; it < kt_count; ++it) {
    dev::cp_async_wait<T::STAGES - 2>();
    __syncthreads();
    const int next = it + T::STAGES - 1;
    if (next < kt_count) load_stage(next % T::STAGES, kt_begin + next);
    dev::cp_async_commit();

    const std::uint32_t base = s0 + (it % T::STAGES) * S::STAGE;  // for ldmatrix (shared window)
    const std::uint32_t off = (it % T::STAGES) * S::STAGE;        // for C++ loads from smem
    const int j_first = Mode == BwMode::float_block32 || Mode == BwMode::float_block16
                            ? 0  // unused
                            : (kt_begin + it) * T::BK / block;
#pragma unroll
    for (int q = 0; q < 2; ++q) {
      const int gi = 2 * (kt_begin + it) + q;  // the 32-code group
      if (gi >= g_end) break;
      // Slots of the group's codes: block 16 has two blocks per group (b0: k 0-15, b1: 16-31).
      const bool halves = Mode == BwMode::float_block16 || (Mode == BwMode::int_out && block == 16);
      const int slot0 = Mode == BwMode::float_block32 ? q
                        : halves                      ? 2 * q
                                                      : gi * 32 / block - j_first;
      const int slot1 = halves ? 2 * q + 1 : slot0;

      std::uint32_t af[T::MT][4];
#pragma unroll
      for (int mt = 0; mt < T::MT; ++mt) {
        const int row = wm * T::TM + mt * 16 + (lane % 16);
        dev::ldmatrix_x4(af[mt][0], af[mt][1], af[mt][2], af[mt][3],
                         base + S::A + swizzled64(row, q * 2 + lane / 16));
      }
      std::uint32_t bf[T::NT][2];
      if constexpr (Bits == 8) {
#pragma unroll
        for (int np = 0; np < T::NT / 2; ++np) {
          const int row = wn * T::TN + np * 16 + (lane % 8) + (lane / 16) * 8;
          dev::ldmatrix_x4(bf[2 * np][0], bf[2 * np][1], bf[2 * np + 1][0], bf[2 * np + 1][1],
                           base + S::B + swizzled64(row, q * 2 + (lane / 8) % 2));
        }
      } else {
#pragma unroll
        for (int nt = 0; nt < T::NT; ++nt) {
          const int row = wn * T::TN + nt * 8 + g;
          const std::uint32_t rb = off + S::B + swizzled32(row, q);
          const std::uint32_t wa = lds32(smem, rb + 4 * (t >> 1)),
                              wb = lds32(smem, rb + 8 + 4 * (t >> 1));
          const std::uint32_t x = __byte_perm(wa, wb, (t & 1) ? 0x7632u : 0x5410u);
          const std::uint32_t lo = (x & 0x0F0F0F0Fu) ^ xmask;
          const std::uint32_t hi = ((x >> 4) & 0x0F0F0F0Fu) ^ xmask;
          std::uint32_t zz0 = zz_const, zz1 = zz_const;
          if (p.b.zero_points) {
            const std::uint32_t zb = off + S::ZPS + static_cast<std::uint32_t>(row * 4);
            zz0 = zero_bytes(static_cast<std::int32_t>(lds32(smem, zb + slot0 * T::BN * 4)),
                             p.b.is_signed);
            zz1 = halves
                      ? zero_bytes(static_cast<std::int32_t>(lds32(smem, zb + slot1 * T::BN * 4)),
                                   p.b.is_signed)
                      : zz0;
          }
          bf[nt][0] = centre(__byte_perm(lo, hi, 0x5140u), zz0);
          bf[nt][1] = centre(__byte_perm(lo, hi, 0x7362u), zz1);
        }
      }

      // The float epilogue of one block for fragment (mt, nt): raw sum d -> acc_f.
      auto flush = [&](int mt, int nt, const int(&d)[4], int slot) {
        const int col = wn * T::TN + nt * 8 + 2 * t;
        const std::uint32_t at = static_cast<std::uint32_t>((slot * T::BN + col) * 4);
        const float2 sb = lds_f2(smem, off + S::SCALES + at);
        float2 cs = make_float2(0.0f, 0.0f), nz = make_float2(0.0f, 0.0f);
        if (use_csum) cs = lds_f2(smem, off + S::CSUM + at);
        float rs[2] = {0.0f, 0.0f};
        if (use_zb) {
          nz = lds_f2(smem, off + S::NZB + at);
          const int row = wm * T::TM + mt * 16 + g;
          rs[0] = lds_f(smem, off + S::RSUM + static_cast<std::uint32_t>((slot * T::BM + row) * 4));
          rs[1] =
              lds_f(smem, off + S::RSUM + static_cast<std::uint32_t>((slot * T::BM + row + 8) * 4));
        }
#pragma unroll
        for (int r = 0; r < 4; ++r) {
          if (r >= 2 && !upper_rows[mt]) break;
          float x = __fsub_rn(__int_as_float(d[r]), kMagic);  // the raw sum, exact
          if (use_zb) x = __fmaf_rn((r & 1) ? nz.y : nz.x, rs[r / 2], x);
          if (use_csum) x = __fmaf_rn(nza[mt][r / 2], (r & 1) ? cs.y : cs.x, x);
          acc_f[mt][nt][r] = __fmaf_rn(x, (r & 1) ? sb.y : sb.x, acc_f[mt][nt][r]);
        }
      };

      if constexpr (Mode == BwMode::float_block32) {
#pragma unroll
        for (int mt = 0; mt < T::MT; ++mt)
#pragma unroll
          for (int nt = 0; nt < T::NT; ++nt) {
            int d[4] = {kMagicBits, kMagicBits, kMagicBits, kMagicBits};
            dev::mma_s8_m16n8k32(d, af[mt], bf[nt]);
            flush(mt, nt, d, slot0);
          }
        continue;
      } else if constexpr (Mode == BwMode::float_block16) {
        // Two blocks per group: each half of K through its own mma (the other half's B zero).
#pragma unroll
        for (int mt = 0; mt < T::MT; ++mt)
#pragma unroll
          for (int nt = 0; nt < T::NT; ++nt) {
            int d[4] = {kMagicBits, kMagicBits, kMagicBits, kMagicBits};
            const std::uint32_t b_lo[2] = {bf[nt][0], 0u}, b_hi[2] = {0u, bf[nt][1]};
            dev::mma_s8_m16n8k32(d, af[mt], b_lo);
            flush(mt, nt, d, slot0);
            d[0] = d[1] = d[2] = d[3] = kMagicBits;
            dev::mma_s8_m16n8k32(d, af[mt], b_hi);
            flush(mt, nt, d, slot1);
          }
        continue;
      } else {
        const bool first = Mode == BwMode::float_multi && (gi * 32) % block == 0;
        const bool last = ((gi + 1) * 32) % block == 0 || gi + 1 == groups;
#pragma unroll
        for (int mt = 0; mt < T::MT; ++mt)
#pragma unroll
          for (int nt = 0; nt < T::NT; ++nt) {
            if (first)
              acc_i[mt][nt][0] = acc_i[mt][nt][1] = acc_i[mt][nt][2] = acc_i[mt][nt][3] =
                  kMagicBits;
            dev::mma_s8_m16n8k32(acc_i[mt][nt], af[mt], bf[nt]);
            if (kFloat && last) flush(mt, nt, acc_i[mt][nt], slot0);
          }
        if (!kFloat && last && use_zb) {
          // int32 output, 8-bit B with zero points: subtract zb'_j rowsum_j(A') for every block
          // that ends in this group (integers below 2^22: exact in float and back).
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            if (h == 1 && !halves) break;
            const int slot = h == 0 ? slot0 : slot1;
#pragma unroll
            for (int mt = 0; mt < T::MT; ++mt) {
              const int row = wm * T::TM + mt * 16 + g;
              const float rs0 =
                  lds_f(smem, off + S::RSUM + static_cast<std::uint32_t>((slot * T::BM + row) * 4));
              const float rs1 = lds_f(
                  smem, off + S::RSUM + static_cast<std::uint32_t>((slot * T::BM + row + 8) * 4));
#pragma unroll
              for (int nt = 0; nt < T::NT; ++nt) {
                const int col = wn * T::TN + nt * 8 + 2 * t;
                const float2 nz = lds_f2(
                    smem, off + S::NZB + static_cast<std::uint32_t>((slot * T::BN + col) * 4));
                acc_i[mt][nt][0] += __float2int_rn(__fmul_rn(nz.x, rs0));
                acc_i[mt][nt][1] += __float2int_rn(__fmul_rn(nz.y, rs0));
                acc_i[mt][nt][2] += __float2int_rn(__fmul_rn(nz.x, rs1));
                acc_i[mt][nt][3] += __float2int_rn(__fmul_rn(nz.y, rs1));
              }
            }
          }
        }
      }  // int_out, float_multi
    }
  }
  dev::cp_async_wait<0>();

  // Fragment rows g, g + 8 of each m16 piece; columns 2t, 2t + 1 of each n8 piece.
  auto row_of = [&](int r) { return m0 + wm * T::TM + (r / 2) * 16 + (r % 2) * 8 + g; };
  auto col_of = [&](int c) { return n0 + wn * T::TN + c * 8 + 2 * t; };
  if constexpr (!kFloat) {
    dev::store_fragment<2 * T::MT, T::NT>(p.ep, row_of, col_of, [&](int r, int c, int h) {
      return acc_i[r / 2][c][(r % 2) * 2 + h];
    });
    return;
  } else {
    if (gridDim.y == 1) {
#pragma unroll
      for (int r = 0; r < 2 * T::MT; ++r)
#pragma unroll
        for (int c = 0; c < T::NT; ++c)
          store_float_pair(p, row_of(r), col_of(c), acc_f[r / 2][c][(r % 2) * 2],
                           acc_f[r / 2][c][(r % 2) * 2 + 1]);
      return;
    }
    // Split-K: every CTA leaves its partial tile; the last one of the tile adds them in split
    // order (its own from registers) and stores the result.
    const std::int64_t split_stride = p.m * p.n;
#pragma unroll
    for (int r = 0; r < 2 * T::MT; ++r)
#pragma unroll
      for (int c = 0; c < T::NT; ++c) {
        const std::int64_t m = row_of(r), n = col_of(c);
        if (m >= p.m || n >= p.n) continue;
        float* out = p.partials + blockIdx.y * split_stride + m * p.n + n;
        out[0] = acc_f[r / 2][c][(r % 2) * 2];
        if (n + 1 < p.n) out[1] = acc_f[r / 2][c][(r % 2) * 2 + 1];
      }
    __threadfence();
    __syncthreads();
    int* flag = reinterpret_cast<int*>(smem + T::STAGES * S::STAGE);
    if (tid == 0) {
      const int arrived = atomicAdd(p.counters + blockIdx.x, 1);
      *flag = arrived == static_cast<int>(gridDim.y) - 1;
      if (*flag) p.counters[blockIdx.x] = 0;  // ready for the next launch
    }
    __syncthreads();
    if (!*flag) return;
    __threadfence();
#pragma unroll
    for (int r = 0; r < 2 * T::MT; ++r)
#pragma unroll
      for (int c = 0; c < T::NT; ++c) {
        const std::int64_t m = row_of(r), n = col_of(c);
        if (m >= p.m || n >= p.n) continue;
        float v0 = 0.0f, v1 = 0.0f;
        for (unsigned s = 0; s < gridDim.y; ++s) {
          if (s == blockIdx.y) {
            v0 = __fadd_rn(v0, acc_f[r / 2][c][(r % 2) * 2]);
            v1 = __fadd_rn(v1, acc_f[r / 2][c][(r % 2) * 2 + 1]);
          } else {
            const float* src = p.partials + s * split_stride + m * p.n + n;
            v0 = __fadd_rn(v0, __ldcg(src));
            if (n + 1 < p.n) v1 = __fadd_rn(v1, __ldcg(src + 1));
          }
        }
        store_float_pair(p, m, n, v0, v1);
      }
  }
}

template <class T, int Bits, BwMode Mode, bool Zp>
void allow_shared_memory(int device) {
  // Atomic: plans of one process run from several threads (the attribute is idempotent).
  static std::atomic<bool> done[64] = {};
  const int slot = device >= 0 && device < 64 ? device : 0;
  if (done[slot].load(std::memory_order_acquire)) return;
  check(cudaFuncSetAttribute(qbw_gemm_kernel<T, Bits, Mode, Zp>,
                             cudaFuncAttributeMaxDynamicSharedMemorySize, BwSmem<T, Bits>::TOTAL),
        "cudaFuncSetAttribute(qbw_gemm_kernel, MaxDynamicSharedMemorySize)");
  done[slot].store(true, std::memory_order_release);
}

template <class T, int Bits, BwMode Mode, bool Zp>
void run(const BlockwiseGemm& p, int splits, int device, cudaStream_t stream) {
  allow_shared_memory<T, Bits, Mode, Zp>(device);
  const auto tiles =
      static_cast<unsigned>(((p.m + T::BM - 1) / T::BM) * ((p.n + T::BN - 1) / T::BN));
  qbw_gemm_kernel<T, Bits, Mode, Zp>
      <<<dim3(tiles, static_cast<unsigned>(splits)), T::THREADS, BwSmem<T, Bits>::TOTAL, stream>>>(
          p);
  check_launch("qbw_gemm_kernel");
}

template <class T, int Bits, BwMode Mode>
void run_zp(const BlockwiseGemm& p, int splits, int device, cudaStream_t stream) {
  const bool zp = (Mode != BwMode::int_out && p.a_zero_points && p.b.col_sums) ||
                  (p.b.neg_zero_points && p.row_sums);
  if (zp) run<T, Bits, Mode, true>(p, splits, device, stream);
  else run<T, Bits, Mode, false>(p, splits, device, stream);
}

template <class T, int Bits>
void run_mode(const BlockwiseGemm& p, int splits, int device, cudaStream_t stream) {
  if (p.int_out) run_zp<T, Bits, BwMode::int_out>(p, splits, device, stream);
  else if (p.b.block == 32) run_zp<T, Bits, BwMode::float_block32>(p, splits, device, stream);
  else if (p.b.block == 16) run_zp<T, Bits, BwMode::float_block16>(p, splits, device, stream);
  else run_zp<T, Bits, BwMode::float_multi>(p, splits, device, stream);
}

}  // namespace

int blockwise_tile_m(GemmKernel kernel) {
  return kernel == GemmKernel::qbw_16x128 ? Bw16x128::BM : Bw128x128::BM;
}
int blockwise_tile_n(GemmKernel kernel) {
  return kernel == GemmKernel::qbw_16x128 ? Bw16x128::BN : Bw128x128::BN;
}

int blockwise_groups_per_split(GemmKernel kernel, std::int64_t m, std::int64_t n,
                               std::int64_t groups, std::int64_t block, int multiprocessors) {
  if (groups <= 0) return 1;
  // A split covers whole blocks and whole stages (two groups).
  const std::int64_t unit = std::lcm<std::int64_t>(2, std::max<std::int64_t>(1, block / 32));
  const std::int64_t units = (groups + unit - 1) / unit;
  const std::int64_t tiles = ((m + blockwise_tile_m(kernel) - 1) / blockwise_tile_m(kernel)) *
                             ((n + blockwise_tile_n(kernel) - 1) / blockwise_tile_n(kernel));
  // The 128x128 tile runs one CTA per SM: split until one wave is full. The 16x128 tile fits
  // about four per SM: aim at that many, keeping at least two units of K per CTA.
  const std::int64_t capacity =
      std::max(1, multiprocessors) * (kernel == GemmKernel::qbw_16x128 ? 4 : 1);
  const std::int64_t splits = std::clamp<std::int64_t>(capacity / std::max<std::int64_t>(tiles, 1),
                                                       1, std::max<std::int64_t>(1, units / 2));
  const std::int64_t per = (units + splits - 1) / splits * unit;
  return static_cast<int>(std::min<std::int64_t>(per, ((groups + 1) / 2) * 2));
}

void launch_blockwise_gemm(GemmKernel kernel, const BlockwiseGemm& p_in,
                           std::int32_t* int_workspace, int device, cudaStream_t stream) {
  if (p_in.m == 0 || p_in.n == 0) return;
  BlockwiseGemm p = p_in;
  if (p.groups_per_split <= 0)
    p.groups_per_split = static_cast<int>(std::max<std::int64_t>(1, p.groups));
  const int splits =
      p.groups <= 0 ? 1
                    : static_cast<int>((p.groups + p.groups_per_split - 1) / p.groups_per_split);
  Epilogue final_ep = p.ep;
  final_ep.fast = fast_path_of(final_ep);
  if (p.int_out) {
    if (splits > 1) {
      // Raw split sums meet in an int32 workspace (exact, order-free), then the epilogue.
      check(cudaMemsetAsync(int_workspace, 0,
                            static_cast<std::size_t>(p.m * p.n) * sizeof(std::int32_t), stream),
            "cudaMemsetAsync(block-wise split-K workspace)");
      Epilogue partial;
      partial.kind = EpilogueKind::accumulate;
      partial.out = int_workspace;
      partial.ldc = p.n;
      partial.m = p.m;
      partial.n = p.n;
      partial.k = p.k;
      partial.fast = fast_path_of(partial);
      p.ep = partial;
    } else {
      p.ep = final_ep;
    }
  }
  auto go = [&](auto tile) {
    using T = decltype(tile);
    if (p.b.bits == 4) run_mode<T, 4>(p, splits, device, stream);
    else run_mode<T, 8>(p, splits, device, stream);
  };
  if (kernel == GemmKernel::qbw_16x128) go(Bw16x128{});
  else go(Bw128x128{});
  if (p.int_out && splits > 1) launch_epilogue(int_workspace, final_ep, stream);
}

}  // namespace qforge::cuda
