// Calibration of a graph's activations for a recipe (docs/MODEL.md, "Calibration").
//
// calibrate() runs the float executor over calibration batches and feeds one HistogramObserver
// per activation tensor the recipe quantizes statically: input A of every MatMul and Gemm node
// and input X of every Conv node whose decision has static activations. For every MatMul and
// Gemm whose weights the recipe rounds with gptq (whatever its activations), it also sums the
// Hessian H = sum x x^T of input A (one K x K per tensor, shared by the nodes reading it) and,
// after the last batch, keeps GPTQ's factor of it (qforge/model/gptq.h). Each observer folds a
// batch into its histogram as it arrives, so memory is one histogram per tensor whatever the number
// of batches, and batches may come from a callback one at a time. The tensor is observed through
// the executor's node hook (executor.h) when its consumer runs: nothing is kept beyond the batch.
//
//   Executor float_model(graph);
//   const auto nodes = node_refs(float_model.graph());
//   RecipeResolution res = resolve(recipe, nodes);
//   CalibrationResult cal = calibrate(float_model, res, batches);
//   QuantizedModel q(float_model, recipe, res, cal, accelerator);
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "qforge/calibration/histogram.h"
#include "qforge/calibration/observer.h"
#include "qforge/model/executor.h"
#include "qforge/model/gptq.h"
#include "qforge/model/quantize_export.h"
#include "qforge/model/recipe.h"
#include "qforge/params.h"

namespace qforge::model {

// The graph's nodes as the recipe sees them (names and op types, in order), for resolve().
// The views point into `graph`, which must outlive them.
QFORGE_QUANTIZE_API std::vector<NodeRef> node_refs(const Graph& graph);

// What calibration chose for one activation tensor.
struct TensorCalibration {
  std::string tensor;
  std::vector<std::string> consumers;  // the quantized nodes that read it, in graph order
  ActivationQuantization settings;     // dtype, mapping and method (shared by every consumer)
  QuantizationParams params;           // per tensor, in qforge's convention
  calibration::ObserverStats stats;
};

struct CalibrationResult {
  std::map<std::string, TensorCalibration, std::less<>> tensors;
  // GPTQ's factor of the Hessian of each input tensor of a MatMul or Gemm the recipe rounds with
  // gptq (K x K doubles each; shared, so copies of the result are cheap). Not part of to_json:
  // a result read back from JSON has none, and a gptq recipe then needs calibrate() again.
  std::map<std::string, std::shared_ptr<const GptqFactor>, std::less<>> gptq;

  // The calibration of `tensor`; throws qforge::Error (invalid_argument) naming it when absent.
  QFORGE_QUANTIZE_API const TensorCalibration& at(std::string_view tensor) const;
  // GPTQ's factor for `tensor`; throws invalid_argument naming it when absent.
  QFORGE_QUANTIZE_API const GptqFactor& gptq_at(std::string_view tensor) const;
  // {"tensors": {"x": {"dtype": "int8", "mapping": "affine", "scale": ..., "zero_point": ...,
  //  "method": "entropy", "consumers": [...], "batches": ..., "values": ...}}}
  QFORGE_QUANTIZE_API std::string to_json() const;
  // Parses to_json()'s form; params and settings come back equal, stats as written.
  QFORGE_QUANTIZE_API static CalibrationResult from_json(std::string_view text);
};

struct CalibrateOptions {
  int bins = calibration::Histogram::kDefaultBins;  // histogram bins per observer
  GptqOptions gptq{};                               // dampening of gptq-rounded layers' H
};

// The next calibration batch (the graph's inputs), or nullopt when there are no more.
using BatchSource = std::function<std::optional<TensorMap>()>;

// Runs every batch through `float_model` and calibrates each statically quantized activation.
// `resolution` must come from node_refs(float_model.graph()). Throws qforge::Error when there is
// no batch, when two consumers of one tensor ask for different dtypes, mappings or methods
// (naming both nodes), when a tensor saw no finite value, or when a gptq layer's input held a
// non-finite value. Memory: one histogram per static tensor and, for gptq, one K x K per input
// tensor, whatever the number of batches.
QFORGE_QUANTIZE_API CalibrationResult calibrate(const Executor& float_model,
                                                const RecipeResolution& resolution,
                                                const BatchSource& next,
                                                const CalibrateOptions& options = {});
QFORGE_QUANTIZE_API CalibrationResult calibrate(const Executor& float_model,
                                                const RecipeResolution& resolution,
                                                std::span<const TensorMap> batches,
                                                const CalibrateOptions& options = {});

}  // namespace qforge::model
