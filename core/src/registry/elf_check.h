// Looks at a candidate plugin file before dlopen() so that the two commonest mistakes get a
// message that says what is wrong: a file that is no shared library at all ("cannot open shared
// object file: invalid ELF header" from the loader), and a library built for another machine
// ("wrong ELF class: ELFCLASS32" / nothing useful at all for a foreign e_machine).
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "qforge/registry.h"

namespace qforge::detail {

struct ElfProblem {
  PluginFailureKind kind;  // not_shared_library or wrong_architecture
  std::string message;     // complete sentence naming the file
};

// nullopt when `file` is an ELF shared object for this process's machine, class and byte
// order; otherwise what is wrong with it. Never throws.
std::optional<ElfProblem> check_elf_file(const std::filesystem::path& file) noexcept;

// "x86_64", "aarch64", ... for an ELF e_machine value; "ELF machine <n>" when unknown.
std::string elf_machine_name(unsigned machine);

// The architecture this process runs as, in the words check_elf_file() uses ("x86_64").
std::string this_process_architecture();

}  // namespace qforge::detail
