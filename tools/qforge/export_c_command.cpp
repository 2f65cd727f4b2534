#include "export_c_command.h"

#include <algorithm>
#include <filesystem>
#include <iostream>

#include "qforge/error.h"
#include "qforge/model/calibrate.h"
#include "qforge/model/export_c.h"
#include "qforge/model/export_c_recipe.h"
#include "qforge/output_file.h"

namespace qforge::cli {
namespace {

// Runs `check_data` through qforge's integer execution and writes check_input.bin and
// check_output.bin into the export; returns the number of samples.
void write_check_files(const ExportCCommand& cmd, const LoadedModel& m,
                       const model::IntegerProgram& program) {
  auto reader = DataReader::open(cmd.check_data, DataRole::samples);
  std::unique_ptr<DataReader> labels;
  if (!cmd.check_labels.empty()) labels = DataReader::open(cmd.check_labels, DataRole::labels);
  const std::int64_t n =
      cmd.check_limit > 0 ? std::min(reader->count(), cmd.check_limit) : reader->count();
  if (labels && labels->count() < n)
    throw Error(ErrorCode::invalid_argument, cmd.check_labels + ": " +
                                                 std::to_string(labels->count()) + " labels for " +
                                                 std::to_string(n) + " samples");
  const auto in_size = static_cast<std::size_t>(element_count(program.input_shape));
  std::string inputs, outputs;
  std::int64_t correct = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    const model::Tensor x = fit_batch(m, *reader->next(1));
    const auto v = x.values<float>();
    if (v.size() != in_size)
      throw Error(ErrorCode::shape_mismatch,
                  cmd.check_data + ": a sample has " + std::to_string(v.size()) +
                      " values; the export takes " + std::to_string(in_size));
    const auto y = model::run_integer_values(program, v);
    inputs.append(reinterpret_cast<const char*>(v.data()), v.size_bytes());
    outputs += model::output_bytes(program, y);
    if (labels) {
      const std::int64_t label = labels->next(1)->values<std::int64_t>()[0];
      const auto best = std::max_element(y.begin(), y.end()) - y.begin();  // first largest
      correct += best == label ? 1 : 0;
    }
  }
  write_file_atomically(std::filesystem::path(cmd.output_dir) / "check_input.bin", inputs,
                        "check input");
  write_file_atomically(std::filesystem::path(cmd.output_dir) / "check_output.bin", outputs,
                        "check output");
  std::cout << "check: " << n << " samples of " << reader->description()
            << " through qforge's integer execution -> check_input.bin, check_output.bin\n";
  if (labels)
    std::cout << "  accuracy: " << correct << " / " << n << " = "
              << static_cast<double>(correct) / static_cast<double>(n) << "\n";
}

}  // namespace

CLI::App* ExportCCommand::add_to(CLI::App& parent) {
  CLI::App* app = parent.add_subcommand(
      "export-c",
      "Lower a model to integer-only int8 or 16x8 (TFLite's conventions) and write it as "
      "standalone C99: model.h, model.c, weights.c and the portable kernels, bit-exact with "
      "qforge");
  model.add_model(*app);
  app->add_option("--recipe", model.recipe,
                  "Recipe (JSON, docs/RECIPES.md) whose calibration method and activation "
                  "dtype the export uses: static int8 affine activations, or static int16 "
                  "symmetric ones for the 16x8 variant (default: int8, entropy calibration)")
      ->check(CLI::ExistingFile);
  app->add_option("--calibration", model.calibration,
                  "Calibration data: .npy, .npz[:NAME], a directory of .npy files, or an IDX "
                  "file (gzip'd or not)")
      ->required();
  app->add_option("--calibration-limit", model.calibration_limit,
                  "Calibrate on the first N samples only (default: all)")
      ->check(CLI::PositiveNumber);
  model.add_shapes(*app);
  model.add_batch_size(*app);
  app->add_option("-o,--output-dir", output_dir, "Directory to write the C files into")->required();
  app->add_option("--check", check_data,
                  "Samples to run through qforge's integer execution: their inputs and "
                  "outputs (int8, or int16 in native byte order) are written as check_input.bin "
                  "and check_output.bin, for comparing "
                  "the compiled C byte for byte (model < check_input.bin | cmp - "
                  "check_output.bin)");
  app->add_option("--check-labels", check_labels,
                  "Labels of the --check samples: print the accuracy of the integer execution")
      ->needs("--check");
  app->add_option("--check-limit", check_limit, "Check the first N samples only (default: all)")
      ->check(CLI::PositiveNumber);
  app->add_flag("!--no-measure", measure,
                "Do not compile the export with cc to measure its flash, RAM and stack");
  app->footer(
      "Examples:\n"
      "  qforge export-c cnn.onnx --recipe int8_static.json \\\n"
      "      --calibration /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz \\\n"
      "      --calibration-limit 1024 -o cnn_c\n"
      "  cc -std=c99 -O2 -ffp-contract=off cnn_c/*.c -o cnn   # reads float32 samples on stdin\n"
      "\nSupported: " +
      std::string(model::supported_integer_ops()) + ".");
  return app;
}

