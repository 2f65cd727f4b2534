// AMX-INT8 tiles (compiled with -mamx-tile -mamx-int8): tdpbusd multiplies a 16x64 u8 A tile
// by a 16x64 s8 B tile in the VNNI layout (a B tile row = 4 k of 16 columns, which is exactly
// 16 groups of one packed panel, gemm_kernels.h) and adds into a 16x16 int32 C tile. Like
// vpdpbusd it does not saturate, so sums are exact modulo 2^32.
//
// Tile registers: C 0-3 (up to 2x2 output tiles = 32 rows x 32 columns), A 4-5, B 6-7. Loading
// the configuration costs about as much as a few tile products, so the driver loads it once per
// task (amx_begin) and releases it at the task's end (amx_end): no other code runs on the
// thread in between, so the kernel never depends on, or leaves behind, tile state of other
// code. The process must already hold the Linux permission for tile data (isa.cpp asks for it
// during detection).
#include <immintrin.h>

#include <cstring>

#include "gemm_kernels.h"

namespace qforge::cpu_x86 {
namespace {

struct alignas(64) TileConfig {
  std::uint8_t palette_id;
  std::uint8_t start_row;
  std::uint8_t reserved[14];
  std::uint16_t colsb[16];
  std::uint8_t rows[16];
};
static_assert(sizeof(TileConfig) == 64, "ldtilecfg reads 64 bytes");

// Palette 1, tiles 0-7 all 16 rows x 64 bytes. A constant object in memory rather than a local:
// GCC 12 does not see that ldtilecfg reads all 64 bytes of its operand and drops the stores of
// a local configuration's row and column fields (seen here: a zero configuration, then #GP).
constexpr TileConfig make_config() {
  TileConfig cfg{};
  cfg.palette_id = 1;
  for (int i = 0; i < 8; ++i) {
    cfg.rows[i] = 16;
    cfg.colsb[i] = 64;
  }
  return cfg;
}
constexpr TileConfig kConfig = make_config();

}  // namespace

void amx_begin() { _tile_loadconfig(&kConfig); }

void amx_end() { _tile_release(); }

namespace {

template <int MT, int NT>
void tile(const TileArgs& t) {
  _tile_zero(0);
  if (NT > 1) _tile_zero(1);
  if (MT > 1) _tile_zero(2);
  if (MT > 1 && NT > 1) _tile_zero(3);
  const std::int64_t steps = t.groups / 16;
  // A in the AMX layout (packing.h): one KiB per 16x64 tile, t.lda == depth.
  const std::uint8_t* a0 = t.a;
  const std::uint8_t* a1 = t.a + 16 * t.lda;
  const std::int8_t* b0 = t.b;
  const std::int8_t* b1 = t.b + t.panel_stride;
  for (std::int64_t s = 0; s < steps; ++s) {
    if (t.b_prefetch)  // the 16 lines of each B tile, b_prefetch bytes ahead
      for (int l = 0; l < 16; ++l) {
        _mm_prefetch(reinterpret_cast<const char*>(b0 + s * 1024 + t.b_prefetch + 64 * l),
                     _MM_HINT_T0);
        if (NT > 1)
          _mm_prefetch(reinterpret_cast<const char*>(b1 + s * 1024 + t.b_prefetch + 64 * l),
                       _MM_HINT_T0);
      }
    _tile_loadd(6, b0 + s * 1024, 64);
    _tile_loadd(4, a0 + s * 1024, 64);
    _tile_dpbusd(0, 4, 6);
    if (NT > 1) {
      _tile_loadd(7, b1 + s * 1024, 64);
      _tile_dpbusd(1, 4, 7);
    }
    if (MT > 1) {
      _tile_loadd(5, a1 + s * 1024, 64);
      _tile_dpbusd(2, 5, 6);
      if (NT > 1) _tile_dpbusd(3, 5, 7);
    }
  }
  const std::int64_t stride = t.ldd * 4;
  _tile_stored(0, t.d, stride);
  if (NT > 1) _tile_stored(1, t.d + 16, stride);
  if (MT > 1) _tile_stored(2, t.d + 16 * t.ldd, stride);
  if (MT > 1 && NT > 1) _tile_stored(3, t.d + 16 * t.ldd + 16, stride);
}

}  // namespace

void tile_amx(const TileArgs& t) {
  const bool two_rows = t.mr > 16;
  const bool two_cols = t.panels > 1;
  if (two_rows) {
    if (two_cols) tile<2, 2>(t);
    else tile<2, 1>(t);
  } else {
    if (two_cols) tile<1, 2>(t);
    else tile<1, 1>(t);
  }
}

}  // namespace qforge::cpu_x86
