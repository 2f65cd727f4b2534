// The AVX-512 fixed-point requantization (backends/cpu_x86/src/conv_requant_avx512.h), lane for
// lane against reference::multiply_by_quantized_multiplier: the shorter form
// (fixed_point16_right) for every right shift it takes (1 to 31) and every kind of multiplier
// (0, 2^30, the largest, any of quantize_multiplier's, hand-made ones below 2^30), and the
// general form (fixed_point16) for the shifts the shorter one leaves to it (0 and left shifts),
// on sums at the ends of int32, near 0 and near the rounding ties of each shift. This file alone
// is compiled with the AVX-512 tier's flags; the tests skip on CPUs without AVX-512.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>

#include "conv_requant_avx512.h"
#include "qforge/reference.h"
#include "support.h"

namespace qforge::cpu_x86 {
namespace {

using cpu_x86_test::Rng;

bool has_avx512() {
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl");
}

constexpr std::int32_t kMin = std::numeric_limits<std::int32_t>::min();
constexpr std::int32_t kMax = std::numeric_limits<std::int32_t>::max();

// A multiplier of kind `kind`: 0, 2^30 (a power of two: ties at every other sum), the largest,
// quantize_multiplier's range [2^30, 2^31), a hand-made one below 2^30.
std::int32_t multiplier_of(int kind, Rng& rng) {
  switch (kind % 5) {
    case 0: return 0;
    case 1: return 1 << 30;
    case 2: return kMax;
    case 3: return static_cast<std::int32_t>((1u << 30) | (rng() >> 34));
    default: return static_cast<std::int32_t>(rng() >> (33 + rng() % 31));
  }
}

// A sum of kind `kind` for a right shift e: any int32, near INT32_MIN or INT32_MAX, near 0, or
// within 2^(e+12) of 0 (where the rounding ties of the shift and of the high multiply lie).
std::int32_t sum_of(int kind, int e, Rng& rng) {
  const std::uint64_t r = rng();
  switch (kind % 5) {
    case 0: return static_cast<std::int32_t>(static_cast<std::uint32_t>(r));
    case 1: return kMin + static_cast<std::int32_t>(r % 4);
    case 2: return kMax - static_cast<std::int32_t>(r % 4);
    case 3: return static_cast<std::int32_t>(static_cast<std::int64_t>(r % 4097) - 2048);
    default: {
      const int bits = std::min(e + 12, 31);
      return static_cast<std::int32_t>(static_cast<std::int64_t>(r % (std::uint64_t{1} << bits)) -
                                       (std::int64_t{1} << (bits - 1)));
    }
  }
}

TEST(CpuX86RequantAvx512, RightShiftFormMatchesReferenceForEveryShiftAndMultiplierKind) {
  if (!has_avx512()) GTEST_SKIP() << "this CPU lacks AVX-512 F/BW/VL";
  Rng rng = cpu_x86_test::test_rng();
  const __m512i order = high_dwords();
  std::int64_t compared = 0;
  for (int e = 1; e <= 31; ++e)
    for (int set = 0; set < 10; ++set) {
      alignas(64) std::int32_t m[16], right[16], a[16], got[16];
      for (int j = 0; j < 16; ++j) m[j] = multiplier_of(set + j, rng), right[j] = e;
      const FixedChannelsRight f(_mm512_load_si512(m), _mm512_load_si512(right));
      for (int it = 0; it < 400; ++it) {
        for (int j = 0; j < 16; ++j) a[j] = sum_of(it + j, e, rng);
        _mm512_store_si512(got, fixed_point16_right(_mm512_load_si512(a), f, order));
        for (int j = 0; j < 16; ++j, ++compared) {
          const std::int32_t want = reference::multiply_by_quantized_multiplier(a[j], {m[j], -e});
          ASSERT_EQ(got[j], want) << "sum " << a[j] << ", multiplier " << m[j] << ", shift -" << e
                                  << "; " << cpu_x86_test::seed_text();
        }
      }
    }
  EXPECT_EQ(compared, 31 * 10 * 400 * 16);
}

TEST(CpuX86RequantAvx512, GeneralFormMatchesReferenceForShiftZeroAndLeftShifts) {
  if (!has_avx512()) GTEST_SKIP() << "this CPU lacks AVX-512 F/BW/VL";
  Rng rng = cpu_x86_test::test_rng();
  for (int shift = -3; shift <= 31; ++shift) {  // right shifts of 3 to 1 alongside as a control
    alignas(64) std::int32_t m[16], left[16], right[16], a[16], got[16];
    for (int set = 0; set < 10; ++set) {
      for (int j = 0; j < 16; ++j) {
        m[j] = multiplier_of(set + j, rng);
        left[j] = std::max(shift, 0);
        right[j] = std::max(-shift, 0);
      }
      const FixedChannels f(_mm512_load_si512(m), _mm512_load_si512(right));
      for (int it = 0; it < 200; ++it) {
        for (int j = 0; j < 16; ++j) a[j] = sum_of(it + j, std::max(-shift, 0), rng);
        const __m512i x = _mm512_load_si512(a), l = _mm512_load_si512(left);
        _mm512_store_si512(
            got, shift > 0 ? fixed_point16<true>(x, f, l) : fixed_point16<false>(x, f, l));
        for (int j = 0; j < 16; ++j)
          ASSERT_EQ(got[j], reference::multiply_by_quantized_multiplier(a[j], {m[j], shift}))
              << "sum " << a[j] << ", multiplier " << m[j] << ", shift " << shift << "; "
              << cpu_x86_test::seed_text();
      }
    }
  }
}

}  // namespace
}  // namespace qforge::cpu_x86
