// The implicit-GEMM convolution block on AMX-INT8 (compiled with -mamx-tile -mamx-int8; the
// algorithm is conv_implicit_tiles.h). The tile configuration is gemm_amx.cpp's (all eight
// tiles 16 rows x 64 bytes), loaded by amx_begin() once per task.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "conv_implicit.h"

namespace qforge::cpu_x86 {
namespace {

#include "conv_implicit_tiles.h"

// The intrinsics name tiles by literal numbers (the assembler text is built from them), so each
// combination is spelled out.
struct AmxTiles {
  template <int MT, int NT>
  static void init(const std::int32_t* c0, const std::int32_t* c1) {
    _tile_loadd(0, c0, 64);
    if constexpr (NT > 1) _tile_loadd(1, c1, 64);
    if constexpr (MT > 1) _tile_loadd(2, c0, 64);
    if constexpr (MT > 1 && NT > 1) _tile_loadd(3, c1, 64);
  }
  template <int MT, int NT>
  static void step(const std::uint8_t* a0, std::int64_t sa0, const std::uint8_t* a1,
                   std::int64_t sa1, const std::int8_t* b0, const std::int8_t* b1) {
    _tile_loadd(6, b0, 64);
    _tile_loadd(4, a0, sa0);
    _tile_dpbusd(0, 4, 6);
    if constexpr (NT > 1) {
      _tile_loadd(7, b1, 64);
      _tile_dpbusd(1, 4, 7);
    }
    if constexpr (MT > 1) {
      _tile_loadd(5, a1, sa1);
      _tile_dpbusd(2, 5, 6);
      if constexpr (NT > 1) _tile_dpbusd(3, 5, 7);
    }
  }
  template <int MT, int NT>
  static void store(std::int32_t* d, std::int64_t stride) {
    const std::int64_t ld = stride / 4;
    _tile_stored(0, d, stride);
    if constexpr (NT > 1) _tile_stored(1, d + 16, stride);
    if constexpr (MT > 1) _tile_stored(2, d + 16 * ld, stride);
    if constexpr (MT > 1 && NT > 1) _tile_stored(3, d + 16 * ld + 16, stride);
  }
};

}  // namespace

void iconv_block_amx(const IconvArgs& a, const IconvBlock& blk) { iconv_block<AmxTiles>(a, blk); }

}  // namespace qforge::cpu_x86
