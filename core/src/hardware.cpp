// CPU detection through cpuinfo, with CPUID/auxv fallbacks for the features that Debian 12's
// cpuinfo (git 2022-06-17) cannot report: AVX-VNNI, AMX (x86) and I8MM (aarch64).
//
// Every feature answers "may this process execute these instructions here?", so the CPU flag
// alone is not enough: the OS must also save the register state. cpuinfo already checks XCR0
// for AVX/AVX-512; the fallbacks below do the same for AVX-VNNI (YMM state, XCR0 bits 1-2) and
// AMX (tile config and tile data state, XCR0 bits 17-18). On Linux >= 5.16 a process must still
// ask for AMX tile data with arch_prctl(ARCH_REQ_XCOMP_PERM) before its first tile instruction;
// that request belongs to the backend whose kernels use AMX, not to detection.
#include "qforge/hardware.h"

#include <cpuinfo.h>

#include <algorithm>
#include <array>
#include <exception>
#include <string_view>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define QFORGE_HW_X86 1
#endif
#if defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
#define QFORGE_HW_ARM64_LINUX 1
#endif

#include <spdlog/spdlog.h>

#include "log_format.h"

namespace qforge {
namespace {

// The documented order of CpuInfo::features (hardware.h). Tools and tests print and check it.
constexpr std::array<std::string_view, 16> kFeatureOrder = {
    "sse4_1",   "avx2",       "fma",        "f16c",     "avx512f",  "avx512bw",
    "avx512vl", "avx512vnni", "avx512bf16", "avx_vnni", "amx_int8", "amx_bf16",
    "amx_tile", "neon",       "neon_dot",   "i8mm"};

#if QFORGE_HW_X86
struct CpuidRegs {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
};

// Leaf `leaf`, subleaf `sub`; all zero when the leaf is beyond the CPU's maximum.
CpuidRegs cpuid(unsigned leaf, unsigned sub) {
  CpuidRegs r;
  if (__get_cpuid_max(leaf & 0x80000000u, nullptr) < leaf) return r;
  __cpuid_count(leaf, sub, r.eax, r.ebx, r.ecx, r.edx);
  return r;
}

// XCR0, the register-state components the OS saves on context switches; 0 without OSXSAVE.
unsigned long long xcr0() {
  const CpuidRegs leaf1 = cpuid(1, 0);
  if ((leaf1.ecx & (1u << 27)) == 0) return 0;  // OSXSAVE: xgetbv is not available
  unsigned eax = 0, edx = 0;
  // xgetbv with ecx = 0, spelled as bytes so no -mxsave is needed for this one file.
  __asm__ volatile(".byte 0x0f, 0x01, 0xd0" : "=a"(eax), "=d"(edx) : "c"(0));
  return (static_cast<unsigned long long>(edx) << 32) | eax;
}

struct X86Extras {
  bool avx_vnni = false;
  bool amx_tile = false, amx_int8 = false, amx_bf16 = false;
};

X86Extras detect_x86_extras() {
  X86Extras x;
  const unsigned long long state = xcr0();
  const bool ymm_state = (state & 0x6) == 0x6;                     // XMM (bit 1) + YMM (bit 2)
  const bool tile_state = (state & (3ull << 17)) == (3ull << 17);  // XTILECFG + XTILEDATA
  const CpuidRegs l7s0 = cpuid(7, 0);
  if (ymm_state && l7s0.eax >= 1) {
    const CpuidRegs l7s1 = cpuid(7, 1);
    x.avx_vnni = (l7s1.eax & (1u << 4)) != 0;  // CPUID.(7,1):EAX[4] AVX-VNNI
  }
  if (tile_state) {
    x.amx_bf16 = (l7s0.edx & (1u << 22)) != 0;  // CPUID.(7,0):EDX[22] AMX-BF16
    x.amx_tile = (l7s0.edx & (1u << 24)) != 0;  // CPUID.(7,0):EDX[24] AMX-TILE
    x.amx_int8 = (l7s0.edx & (1u << 25)) != 0;  // CPUID.(7,0):EDX[25] AMX-INT8
  }
  return x;
}
#endif

#if !QFORGE_HW_X86
// cpuinfo 2022 has no I8MM query; Linux reports it in AT_HWCAP2 (HWCAP2_I8MM, Linux 5.10).
bool detect_i8mm() {
#if QFORGE_HW_ARM64_LINUX
  constexpr unsigned long kHwcap2I8mm = 1ul << 13;
  return (getauxval(AT_HWCAP2) & kHwcap2I8mm) != 0;
#else
  return false;
#endif
}
#endif

std::string vendor_name(cpuinfo_vendor v) {
  switch (v) {
    case cpuinfo_vendor_intel: return "Intel";
    case cpuinfo_vendor_amd: return "AMD";
    case cpuinfo_vendor_arm: return "ARM";
    case cpuinfo_vendor_qualcomm: return "Qualcomm";
    case cpuinfo_vendor_apple: return "Apple";
    case cpuinfo_vendor_samsung: return "Samsung";
    case cpuinfo_vendor_nvidia: return "NVIDIA";
    case cpuinfo_vendor_ibm: return "IBM";
    case cpuinfo_vendor_via: return "VIA";
    case cpuinfo_vendor_cavium: return "Cavium";
    case cpuinfo_vendor_broadcom: return "Broadcom";
    case cpuinfo_vendor_apm: return "APM";
    case cpuinfo_vendor_huawei: return "Huawei";
    case cpuinfo_vendor_hygon: return "Hygon";
    case cpuinfo_vendor_marvell: return "Marvell";
    default: return "unknown";
  }
}

std::string architecture_name() {
#if defined(__x86_64__)
  return "x86_64";
#elif defined(__i386__)
  return "x86";
#elif defined(__aarch64__)
  return "aarch64";
#elif defined(__arm__)
  return "arm";
#else
  return "unknown";
#endif
}

// One entry per cache level and type, describing the first instance (all instances of a level
// are alike on the CPUs cpuinfo knows; hybrid parts differ only in how many share them).
void add_cache(std::vector<CacheLevel>& out, int level, const char* type, uint32_t count,
               const cpuinfo_cache* first) {
  if (count == 0 || first == nullptr || first->size == 0) return;
  out.push_back({level, type, first->size, first->processor_count});
}

void fill_from_cpuinfo(CpuInfo& info) {
  const uint32_t packages = cpuinfo_get_packages_count();
  info.packages = static_cast<int>(packages);
  info.cores = static_cast<int>(cpuinfo_get_cores_count());
  info.logical_processors = static_cast<int>(cpuinfo_get_processors_count());
  if (packages > 0) {
    const cpuinfo_package* p = cpuinfo_get_package(0);
    info.model = p->name;
  }
  if (info.cores > 0) info.vendor = vendor_name(cpuinfo_get_core(0)->vendor);

  add_cache(info.caches, 1, "data", cpuinfo_get_l1d_caches_count(), cpuinfo_get_l1d_cache(0));
  add_cache(info.caches, 1, "instruction", cpuinfo_get_l1i_caches_count(),
            cpuinfo_get_l1i_cache(0));
  add_cache(info.caches, 2, "unified", cpuinfo_get_l2_caches_count(), cpuinfo_get_l2_cache(0));
  add_cache(info.caches, 3, "unified", cpuinfo_get_l3_caches_count(), cpuinfo_get_l3_cache(0));
  add_cache(info.caches, 4, "unified", cpuinfo_get_l4_caches_count(), cpuinfo_get_l4_cache(0));

#if QFORGE_HW_X86
  const X86Extras extras = detect_x86_extras();
#endif
  for (std::string_view name : kFeatureOrder) {
    bool on = false;
#if QFORGE_HW_X86
    if (name == "sse4_1") on = cpuinfo_has_x86_sse4_1();
    else if (name == "avx2") on = cpuinfo_has_x86_avx2();
    else if (name == "fma") on = cpuinfo_has_x86_fma3();
    else if (name == "f16c") on = cpuinfo_has_x86_f16c();
    else if (name == "avx512f") on = cpuinfo_has_x86_avx512f();
    else if (name == "avx512bw") on = cpuinfo_has_x86_avx512bw();
    else if (name == "avx512vl") on = cpuinfo_has_x86_avx512vl();
    else if (name == "avx512vnni") on = cpuinfo_has_x86_avx512vnni();
    else if (name == "avx512bf16") on = cpuinfo_has_x86_avx512bf16();
    else if (name == "avx_vnni") on = extras.avx_vnni;
    else if (name == "amx_int8") on = extras.amx_int8;
    else if (name == "amx_bf16") on = extras.amx_bf16;
    else if (name == "amx_tile") on = extras.amx_tile;
#else
    if (name == "neon") on = cpuinfo_has_arm_neon();
    else if (name == "neon_dot") on = cpuinfo_has_arm_neon_dot();
    else if (name == "i8mm") on = detect_i8mm();
#endif
    info.features.emplace_back(std::string(name), on);
  }
}

// cpuinfo's package name, or the raw CPUID brand string when cpuinfo normalised it away
// (some hypervisors report a generic brand that cpuinfo's parser drops).
std::string brand_string() {
#if QFORGE_HW_X86
  if (cpuid(0x80000000u, 0).eax < 0x80000004u) return {};
  std::array<unsigned, 12> words{};
  for (unsigned i = 0; i < 3; ++i) {
    const CpuidRegs r = cpuid(0x80000002u + i, 0);
    words[i * 4 + 0] = r.eax;
    words[i * 4 + 1] = r.ebx;
    words[i * 4 + 2] = r.ecx;
    words[i * 4 + 3] = r.edx;
  }
  std::string s(reinterpret_cast<const char*>(words.data()), sizeof(words));
  s.resize(s.find('\0') == std::string::npos ? s.size() : s.find('\0'));
  const auto first = s.find_first_not_of(' ');
  const auto last = s.find_last_not_of(' ');
  return first == std::string::npos ? std::string{} : s.substr(first, last - first + 1);
#else
  return {};
#endif
}

void warn(const char* what) noexcept {
  try {
    log_format(LogLevel::warn, "CPU detection: {}; features not detected are reported as absent",
               what);
  } catch (...) {
    // Logging is best effort here: cpu_info() promises not to throw.
  }
}

CpuInfo detect() noexcept {
  CpuInfo info;
  try {
    info.architecture = architecture_name();
    if (cpuinfo_initialize()) {
      fill_from_cpuinfo(info);
    } else {
      warn("cpuinfo_initialize() failed");
    }
    if (info.model.empty()) info.model = brand_string();
  } catch (const std::exception& e) {
    warn(e.what());  // only allocation can throw above
  }
  if (info.vendor.empty()) info.vendor = "unknown";
  if (info.features.size() != kFeatureOrder.size()) {
    info.features.clear();
    for (std::string_view name : kFeatureOrder)
      info.features.emplace_back(std::string(name), false);
  }
  return info;
}

}  // namespace

// CpuInfo is a plain struct without QFORGE_API; export its one member function explicitly.
bool CpuInfo::has(std::string_view feature) const {
  const auto it = std::find_if(features.begin(), features.end(),
                               [&](const auto& f) { return f.first == feature; });
  return it != features.end() && it->second;
}

const CpuInfo& cpu_info() {
  static const CpuInfo info = detect();
  return info;
}

}  // namespace qforge
