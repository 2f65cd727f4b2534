// The implicit-GEMM convolution block with AMX's tile registers emulated in memory: the same
// algorithm (conv_implicit_tiles.h) and the same tdpbusd arithmetic (u8 A times s8 B, four
// products per int32 lane, wrapping), in plain C++. It runs on any x86-64, so tests check the
// tile addressing, gathers and compensation on machines without AMX; nothing selects it
// automatically.
#include <algorithm>
#include <cstring>

#include "conv_implicit.h"

namespace qforge::cpu_x86 {
namespace {

#include "conv_implicit_tiles.h"

struct EmulatedTiles {
  // C tiles 0-3 as [16][16] int32 (held as uint32: wrapping adds are defined).
  static std::uint32_t (&c(int t))[16][16] {
    thread_local std::uint32_t tiles[4][16][16];
    return tiles[t];
  }
  static void dp(int t, const std::uint8_t* a, std::int64_t sa, const std::int8_t* b) {
    auto& acc = c(t);
    for (int m = 0; m < 16; ++m)
      for (int n = 0; n < 16; ++n) {
        std::uint32_t sum = acc[m][n];
        for (int g = 0; g < 16; ++g)
          for (int j = 0; j < 4; ++j)
            sum += static_cast<std::uint32_t>(static_cast<std::int32_t>(a[m * sa + g * 4 + j]) *
                                              static_cast<std::int32_t>(b[g * 64 + n * 4 + j]));
        acc[m][n] = sum;
      }
  }
  template <int MT, int NT>
  static void init(const std::int32_t* c0, const std::int32_t* c1) {
    std::memcpy(c(0), c0, 1024);
    if constexpr (NT > 1) std::memcpy(c(1), c1, 1024);
    if constexpr (MT > 1) std::memcpy(c(2), c0, 1024);
    if constexpr (MT > 1 && NT > 1) std::memcpy(c(3), c1, 1024);
  }
  template <int MT, int NT>
  static void step(const std::uint8_t* a0, std::int64_t sa0, const std::uint8_t* a1,
                   std::int64_t sa1, const std::int8_t* b0, const std::int8_t* b1) {
    dp(0, a0, sa0, b0);
    if constexpr (NT > 1) dp(1, a0, sa0, b1);
    if constexpr (MT > 1) {
      dp(2, a1, sa1, b0);
      if constexpr (NT > 1) dp(3, a1, sa1, b1);
    }
  }
  template <int MT, int NT>
  static void store(std::int32_t* d, std::int64_t stride) {
    const std::int64_t ld = stride / 4;
    auto put = [&](int t, std::int32_t* dst) {
      for (int m = 0; m < 16; ++m) std::memcpy(dst + m * ld, c(t)[m], 64);
    };
    put(0, d);
    if constexpr (NT > 1) put(1, d + 16);
    if constexpr (MT > 1) put(2, d + 16 * ld);
    if constexpr (MT > 1 && NT > 1) put(3, d + 16 * ld + 16);
  }
};

}  // namespace

void iconv_block_scalar(const IconvArgs& a, const IconvBlock& blk) {
  iconv_block<EmulatedTiles>(a, blk);
}

}  // namespace qforge::cpu_x86
