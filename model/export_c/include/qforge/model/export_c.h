// Standalone C export of an integer program (docs/C_EXPORT.md): model.h, model.c, weights.c,
// the portable kernels qforge_nn_int8.h/.c (and qforge_nn_int16.h/.c for a 16x8 program) and a
// command-line driver model_main.c, C99 with fixed-width types, no allocation, one static arena
// sized by liveness.
//
//   CExport c = emit_c(lower_to_integer(graph, batches));
//   write_c_export(c, "out/");   // then: cc -std=c99 -O2 -ffp-contract=off out/*.c -o model
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include "qforge/model/integer_program.h"

namespace qforge::model {

struct CExportReport {
  std::int64_t arena_bytes = 0;           // the static arena (every activation, by liveness)
  std::int64_t weight_bytes = 0;          // const arrays: weights, bias, multipliers, shifts
  std::int64_t multiply_accumulates = 0;  // per inference
  std::int64_t input_size = 0, output_size = 0;
};

struct CExport {
  std::map<std::string, std::string> files;  // file name -> contents
  CExportReport report;
};

// The C sources of `program`. Throws qforge::Error for a program it cannot write (a float
// prefix constant that is not finite).
CExport emit_c(const IntegerProgram& program);

// Writes every file into `dir` (created if needed), each one atomically.
void write_c_export(const CExport& c, const std::filesystem::path& dir);

// What the exported code occupies once compiled, measured with the system's tools.
struct CFootprint {
  std::int64_t text_bytes = 0;    // code and const data (weights): flash
  std::int64_t data_bytes = 0;    // initialised data: flash (and RAM)
  std::int64_t bss_bytes = 0;     // zeroed data: the static arena
  std::int64_t stack_bytes = -1;  // the deepest call chain's frames; -1 when not measured
  std::string command;            // how it was measured
};

// Compiles model.c, weights.c and the kernel files of the export in `dir` with `compiler`
// (-std=c99 -Os -c, and -fstack-usage where the compiler has it) into a temporary directory
// and reads `size` of the objects. nullopt when the compiler or size does not run.
std::optional<CFootprint> measure_footprint(const std::filesystem::path& dir,
                                            const std::string& compiler = "cc");

}  // namespace qforge::model
