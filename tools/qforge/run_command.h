// `qforge run MODEL --input NAME=x.npy ... --output-dir DIR`: runs the model once on the given
// arrays, in float or (with --recipe and --calibration) quantized, and writes every graph output
// as DIR/<output>.npy.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "model_setup.h"

namespace qforge::cli {

struct RunCommand {
  ModelOptions model;
  std::vector<std::string> inputs;  // "name=path", or "path" for a model with one input
  std::string output_dir;
  int repeat = 0;  // timed runs after the first

  CLI::App* add_to(CLI::App& parent);
  int run() const;
};

}  // namespace qforge::cli
