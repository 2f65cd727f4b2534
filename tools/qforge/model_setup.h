// What quantize, run and eval share: loading the model, fixing its input shape, cutting a data
// set into batches that fit it, and calibrating + building the quantized model from a recipe.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "data/dataset.h"
#include "qforge/accelerator.h"
#include "qforge/model/calibrate.h"
#include "qforge/model/executor.h"
#include "qforge/model/graph.h"
#include "qforge/model/quantized_model.h"
#include "qforge/model/recipe.h"
#include "stage_times.h"

namespace qforge::cli {

// The options every model command takes.
struct ModelOptions {
  std::string model;
  std::vector<std::string> input_shapes;  // "name=1,1,28,28"
  std::string recipe;
  std::string calibration;
  std::int64_t batch_size = 64;
  std::int64_t calibration_limit = 0;  // 0: every sample of the calibration data
  std::string plugins;                 // comma-separated: the plugins the quantized layers may use

  void add_model(CLI::App& app);
  void add_shapes(CLI::App& app);
  void add_quantization(CLI::App& app, bool recipe_required);
  void add_batch_size(CLI::App& app);
};

// The imported graph and how batches of its (single) data input look.
struct LoadedModel {
  model::Graph graph;
  std::string input;  // the input the data feeds
  // Declared dims of that input after --input-shape: -1 where unknown.
  std::vector<std::int64_t> dims;
  // The batch extent the model fixes (dims[0] when known), else nullopt.
  std::optional<std::int64_t> fixed_batch;
  std::map<std::string, Shape, std::less<>> other_shapes;  // --input-shape of other inputs
};

LoadedModel load_model(const ModelOptions& o);
// model::register_onnx_schemas on another thread, started now, where this process has a core
// for it: the import's checker and shape inference need every ONNX schema registered, which
// takes libonnx over ten milliseconds that loading OpenBLAS, the plugins and reading the model
// file need not wait for. `plugin_thread`: the command loads the plugins on a thread of its own
// too (start_accelerator), so the registration needs a third core; without it, a second.
// Call it before anything else; load_model waits for the registration if it is still running
// (and does it itself where no thread was started).
std::future<void> start_onnx_schemas(bool plugin_thread);
// Throws qforge::Error (unsupported) naming the inputs when the model has more than one:
// `what` (--calibration, --data) feeds exactly one.
void require_single_input(const LoadedModel& m, const std::string& what);

// `data` ([k, ...] as read) in the shape the model's input wants for k rows: the same tensor
// when it fits, reshaped when only the per-sample element count agrees (IDX images
// [k, 1, 28, 28] into an MLP's [k, 784]). Throws qforge::Error naming both shapes otherwise.
model::Tensor fit_batch(const LoadedModel& m, model::Tensor data);
// The same for any input: `dims` as declared (-1 unknown, empty when the model declares none).
model::Tensor fit_shape(const std::string& input, const std::vector<std::int64_t>& dims,
                        model::Tensor data);

// Executors (and quantized models) per shape of the data input: the last batch of a data set
// is usually shorter, and an executor is built for one input shape.
class ModelCache {
 public:
  ModelCache(const LoadedModel& m, const model::Recipe* recipe,
             const model::CalibrationResult* calibration, Accelerator* accelerator);
  // `input` is the shape of a batch as fit_batch() gives it.
  const model::Executor& float_model(const Shape& input);
  const model::QuantizedModel& quantized(const Shape& input);
  // For a cache made before its accelerator was ready (calibration needs none).
  void set_accelerator(Accelerator* accelerator) { accelerator_ = accelerator; }

 private:
  const LoadedModel& m_;
  const model::Recipe* recipe_;
  const model::CalibrationResult* calibration_;
  Accelerator* accelerator_;
  std::map<Shape, std::unique_ptr<model::Executor>> float_;
  std::map<Shape, std::unique_ptr<model::QuantizedModel>> quantized_;
};

// The accelerator for quantized layers: options from the environment, plugins restricted by
// --plugins when given.
std::unique_ptr<Accelerator> make_accelerator(const ModelOptions& o);
// Loads OpenBLAS now, on this thread (its loader sets OPENBLAS_CORETYPE with setenv: see
// start_accelerator); a command that runs float layers calls it while the schemas register.
void load_openblas();
// make_accelerator on another thread, started now: loading the plugins (dlopen of large
// libraries, a Vulkan instance, a CUDA context) takes a tenth of a second or more, which the
// import and the float calibration need not wait for. get() waits; its errors come out of get().
std::future<std::unique_ptr<Accelerator>> start_accelerator(const ModelOptions& o);

struct Calibrated {
  model::Recipe recipe;
  model::CalibrationResult calibration;
  std::int64_t batch = 0;     // rows per calibration batch
  Shape batch_shape;          // the model input's shape for one calibration batch
  std::int64_t batches = 0;   // how many were used
  std::int64_t left_out = 0;  // samples of a last partial batch (see calibrate_model)
  std::string data_description;
};

// Loads the recipe and calibrates on o.calibration in batches of o.batch_size (or the model's
// fixed batch). Every batch has the same extent, so one executor serves them; a last partial
// batch is left out (padding would feed the observers values that are not in the data) and
// Calibrated::left_out says how many samples that was. A data set smaller than one batch is
// one batch of all of it.
// `stages` (optional) gets the recipe and first batch, the float executor and the batches.
// `cache` (optional) builds the float executor, so that a caller who runs the model on batches
// of the same shape afterwards reuses it (its resolved graph and its arena, already touched).
Calibrated calibrate_model(const LoadedModel& m, const ModelOptions& o,
                           StageTimes* stages = nullptr, ModelCache* cache = nullptr);

// "x" for a graph output or input name, made safe as a file name.
std::string file_name_for(const std::string& tensor);

}  // namespace qforge::cli
