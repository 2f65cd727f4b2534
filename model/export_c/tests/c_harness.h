// Compiles an exported model with the system's cc and runs it on samples, for the tests.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "qforge/model/export_c.h"

namespace qforge::model::testing {

// The C compiler the tests use: $CC, else cc; nullopt when none runs.
std::optional<std::string> c_compiler();
// That compiler, clang where it runs, and that compiler with -m32 where a 32-bit program builds
// and runs (the export must build under each and give the same bytes).
std::vector<std::string> c_compilers();

class CompiledModel {
 public:
  // Writes `c` into a fresh temporary directory and compiles it with the strict flags of the
  // issue (-std=c99 -Wall -Wextra -Wpedantic -Werror); fails the test on a compiler error.
  explicit CompiledModel(const CExport& c, const std::string& compiler);
  ~CompiledModel();
  // Runs the program over `samples` (each input_size floats, back to back); returns the int8
  // outputs back to back.
  std::vector<std::int8_t> run(std::span<const float> samples) const;
  const std::filesystem::path& dir() const { return dir_; }
  bool ok() const { return ok_; }

 private:
  std::filesystem::path dir_;
  std::int64_t output_size_ = 0;
  bool ok_ = false;
};

}  // namespace qforge::model::testing
