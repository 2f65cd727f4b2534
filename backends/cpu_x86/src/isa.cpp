#include "isa.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <array>
#include <cctype>

#include "qforge/error.h"
#include "qforge/hardware.h"

namespace qforge::cpu_x86 {
namespace {

constexpr std::array<std::string_view, kIsaCount> kNames = {"avx2", "avx512_vnni", "avx_vnni",
                                                            "amx_int8"};

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Linux (>= 5.16) hands out the AMX tile-data state only to processes that ask for it; without
// this, the first tile instruction raises SIGILL. Asking twice is harmless.
bool request_amx_permission() {
#if defined(__linux__) && defined(SYS_arch_prctl)
  constexpr int kArchReqXcompPerm = 0x1023;
  constexpr int kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
#else
  return false;
#endif
}

}  // namespace

std::string_view to_string(Isa isa) noexcept { return kNames[static_cast<std::size_t>(isa)]; }

std::string_view feature_text(Isa isa) noexcept {
  switch (isa) {
    case Isa::avx2: return "AVX2 and FMA";
    case Isa::avx512_vnni: return "AVX-512 VNNI (with AVX-512 F/BW/VL)";
    case Isa::avx_vnni: return "AVX-VNNI";
    case Isa::amx_int8: return "AMX-INT8";
  }
  return "?";
}

std::string IsaSet::to_string() const {
  std::string out;
  for (int i = 0; i < kIsaCount; ++i)
    if (has(static_cast<Isa>(i))) {
      if (!out.empty()) out += ',';
      out += kNames[static_cast<std::size_t>(i)];
    }
  return out.empty() ? "none" : out;
}

IsaSet compiled_isas() noexcept {
  IsaSet s = IsaSet().with(Isa::avx2);
#if QFORGE_CPU_X86_HAVE_AVX512VNNI
  s = s.with(Isa::avx512_vnni);
#endif
#if QFORGE_CPU_X86_HAVE_AVXVNNI
  s = s.with(Isa::avx_vnni);
#endif
#if QFORGE_CPU_X86_HAVE_AMX
  s = s.with(Isa::amx_int8);
#endif
  return s;
}

IsaSet detected_isas() {
  const CpuInfo& cpu = cpu_info();
  IsaSet s;
  if (!(cpu.has("avx2") && cpu.has("fma"))) return s;  // no baseline, nothing runs
  s = s.with(Isa::avx2);
  if (cpu.has("avx512f") && cpu.has("avx512bw") && cpu.has("avx512vl") && cpu.has("avx512vnni"))
    s = s.with(Isa::avx512_vnni);
  if (cpu.has("avx_vnni")) s = s.with(Isa::avx_vnni);
  // The AMX kernel's epilogue and packing use AVX-512, so AMX counts only together with it.
  static const bool amx_permitted = request_amx_permission();
  if (cpu.has("amx_tile") && cpu.has("amx_int8") && s.has(Isa::avx512_vnni) && amx_permitted)
    s = s.with(Isa::amx_int8);
  return s;
}

IsaSet parse_isa_list(std::string_view text, std::string_view source) {
  const std::string_view whole = trim(text);
  if (whole.empty() || lower(whole) == "all") return IsaSet::all();
  IsaSet s = IsaSet().with(Isa::avx2);
  std::string_view rest = whole;
  while (!rest.empty()) {
    const std::size_t comma = rest.find(',');
    const std::string item = lower(trim(rest.substr(0, comma)));
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    if (item == "avx2") s = s.with(Isa::avx2);
    else if (item == "avx512_vnni" || item == "avx512vnni") s = s.with(Isa::avx512_vnni);
    else if (item == "avx_vnni" || item == "avxvnni") s = s.with(Isa::avx_vnni);
    else if (item == "amx_int8" || item == "amx") s = s.with(Isa::amx_int8);
    else
      throw Error(ErrorCode::invalid_argument,
                  "cpu_x86: " + std::string(source) + " = \"" + std::string(text) +
                      "\" names unknown ISA \"" + item +
                      "\"; expected a comma-separated list of avx2, avx512_vnni, avx_vnni, "
                      "amx_int8, or \"all\"");
  }
  return s;
}

}  // namespace qforge::cpu_x86