int ExportCCommand::run() const {
  const LoadedModel m = load_model(model);
  require_single_input(m, "--calibration");
  model::LowerOptions options;
  if (!model.recipe.empty())
    options = model::lower_options_from_recipe(model::load_recipe(model.recipe), m.graph);

  auto reader = DataReader::open(model.calibration, DataRole::samples);
  const std::int64_t n = model.calibration_limit > 0
                             ? std::min(reader->count(), model.calibration_limit)
                             : reader->count();
  if (n == 0)
    throw Error(ErrorCode::invalid_argument, model.calibration + ": no samples to calibrate on");
  if (m.fixed_batch && n < *m.fixed_batch)
    throw Error(ErrorCode::invalid_argument, model.calibration + ": " + std::to_string(n) +
                                                 " samples, fewer than the batch of " +
                                                 std::to_string(*m.fixed_batch) +
                                                 " the model fixes for input '" + m.input + "'");
  const std::int64_t batch = m.fixed_batch.value_or(std::min(model.batch_size, n));
  // Batches stream from the reader into the observers; a last partial batch is left out, as
  // `quantize` does (every batch has one shape, so one executor serves them).
  const std::int64_t batches = std::max<std::int64_t>(1, n / batch);
  std::int64_t done = 0;
  const model::IntegerProgram program = model::lower_to_integer(
      m.graph,
      [&]() -> std::optional<model::TensorMap> {
        if (done == batches) return std::nullopt;
        ++done;
        model::TensorMap b;
        b.emplace(m.input, fit_batch(m, *reader->next(batch)));
        return b;
      },
      options);
  std::cout << "calibration: " << reader->description() << "\n  " << batches << " batch"
            << (batches == 1 ? "" : "es") << " of " << batch << "\n";
  const model::CExport c = model::emit_c(program);
  model::write_c_export(c, output_dir);
  const auto& r = c.report;
  std::cout << "C export: " << std::filesystem::absolute(output_dir).lexically_normal().string()
            << "\n";
  for (const auto& [name, text] : c.files) std::cout << "  " << name << "\n";
  std::cout << "ops: " << program.ops.size() << " (";
  for (std::size_t i = 0; i < program.ops.size(); ++i)
    std::cout << (i ? " " : "") << model::to_string(program.ops[i].kind);
  std::cout << ")\n";
  std::cout << "input: " << r.input_size << " float32, output: " << r.output_size << " "
            << name(program.activations) << " (scale " << program.output().scale << ", zero point "
            << program.output().zero_point << ")\n";
  std::cout << "arena: " << r.arena_bytes << " bytes (by liveness)\n";
  std::cout << "weights: " << r.weight_bytes << " bytes (int8 weights, "
            << (program.activations == DType::int16 ? "int64" : "int32")
            << " bias, multipliers and shifts)\n";
  std::cout << "multiply-accumulates per inference: " << r.multiply_accumulates << "\n";
  if (!check_data.empty()) write_check_files(*this, m, program);
  if (measure) {
    if (const auto f = model::measure_footprint(output_dir)) {
      std::cout << "flash: " << f->text_bytes + f->data_bytes << " bytes (text " << f->text_bytes
                << " + data " << f->data_bytes << "), static RAM: " << f->bss_bytes
                << " bytes (bss: the arena)";
      if (f->stack_bytes >= 0) std::cout << ", stack: " << f->stack_bytes << " bytes";
      std::cout << "\n  measured as: " << f->command << "\n";
    } else {
      std::cout << "flash: not measured (cc or size did not run)\n";
    }
  }
  return 0;
}

}  // namespace qforge::cli
