// Standalone C export of an integer program (docs/C_EXPORT.md): model.h, model.c, weights.c,
// the portable kernels qforge_nn_int8.h/.c and a command-line driver model_main.c, C99 with
// fixed-width types, no allocation, one static arena sized by liveness.
//
//   CExport c = emit_c(lower_to_integer(graph, batches));
//   write_c_export(c, "out/");   // then: cc -std=c99 -O2 -ffp-contract=off out/*.c -o model
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>

#include "qforge/model/integer_program.h"

namespace qforge::model {

struct CExportReport {
  std::int64_t arena_bytes = 0;           // the static arena (every int8 activation, by liveness)
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

}  // namespace qforge::model
