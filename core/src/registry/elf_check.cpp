#include "registry/elf_check.h"

#include <elf.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <fstream>

#include <fmt/format.h>

namespace qforge::detail {
namespace {

// The ELF identity of this process, fixed at compile time: a plugin must match all three.
struct ElfIdentity {
  unsigned machine;
  unsigned char elf_class;  // ELFCLASS32 / ELFCLASS64
  unsigned char data;       // ELFDATA2LSB / ELFDATA2MSB
};

constexpr ElfIdentity kThisProcess = {
#if defined(__x86_64__)
    EM_X86_64,
#elif defined(__aarch64__)
    EM_AARCH64,
#elif defined(__i386__)
    EM_386,
#elif defined(__arm__)
    EM_ARM,
#elif defined(__riscv)
    EM_RISCV,
#elif defined(__powerpc64__)
    EM_PPC64,
#elif defined(__powerpc__)
    EM_PPC,
#elif defined(__s390__)
    EM_S390,
#else
    EM_NONE,  // unknown here: the machine check is skipped and dlopen() decides
#endif
    sizeof(void*) == 8 ? ELFCLASS64 : ELFCLASS32,
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    ELFDATA2MSB,
#else
    ELFDATA2LSB,
#endif
};

std::string describe_identity(const ElfIdentity& id, bool with_class, bool with_order) {
  std::string text = elf_machine_name(id.machine);
  if (with_class) text += id.elf_class == ELFCLASS64 ? " 64-bit" : " 32-bit";
  if (with_order) text += id.data == ELFDATA2MSB ? " big-endian" : " little-endian";
  return text;
}

// The first bytes of a file as a quoted C-style string, so that a text file, an archive
// ("!<arch>") or a linker script ("/* GNU ld script") is recognisable in the message.
std::string quote_prefix(const unsigned char* bytes, std::size_t n) {
  std::string text = "\"";
  for (std::size_t i = 0; i < n; ++i) {
    const unsigned char c = bytes[i];
    if (c == '\n') {
      text += "\\n";
    } else if (c == '"' || c == '\\') {
      text += '\\';
      text += static_cast<char>(c);
    } else if (c >= 0x20 && c < 0x7f) {
      text += static_cast<char>(c);
    } else {
      text += fmt::format("\\x{:02x}", c);
    }
  }
  return text + "\"";
}

std::string_view elf_type_name(unsigned type) {
  switch (type) {
    case ET_REL: return "a relocatable object file (.o)";
    case ET_EXEC: return "a non-PIE executable";
    case ET_CORE: return "a core dump";
    default: return "an ELF file of unknown type";
  }
}

}  // namespace

std::string elf_machine_name(unsigned machine) {
  switch (machine) {
    case EM_X86_64: return "x86_64";
    case EM_386: return "i386";
    case EM_AARCH64: return "aarch64";
    case EM_ARM: return "arm";
    case EM_RISCV: return "riscv";
    case EM_PPC64: return "ppc64";
    case EM_PPC: return "ppc";
    case EM_S390: return "s390";
    case EM_MIPS: return "mips";
    case EM_SPARCV9: return "sparcv9";
    case 258: return "loongarch";  // EM_LOONGARCH, missing from older <elf.h>
    default: return fmt::format("ELF machine {}", machine);
  }
}

std::string this_process_architecture() {
  return describe_identity(kThisProcess, false, false);
}

std::optional<ElfProblem> check_elf_file(const std::filesystem::path& file) noexcept try {
  const std::string name = file.string();
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    // dlopen() will fail too and give the system's reason (permissions, a dangling link).
    return std::nullopt;
  }
  // e_ident (16 bytes), e_type (2), e_machine (2): all we need, and at the same offsets for
  // 32- and 64-bit files.
  std::array<unsigned char, 20> head{};
  in.read(reinterpret_cast<char*>(head.data()), head.size());
  const auto got = static_cast<std::size_t>(in.gcount());
  if (got == 0) {
    return ElfProblem{PluginFailureKind::not_shared_library,
                      fmt::format("{} is not a shared library: the file is empty", name)};
  }
  if (got < 4 || head[EI_MAG0] != ELFMAG0 || head[EI_MAG1] != ELFMAG1 ||
      head[EI_MAG2] != ELFMAG2 || head[EI_MAG3] != ELFMAG3) {
    return ElfProblem{PluginFailureKind::not_shared_library,
                      fmt::format("{} is not a shared library: no ELF header (starts with {}); "
                                  "expected an ELF shared object built by qforge_add_plugin()",
                                  name, quote_prefix(head.data(), std::min<std::size_t>(got, 16)))};
  }
  if (got < head.size()) {
    return ElfProblem{PluginFailureKind::not_shared_library,
                      fmt::format("{} is not a shared library: truncated ELF header ({} bytes)",
                                  name, got)};
  }
  const unsigned char elf_class = head[EI_CLASS];
  const unsigned char data = head[EI_DATA];
  if ((elf_class != ELFCLASS32 && elf_class != ELFCLASS64) ||
      (data != ELFDATA2LSB && data != ELFDATA2MSB)) {
    return ElfProblem{PluginFailureKind::not_shared_library,
                      fmt::format("{} is not a shared library: corrupt ELF header (class {}, "
                                  "data encoding {})",
                                  name, elf_class, data)};
  }
  auto u16 = [&](std::size_t at) {
    return data == ELFDATA2LSB ? unsigned(head[at]) | unsigned(head[at + 1]) << 8
                               : unsigned(head[at]) << 8 | unsigned(head[at + 1]);
  };
  const ElfIdentity found{u16(18), elf_class, data};
  const bool machine_differs =
      kThisProcess.machine != EM_NONE && found.machine != kThisProcess.machine;
  const bool class_differs = found.elf_class != kThisProcess.elf_class;
  const bool order_differs = found.data != kThisProcess.data;
  if (machine_differs || class_differs || order_differs) {
    return ElfProblem{
        PluginFailureKind::wrong_architecture,
        fmt::format("{} was built for {}, this process is {}; rebuild the plugin for this "
                    "machine",
                    name, describe_identity(found, class_differs, order_differs),
                    describe_identity(kThisProcess, class_differs, order_differs))};
  }
  const unsigned type = u16(16);
  if (type != ET_DYN) {
    return ElfProblem{PluginFailureKind::not_shared_library,
                      fmt::format("{} is not a shared library: it is {}", name,
                                  elf_type_name(type))};
  }
  return std::nullopt;
} catch (...) {
  // Out of memory while formatting: let dlopen() have its say instead.
  return std::nullopt;
}

}  // namespace qforge::detail
