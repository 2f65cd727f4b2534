// Looks at a candidate plugin file before dlopen(), for two reasons:
//   - the commonest mistakes get a message that says what is wrong: a file that is no shared
//     library at all ("invalid ELF header" from the loader), a library built for another machine
//     ("wrong ELF class: ELFCLASS32" / nothing useful at all for a foreign e_machine);
//   - dlopen() must never meet a file that can take the process down or hang it: a plugin cut
//     short (a copy interrupted, a full disk) makes the loader map segments past the end of the
//     file, and the first touch of such a page is SIGBUS; a FIFO blocks open() forever. So only
//     a regular file is opened (O_NONBLOCK, then fstat() on the opened descriptor), and the
//     whole ELF header, the program header table, every segment's file contents
//     (p_offset + p_filesz) and the section header table must lie inside the file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <span>
#include <string>

#include "qforge/registry.h"

namespace qforge::detail {

struct ElfProblem {
  PluginFailureKind kind;  // not_shared_library or wrong_architecture
  std::string message;     // complete sentence naming the file
};

// Reads `out.size()` bytes at `offset` of the image; false when they are not all there.
using ElfRead = std::function<bool(std::uint64_t offset, std::span<unsigned char> out)>;

// nullopt when the image of `file_size` bytes that `read` gives is an ELF shared object for this
// process's machine, class and byte order whose headers and segments all lie inside it;
// otherwise what is wrong with it. `name` is used in messages only. Never throws.
std::optional<ElfProblem> check_elf_image(std::uint64_t file_size, const ElfRead& read,
                                          const std::string& name) noexcept;

// check_elf_image() over bytes in memory (the whole file).
std::optional<ElfProblem> check_elf_bytes(std::span<const std::byte> bytes,
                                          const std::string& name) noexcept;

// Opens `file` (O_NONBLOCK, regular files only: a FIFO, a device or a directory is a problem,
// reported without blocking) and runs check_elf_image() on it. nullopt also when the file
// cannot be opened for a reason dlopen() will report itself (permissions). Never throws.
std::optional<ElfProblem> check_elf_file(const std::filesystem::path& file) noexcept;

// "x86_64", "aarch64", ... for an ELF e_machine value; "ELF machine <n>" when unknown.
std::string elf_machine_name(unsigned machine);

// The architecture this process runs as, in the words check_elf_file() uses ("x86_64").
std::string this_process_architecture();

}  // namespace qforge::detail
