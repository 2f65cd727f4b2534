// `qforge quantize MODEL --recipe R.json --calibration DATA`: calibrates, builds the quantized
// model and reports per layer what quantization cost (SQNR against float, weight bytes, kernel,
// time). With --no-report it only calibrates and writes the QDQ model (-o): no plugin is loaded
// and no plan made, since the export reads nothing the plans decide.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "model_setup.h"

namespace qforge::cli {

struct QuantizeCommand {
  ModelOptions model;
  std::string output_path;  // the QDQ ONNX model
  std::string report_path;
  std::string chart_path;
  bool as_json = false;
  bool verbose = false;    // the wall time of each stage, on stderr
  bool no_report = false;  // calibrate and write the QDQ model only
  int report_batches = 8;
  int timed_runs = 3;

  CLI::App* add_to(CLI::App& parent);
  int run() const;

 private:
  int run_without_report() const;
};

}  // namespace qforge::cli
