// The per-layer accuracy and cost report of a QuantizedModel (docs/MODEL.md, "The report").
//
// For each quantized layer: the SQNR of its output against the float model's output of the same
// node on the same data, both models run end to end (so a layer's figure includes the error of
// the quantized layers before it, which is what the model's user sees); its weight bytes in
// float and quantized; the plugin and kernel that ran it; and the median of its time over the
// timed runs. The graph's outputs get an SQNR line too.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "qforge/model/executor.h"
#include "qforge/model/quantize_export.h"
#include "qforge/model/quantized_model.h"

namespace qforge::model {

struct LayerReport {
  std::string node;
  std::string op_type;
  std::string mode;  // "static", "dynamic", "explicit", or "none" (weight-only)
  std::string settings;
  // 10 log10(sum y^2 / sum (y - yq)^2) over every element of every batch; +inf when equal.
  double sqnr_db = 0;
  std::size_t float_weight_bytes = 0;
  std::size_t quantized_weight_bytes = 0;
  std::string backend;
  std::string kernel;
  // What the layer reads and writes: "float" or the dtype of the int8 path's codes
  // (QuantizedLayerInfo::int8_input / int8_output), as "float->int8", and " nhwc" after it
  // for a layer of an NHWC chain (QuantizedLayerInfo::nhwc).
  std::string path;
  double median_seconds = 0;  // per run of the layer, over report options' timed runs
};

struct OutputReport {
  std::string tensor;
  double sqnr_db = 0;
};

struct ModelReport {
  std::vector<LayerReport> layers;
  std::vector<OutputReport> outputs;
  std::vector<SkippedNode> skipped;
  std::size_t batches = 0;
  int timed_runs = 0;
};

struct ReportOptions {
  int timed_runs = 5;  // runs of each batch whose layer times are kept (after the compared run)
};

// Runs the float model and the quantized model on every batch and compares them. Throws
// qforge::Error when `data` is empty or timed_runs < 1.
QFORGE_QUANTIZE_API ModelReport layer_report(const Executor& float_model,
                                             const QuantizedModel& quantized,
                                             std::span<const TensorMap> data,
                                             const ReportOptions& options = {});

// A fixed-width table, one row per layer, then the outputs and the skipped nodes.
QFORGE_QUANTIZE_API std::string format_report(const ModelReport& report);
// {"batches", "timed_runs", "layers": [{"node", ..., "sqnr_db" (null for +inf)}], "outputs",
//  "skipped"}
QFORGE_QUANTIZE_API std::string report_to_json(const ModelReport& report);
// An SVG bar chart of the SQNR of each layer and each output, in graph order (an exact match
// fills the axis and reads "exact"; a negative SQNR draws no bar). Names are XML-escaped.
QFORGE_QUANTIZE_API std::string report_to_svg(const ModelReport& report);

}  // namespace qforge::model
