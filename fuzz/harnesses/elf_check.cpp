// The plugin ELF check on arbitrary bytes: check_elf_file() must answer (a problem or nullopt)
// for any file, never crash. It is noexcept, so any exception inside is a finding as well.
#include "registry/elf_check.h"

#include "scratch_file.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  qforge::detail::check_elf_file(qforge::fuzz::write_scratch("plugin.so", data, size));
  return 0;
}
