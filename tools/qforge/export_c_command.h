// `qforge export-c MODEL --calibration DATA -o DIR [--recipe R.json]`: lowers the model to an
// integer-only int8 program, writes it as standalone C (docs/C_EXPORT.md) and reports the
// arena, the weights, the multiply-accumulates per inference and, where cc and size run, the
// flash, static RAM and stack of the compiled code.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "model_setup.h"

namespace qforge::cli {

struct ExportCCommand {
  ModelOptions model;
  std::string output_dir;
  bool measure = true;
  // --check: samples qforge runs through its own integer execution; their inputs and outputs
  // are written next to the C (check_input.bin, check_output.bin) so the compiled program can be
  // compared byte for byte on any target; with labels, the accuracy is printed.
  std::string check_data, check_labels;
  std::int64_t check_limit = 0;

  CLI::App* add_to(CLI::App& parent);
  int run() const;
};

}  // namespace qforge::cli
