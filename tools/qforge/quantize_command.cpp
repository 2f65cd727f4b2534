#include "quantize_command.h"

#include <filesystem>
#include <iostream>
#include <vector>

#include "qforge/model/layer_report.h"
#include "qforge/model/qdq_export.h"
#include "qforge/output_file.h"

namespace qforge::cli {
namespace {

namespace fs = std::filesystem;

std::string shown(const std::string& path) {
  return fs::absolute(path).lexically_normal().string();
}

void print_calibration(const Calibrated& c, std::ostream& info) {
  info << "calibration: " << c.data_description << "\n  " << c.batches << " batch"
       << (c.batches == 1 ? "" : "es") << " of " << c.batch;
  if (c.left_out > 0)
    info << " (the last " << c.left_out
         << " samples left out: every calibration batch has the same shape)";
  info << "\n";
}

// Which rule quantizes each node, as the recipe resolves on the float graph.
void print_resolution(const model::Recipe& recipe, const model::Executor& float_model,
                      std::ostream& info) {
  const auto nodes = model::node_refs(float_model.graph());
  info << "\n" << model::format_report(recipe, model::resolve(recipe, nodes), nodes) << "\n";
}

// Everything quantize writes, from the finished model and its report; each file atomically.
void write_outputs(const QuantizeCommand& c, const model::QuantizedModel& quantized,
                   const model::ModelReport& report, const std::string& report_json,
                   std::ostream& info) {
  if (!c.output_path.empty()) {
    model::export_qdq_onnx(quantized, c.output_path);
    info << "QDQ model: " << shown(c.output_path) << "\n";
  }
  if (!c.report_path.empty()) {
    write_file_atomically(c.report_path, report_json + "\n", "report");
    info << "report: " << shown(c.report_path) << "\n";
  }
  if (!c.chart_path.empty()) {
    write_file_atomically(c.chart_path, model::report_to_svg(report), "chart");
    info << "chart: " << shown(c.chart_path) << "\n";
  }
}

// --no-report skips everything only the report needs: the options that shape the report, or
// choose who runs it, contradict it, and without -o there would be nothing to write.
void check_no_report(const CLI::App& app) {
  if (app.count("--no-report") == 0) return;
  for (const char* option : {"--report", "--chart", "--json", "--report-batches", "--timed-runs"})
    if (app.count(option) > 0)
      throw CLI::ValidationError(std::string("--no-report contradicts ") + option +
                                 ": that option shapes the report, which --no-report skips; "
                                 "drop one of the two");
  if (app.count("--plugins") > 0)
    throw CLI::ValidationError(
        "--no-report contradicts --plugins: the plugins run the report's quantized layers, and "
        "with --no-report nothing runs them (the QDQ model needs no plugin); drop one of the two");
  if (app.count("--output") == 0)
    throw CLI::ValidationError(
        "--no-report needs -o/--output: without the report the QDQ model is all quantize writes");
}

}  // namespace

CLI::App* QuantizeCommand::add_to(CLI::App& parent) {
  CLI::App* app = parent.add_subcommand(
      "quantize",
      "Calibrate a model on data, quantize it as a recipe says, and report per layer what it "
      "cost (SQNR against float, weight bytes, plugin and kernel, time)");
  model.add_model(*app);
  model.add_quantization(*app, /*recipe_required=*/true);
  model.add_shapes(*app);
  model.add_batch_size(*app);
  app->add_option("-o,--output", output_path,
                  "Write the quantized model as a QDQ ONNX model (QuantizeLinear/DequantizeLinear "
                  "around each quantized layer; input shapes fixed as calibrated) to this file");
  app->add_option("--report", report_path, "Write the report as JSON to this file (atomically)");
  app->add_option("--chart", chart_path, "Write the SQNR of each layer as an SVG bar chart");
  app->add_flag("--json", as_json, "Print the report as JSON on stdout and nothing else");
  app->add_flag("-v,--verbose", verbose,
                "Print the wall time of each stage (import, calibration, plugin loading, plans, "
                "report, export) on stderr");
  app->add_option("--report-batches", report_batches,
                  "Calibration batches the report compares float and quantized on (default 8)")
      ->check(CLI::PositiveNumber);
  app->add_option("--timed-runs", timed_runs, "Timed runs of each report batch (default 3)")
      ->check(CLI::PositiveNumber);
  app->add_flag("--no-report", no_report,
                "Calibrate and write the QDQ model (-o, required) without the report: no plugin "
                "is loaded, no plan made and nothing run but calibration (the QDQ model is the "
                "same as with the report). Excludes the report's options");
  app->parse_complete_callback([this, app] { check_no_report(*app); });
  app->footer(
      "Examples:\n"
      "  qforge quantize mlp.onnx --recipe int8.json --calibration train.npy\n"
      "  qforge quantize mlp.onnx --recipe int8.json --calibration train.npy --no-report "
      "-o mlp_qdq.onnx\n"
      "  qforge quantize cnn.onnx --recipe int8.json \\\n"
      "      --calibration /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz \\\n"
      "      --batch-size 128 --report report.json --chart sqnr.svg -o cnn_qdq.onnx\n"
      "  qforge quantize mlp.onnx --recipe int8.json --calibration data.npz:x --json\n"
      "\nThe tuning of each layer's kernel follows QFORGE_ONLINE_TUNING and the tuning cache "
      "(docs/ACCELERATOR.md).");
  return app;
}

int QuantizeCommand::run() const {
  if (no_report) return run_without_report();
  std::ostream& info = as_json ? std::cerr : std::cout;
  StageTimes stages(verbose);
  const auto schemas = start_onnx_schemas(/*plugin_thread=*/true);
  auto pending_accelerator = start_accelerator(model);
  const LoadedModel m = load_model(model);
  stages.mark("import");
  // One cache from calibration to the report: the float executor of the calibration batches'
  // shape is built once.
  Calibrated c;
  ModelCache cache(m, &c.recipe, &c.calibration, nullptr);
  c = calibrate_model(m, model, &stages, &cache);
  print_calibration(c, info);

  const auto accelerator = pending_accelerator.get();
  stages.mark("plugins (loaded meanwhile)");
  cache.set_accelerator(accelerator.get());
  const model::Executor& float_model = cache.float_model(c.batch_shape);
  const model::QuantizedModel& quantized = cache.quantized(c.batch_shape);
  stages.mark("quantized model (plans)");
  if (!as_json) print_resolution(c.recipe, float_model, info);

  // The report compares both models on the first calibration batches, held together (a few
  // batches: layer_report takes them as one span).
  auto reader = DataReader::open(model.calibration, DataRole::samples);
  std::vector<model::TensorMap> data;
  for (std::int64_t i = 0; i < std::min<std::int64_t>(report_batches, c.batches); ++i) {
    model::TensorMap batch;
    batch.emplace(m.input, fit_batch(m, *reader->next(c.batch)));
    data.push_back(std::move(batch));
  }
  stages.mark("report data");
  const model::ModelReport report =
      model::layer_report(float_model, quantized, data, {.timed_runs = timed_runs});
  stages.mark("report (SQNR, timed runs)");
  const std::string json = model::report_to_json(report);
  if (as_json) std::cout << json << "\n";
  else std::cout << model::format_report(report);
  write_outputs(*this, quantized, report, json, info);
  stages.mark("outputs");
  stages.print();
  return 0;
}

int QuantizeCommand::run_without_report() const {
  StageTimes stages(verbose);
  // No plugin thread: on two cores the schemas register beside the main thread, which loads
  // OpenBLAS and reads and parses the model meanwhile.
  const auto schemas = start_onnx_schemas(/*plugin_thread=*/false);
  load_openblas();
  const LoadedModel m = load_model(model);
  stages.mark("import");
  ModelCache cache(m, nullptr, nullptr, nullptr);
  const Calibrated c = calibrate_model(m, model, &stages, &cache);
  print_calibration(c, std::cout);
  const model::Executor& float_model = cache.float_model(c.batch_shape);
  const auto nodes = model::node_refs(float_model.graph());
  const model::QuantizedModel quantized(float_model, c.recipe, model::resolve(c.recipe, nodes),
                                        c.calibration, model::QuantizedModel::without_plans);
  stages.mark("quantized model (no plans)");
  print_resolution(c.recipe, float_model, std::cout);
  model::export_qdq_onnx(quantized, output_path);
  std::cout << "QDQ model: " << shown(output_path) << "\n";
  stages.mark("outputs");
  stages.print();
  return 0;
}

}  // namespace qforge::cli
