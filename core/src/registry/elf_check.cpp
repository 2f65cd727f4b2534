#include "registry/elf_check.h"

#include <elf.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "qforge/input_file.h"

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

std::string this_process_architecture() { return describe_identity(kThisProcess, false, false); }

namespace {

// Field readers in the image's byte order.
struct Decoder {
  bool little;
  std::uint64_t get(const unsigned char* at, int bytes) const {
    std::uint64_t v = 0;
    for (int i = 0; i < bytes; ++i) {
      const int shift = little ? 8 * i : 8 * (bytes - 1 - i);
      v |= std::uint64_t{at[i]} << shift;
    }
    return v;
  }
};

// Where the header fields and table entries the check needs sit, per ELF class.
struct ClassLayout {
  std::size_t ehdr_size, phdr_size, shdr_size;
  std::size_t phoff_at, shoff_at, phentsize_at, phnum_at, shentsize_at, shnum_at;
  int addr_bytes;                        // 4 or 8
  std::size_t p_offset_at, p_filesz_at;  // inside a program header
  std::size_t sh_size_at;                // inside a section header
};
constexpr ClassLayout kElf64{64, 56, 64, 32, 40, 54, 56, 58, 60, 8, 8, 32, 32};
constexpr ClassLayout kElf32{52, 32, 40, 28, 32, 42, 44, 46, 48, 4, 4, 16, 20};

std::string_view segment_type_name(std::uint64_t type) {
  switch (type) {
    case PT_LOAD: return "PT_LOAD";
    case PT_DYNAMIC: return "PT_DYNAMIC";
    case PT_INTERP: return "PT_INTERP";
    case PT_NOTE: return "PT_NOTE";
    case PT_TLS: return "PT_TLS";
    case PT_GNU_EH_FRAME: return "PT_GNU_EH_FRAME";
    case PT_GNU_RELRO: return "PT_GNU_RELRO";
    default: return "segment";
  }
}

// `offset + size <= file_size` without overflow.
bool inside(std::uint64_t offset, std::uint64_t size, std::uint64_t file_size) {
  return offset <= file_size && size <= file_size - offset;
}

ElfProblem damaged(const std::string& name, std::uint64_t file_size, const std::string& what) {
  return ElfProblem{PluginFailureKind::not_shared_library,
                    fmt::format("{} is not a loadable shared library: it is truncated or damaged "
                                "({}, and the file has {} bytes); expected a complete ELF shared "
                                "object (copy or build it again)",
                                name, what, file_size)};
}

// The header, program header table, segments and section header table: all inside the file.
std::optional<ElfProblem> check_layout(std::uint64_t file_size, const ElfRead& read,
                                       const std::string& name, const ClassLayout& c,
                                       const Decoder& d) {
  std::array<unsigned char, 64> eh{};
  if (file_size < c.ehdr_size || !read(0, std::span(eh.data(), c.ehdr_size)))
    return damaged(name, file_size, fmt::format("its ELF header needs {} bytes", c.ehdr_size));
  const std::uint64_t phoff = d.get(&eh[c.phoff_at], c.addr_bytes);
  const std::uint64_t shoff = d.get(&eh[c.shoff_at], c.addr_bytes);
  const std::uint64_t phentsize = d.get(&eh[c.phentsize_at], 2);
  const std::uint64_t phnum = d.get(&eh[c.phnum_at], 2);
  const std::uint64_t shentsize = d.get(&eh[c.shentsize_at], 2);
  std::uint64_t shnum = d.get(&eh[c.shnum_at], 2);

  if (phnum == 0) return damaged(name, file_size, "it has no program headers, so nothing to load");
  if (phnum == PN_XNUM) return damaged(name, file_size, "it claims 65535 or more program headers");
  if (phentsize != c.phdr_size)
    return damaged(name, file_size,
                   fmt::format("its program headers are {} bytes each where "
                               "{} are expected",
                               phentsize, c.phdr_size));
  const std::uint64_t ph_bytes = phnum * phentsize;  // at most 65535 * 56: no overflow
  if (!inside(phoff, ph_bytes, file_size))
    return damaged(name, file_size,
                   fmt::format("its program header table ({} entries at byte "
                               "{}) ends past the end of the file",
                               phnum, phoff));
  std::vector<unsigned char> ph(static_cast<std::size_t>(ph_bytes));
  if (!read(phoff, ph)) return damaged(name, file_size, "its program header table cannot be read");
  for (std::uint64_t i = 0; i < phnum; ++i) {
    const unsigned char* p = ph.data() + i * phentsize;
    const std::uint64_t type = d.get(p, 4);
    const std::uint64_t offset = d.get(p + c.p_offset_at, c.addr_bytes);
    const std::uint64_t filesz = d.get(p + c.p_filesz_at, c.addr_bytes);
    // Every segment's file contents, not only PT_LOAD: the loader reads PT_DYNAMIC, PT_NOTE
    // and the rest through the mapping of the loadable segments that contain them.
    if (filesz != 0 && !inside(offset, filesz, file_size))
      return damaged(
          name, file_size,
          fmt::format("its {} segment {} needs bytes {} to {}", segment_type_name(type), i, offset,
                      offset > UINT64_MAX - filesz ? std::string("beyond 2^64")
                                                   : std::to_string(offset + filesz)));
  }

  if (shoff == 0 && shnum == 0) return std::nullopt;  // no section headers (a stripped image)
  if (shentsize != c.shdr_size)
    return damaged(name, file_size,
                   fmt::format("its section headers are {} bytes each where "
                               "{} are expected",
                               shentsize, c.shdr_size));
  if (shnum == 0) {
    // SHN_UNDEF convention: 65280 or more sections; the count is section 0's sh_size.
    std::array<unsigned char, 64> s0{};
    if (!inside(shoff, shentsize, file_size) || !read(shoff, std::span(s0.data(), c.shdr_size)))
      return damaged(name, file_size,
                     fmt::format("its section header table at byte {} ends past "
                                 "the end of the file",
                                 shoff));
    shnum = d.get(&s0[c.sh_size_at], c.addr_bytes);
    if (shnum > file_size / shentsize)
      return damaged(name, file_size, fmt::format("it claims {} section headers", shnum));
  }
  if (!inside(shoff, shnum * shentsize, file_size))
    return damaged(name, file_size,
                   fmt::format("its section header table ({} entries at byte "
                               "{}) ends past the end of the file",
                               shnum, shoff));
  return std::nullopt;
}

}  // namespace

