// The instruction-set tiers of the cpu_x86 kernels and the two questions about each (after ruy's
// have_built_path_for_* and cpuinfo): was it compiled into this library, and may it run here.
//
// AVX2+FMA is the baseline: without it the plugin reports itself unusable. The higher tiers
// add int8 dot-product instructions: AVX-512 VNNI (vpdpbusd on zmm), AVX-VNNI (vpdpbusd on ymm,
// VEX encoded) and AMX-INT8 (tdpbusd on tiles). A restriction (env QFORGE_CPU_X86_ISA or
// set_option("isa", ...)) narrows the allowed tiers so every variant can be tested on one CPU.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace qforge::cpu_x86 {

enum class Isa : std::uint8_t { avx2, avx512_vnni, avx_vnni, amx_int8 };
inline constexpr int kIsaCount = 4;

// A set of tiers as a bit mask (bit i = Isa i).
class IsaSet {
 public:
  constexpr IsaSet() = default;
  static constexpr IsaSet all() { return IsaSet((1u << kIsaCount) - 1); }
  constexpr bool has(Isa isa) const { return (bits_ >> static_cast<unsigned>(isa)) & 1u; }
  constexpr IsaSet with(Isa isa) const {
    return IsaSet(bits_ | (1u << static_cast<unsigned>(isa)));
  }
  constexpr IsaSet operator&(IsaSet o) const { return IsaSet(bits_ & o.bits_); }
  constexpr bool empty() const { return bits_ == 0; }
  friend constexpr bool operator==(IsaSet, IsaSet) = default;
  // "avx2,avx512_vnni"
  std::string to_string() const;

 private:
  constexpr explicit IsaSet(unsigned bits) : bits_(bits) {}
  unsigned bits_ = 0;
};

std::string_view to_string(Isa isa) noexcept;
// What the CPU feature the tier needs is called in messages ("AVX-512 VNNI").
std::string_view feature_text(Isa isa) noexcept;

// Tiers whose kernels were compiled into this library (CMake options QFORGE_CPU_X86_ENABLE_*).
IsaSet compiled_isas() noexcept;
// Tiers this CPU and OS can run (qforge::cpu_info()); AMX also needs the Linux permission request
// for tile data, which this asks for once.
IsaSet detected_isas();

// Parses a restriction: a comma-separated list of tier names (avx2, avx512_vnni, avx_vnni,
// amx_int8; also avx512vnni, avxvnni, amx), or "all". AVX2 is the baseline of every tier and is
// always included. Throws qforge::Error(invalid_argument) naming the unknown entry. `source`
// names where the text came from, for the message.
IsaSet parse_isa_list(std::string_view text, std::string_view source);

}  // namespace qforge::cpu_x86
