// `qforge eval MODEL --data DATA --labels LABELS`: top-1 accuracy of the float model and, with
// --recipe and --calibration, of the quantized model and how often it agrees with float.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

#include "model_setup.h"

namespace qforge::cli {

struct EvalCommand {
  ModelOptions model;
  std::string data;
  std::string labels;
  std::int64_t limit = 0;
  bool as_json = false;

  CLI::App* add_to(CLI::App& parent);
  int run() const;
};

}  // namespace qforge::cli
