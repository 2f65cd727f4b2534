#include "kernel_table.h"

#include <array>

namespace qforge::cpu_x86 {
namespace {

// Tiers left out of the build (CMake options) keep their table entries without an entry point;
// isa.cpp does not report them as compiled, so they are never selected.
#if QFORGE_CPU_X86_HAVE_AMX
constexpr TileFn kAmx = &tile_amx;
constexpr void (*kAmxBegin)() = &amx_begin;
constexpr void (*kAmxEnd)() = &amx_end;
#else
constexpr TileFn kAmx = nullptr;
constexpr void (*kAmxBegin)() = nullptr;
constexpr void (*kAmxEnd)() = nullptr;
#endif
#if QFORGE_CPU_X86_HAVE_AMX
constexpr IconvFn kAmxIconv = &iconv_block_amx;
#else
constexpr IconvFn kAmxIconv = nullptr;
#endif
#if QFORGE_CPU_X86_HAVE_AVX512VNNI
constexpr TileFn kVnni512 = &tile_avx512vnni;
constexpr TileFn kVnni512Gemv = &tile_avx512vnni_gemv;
constexpr void (*kVnni512Block)(const BlockTileArgs&) = &block_tile_avx512vnni;
#else
constexpr void (*kVnni512Block)(const BlockTileArgs&) = nullptr;
constexpr TileFn kVnni512 = nullptr;
constexpr TileFn kVnni512Gemv = nullptr;
#endif
#if QFORGE_CPU_X86_HAVE_AVXVNNI
constexpr TileFn kAvxVnni = &tile_avxvnni;
#else
constexpr TileFn kAvxVnni = nullptr;
#endif

constexpr KernelInfo implicit_conv(std::string_view name, Isa isa, IconvFn fn, void (*begin)(),
                                   void (*end)()) {
  KernelInfo k{name, KernelRole::conv_implicit, isa};
  k.begin = begin;
  k.end = end;
  k.iconv = fn;
  return k;
}

// Best first within each role: selection walks this order and takes the first kernel the CPU,
// the build and the ISA restriction allow (and, for maddubs, the packed weights).
constexpr std::array kKernels = {
    KernelInfo{"q8_gemm_32x32c4__amx", KernelRole::gemm, Isa::amx_int8, kAmx, kAmxShape, false,
               false, true, kAmxBegin, kAmxEnd},
    KernelInfo{"q8_gemm_6x64c4__avx512vnni", KernelRole::gemm, Isa::avx512_vnni, kVnni512,
               kAvx512VnniShape},
    KernelInfo{"q8_gemm_6x16c4__avxvnni", KernelRole::gemm, Isa::avx_vnni, kAvxVnni, kAvxVnniShape},
    KernelInfo{"q8_gemm_4x16c4__avx2_maddubs", KernelRole::gemm, Isa::avx2, &tile_avx2_maddubs,
               kAvx2MaddubsShape, true, true},
    KernelInfo{"q8_gemm_2x16c4__avx2_maddwd", KernelRole::gemm, Isa::avx2, &tile_avx2_maddwd,
               kAvx2MaddwdShape},

    // For 5..16 rows the VNNI GEMV tile is bound by its broadcasts, while one 16-row AMX A tile
    // against two B tiles still streams the weights at memory speed; for 1..4 rows VNNI
    // already streams at memory speed and AMX would multiply mostly padding.
    KernelInfo{"q8_gemv_16x32c4__amx",
               KernelRole::gemv,
               Isa::amx_int8,
               kAmx,
               {16, 2},
               false,
               false,
               true,
               kAmxBegin,
               kAmxEnd,
               5},
    KernelInfo{"q8_gemv_16x16c4__avx512vnni", KernelRole::gemv, Isa::avx512_vnni, kVnni512Gemv,
               kAvx512VnniGemvShape},
    KernelInfo{"q8_gemv_6x16c4__avxvnni", KernelRole::gemv, Isa::avx_vnni, kAvxVnni, kAvxVnniShape},
    KernelInfo{"q8_gemv_4x16c4__avx2_maddubs", KernelRole::gemv, Isa::avx2, &tile_avx2_maddubs,
               kAvx2MaddubsShape, true, true},
    KernelInfo{"q8_gemv_2x16c4__avx2_maddwd", KernelRole::gemv, Isa::avx2, &tile_avx2_maddwd,
               kAvx2MaddwdShape},

    KernelInfo{"q8_qbw_gemm_6x64c4__avx512vnni", KernelRole::gemm_block, Isa::avx512_vnni, kVnni512,
               kAvx512VnniShape, false, false, false, nullptr, nullptr, 0, kVnni512Block},
    KernelInfo{"q8_qbw_gemm_6x16c4__avxvnni", KernelRole::gemm_block, Isa::avx_vnni, kAvxVnni,
               kAvxVnniShape},
    KernelInfo{"q8_qbw_gemm_4x16c4__avx2_maddubs", KernelRole::gemm_block, Isa::avx2,
               &tile_avx2_maddubs, kAvx2MaddubsShape, true, true},
    KernelInfo{"q8_qbw_gemm_2x16c4__avx2_maddwd", KernelRole::gemm_block, Isa::avx2,
               &tile_avx2_maddwd, kAvx2MaddwdShape},

    KernelInfo{"q8_quantize__avx2", KernelRole::quantize, Isa::avx2},
    KernelInfo{"q8_dequantize__avx2", KernelRole::dequantize, Isa::avx2},
    KernelInfo{"q8_requantize__avx2", KernelRole::requantize, Isa::avx2},
    KernelInfo{"qu8_dynamic_quantize__avx2", KernelRole::dynamic_quantize, Isa::avx2},
    KernelInfo{"q8_dwconv_c32__avx512vnni", KernelRole::conv_depthwise, Isa::avx512_vnni},
    KernelInfo{"q8_dwconv_c32__avx2", KernelRole::conv_depthwise, Isa::avx2},
    KernelInfo{"q8_conv_k64__avx2_maddwd", KernelRole::conv_small_k, Isa::avx2},
    implicit_conv("q8_iconv_32x32c4__amx", Isa::amx_int8, kAmxIconv, kAmxBegin, kAmxEnd),
    // The AMX algorithm with emulated tiles: tests it anywhere; only a forced choice runs it.
    implicit_conv("q8_iconv_32x32c4__scalar", Isa::avx2, &iconv_block_scalar, nullptr, nullptr),
    KernelInfo{"f32_qw_gemm_6x16__avx2_fma", KernelRole::weight_only, Isa::avx2},
    KernelInfo{kReferenceKernel, KernelRole::reference, Isa::avx2},
};

}  // namespace

std::span<const KernelInfo> all_kernels() { return kKernels; }

const KernelInfo* find_kernel(std::string_view name) {
  for (const KernelInfo& k : kKernels)
    if (k.name == name) return &k;
  return nullptr;
}

const KernelInfo& exact_for_weights(const KernelInfo& k, bool b_holds_min) {
  if (!k.needs_no_min || !b_holds_min) return k;
  const std::string_view maddwd = k.role == KernelRole::gemm_block
                                      ? "q8_qbw_gemm_2x16c4__avx2_maddwd"
                                  : k.role == KernelRole::gemv ? "q8_gemv_2x16c4__avx2_maddwd"
                                                               : "q8_gemm_2x16c4__avx2_maddwd";
  return *find_kernel(maddwd);
}

}  // namespace qforge::cpu_x86