std::optional<ElfProblem> check_elf_image(std::uint64_t file_size, const ElfRead& read,
                                          const std::string& name) noexcept try {
  // e_ident (16 bytes), e_type (2), e_machine (2): at the same offsets for 32- and 64-bit files.
  std::array<unsigned char, 20> head{};
  const std::size_t got = static_cast<std::size_t>(std::min<std::uint64_t>(file_size, head.size()));
  if (got == 0) {
    return ElfProblem{PluginFailureKind::not_shared_library,
                      fmt::format("{} is not a shared library: the file is empty", name)};
  }
  if (!read(0, std::span(head.data(), got)))
    return damaged(name, file_size, "its first bytes cannot be read");
  if (got < 4 || head[EI_MAG0] != ELFMAG0 || head[EI_MAG1] != ELFMAG1 || head[EI_MAG2] != ELFMAG2 ||
      head[EI_MAG3] != ELFMAG3) {
    return ElfProblem{PluginFailureKind::not_shared_library,
                      fmt::format("{} is not a shared library: no ELF header (starts with {}); "
                                  "expected an ELF shared object built by qforge_add_plugin()",
                                  name, quote_prefix(head.data(), std::min<std::size_t>(got, 16)))};
  }
  if (got < head.size()) {
    return ElfProblem{
        PluginFailureKind::not_shared_library,
        fmt::format("{} is not a shared library: truncated ELF header ({} bytes)", name, got)};
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
  const Decoder d{data == ELFDATA2LSB};
  const ElfIdentity found{static_cast<unsigned>(d.get(&head[18], 2)), elf_class, data};
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
  const unsigned type = static_cast<unsigned>(d.get(&head[16], 2));
  if (type != ET_DYN) {
    return ElfProblem{
        PluginFailureKind::not_shared_library,
        fmt::format("{} is not a shared library: it is {}", name, elf_type_name(type))};
  }
  return check_layout(file_size, read, name, elf_class == ELFCLASS64 ? kElf64 : kElf32, d);
} catch (...) {
  // Out of memory while formatting or reading the tables: refuse the file rather than hand a
  // file nobody looked at to dlopen().
  return ElfProblem{PluginFailureKind::not_shared_library,
                    "a plugin file could not be checked (out of memory); it is not loaded"};
}

std::optional<ElfProblem> check_elf_bytes(std::span<const std::byte> bytes,
                                          const std::string& name) noexcept {
  const ElfRead read = [bytes](std::uint64_t offset, std::span<unsigned char> out) {
    if (!inside(offset, out.size(), bytes.size())) return false;
    std::memcpy(out.data(), bytes.data() + offset, out.size());
    return true;
  };
  return check_elf_image(bytes.size(), read, name);
}

std::optional<ElfProblem> check_elf_file(const std::filesystem::path& file) noexcept try {
  const std::string name = file.string();
  // O_NONBLOCK: a FIFO would otherwise block open() until a writer comes, forever.
  const int fd = ::open(file.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    if (err == ELOOP)
      return ElfProblem{PluginFailureKind::load_failed,
                        fmt::format("{} cannot be opened: it is a symbolic link loop ({})", name,
                                    std::strerror(err))};
    // dlopen() will fail too and give the system's reason (permissions, a dangling link).
    return std::nullopt;
  }
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) return std::nullopt;
  if (!S_ISREG(st.st_mode))
    return ElfProblem{PluginFailureKind::not_shared_library,
                      fmt::format("{} is not a shared library: it is {}; expected a regular "
                                  "file (it is not opened further)",
                                  name, file_type_name(st.st_mode))};
  const ElfRead read = [fd](std::uint64_t offset, std::span<unsigned char> out) {
    std::size_t done = 0;
    while (done < out.size()) {
      const ssize_t n =
          ::pread(fd, out.data() + done, out.size() - done, static_cast<off_t>(offset + done));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      done += static_cast<std::size_t>(n);
    }
    return true;
  };
  return check_elf_image(static_cast<std::uint64_t>(st.st_size), read, name);
} catch (...) {
  return ElfProblem{PluginFailureKind::not_shared_library,
                    "a plugin file could not be checked (out of memory); it is not loaded"};
}

}  // namespace qforge::detail
