#include "qforge/model/layer_report.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "qforge/error.h"

namespace qforge::model {
namespace {

// Signal and noise energy of one tensor, summed over batches.
struct Energy {
  double signal = 0;
  double noise = 0;
  void add(const Tensor& reference, const Tensor& test) {
    const auto r = reference.values<float>(), t = test.values<float>();
    for (std::size_t i = 0; i < r.size(); ++i) {
      const double d = static_cast<double>(r[i]) - static_cast<double>(t[i]);
      signal += static_cast<double>(r[i]) * r[i];
      noise += d * d;
    }
  }
  double sqnr_db() const {
    if (noise == 0) return std::numeric_limits<double>::infinity();
    return 10.0 * std::log10(signal / noise);
  }
};

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]);
}

std::string data_path(const QuantizedLayerInfo& l) {
  const std::string in =
      l.int8_input && l.a_params ? std::string(qforge::name(l.a_params->dtype())) : "float";
  const std::string out =
      l.int8_output ? std::string(qforge::name(l.int8_output->dtype())) : "float";
  return in + "->" + out + (l.nhwc ? " nhwc" : "");
}

}  // namespace

ModelReport layer_report(const Executor& float_model, const QuantizedModel& quantized,
                         std::span<const TensorMap> data, const ReportOptions& options) {
  if (data.empty()) throw Error(ErrorCode::invalid_argument, "layer_report: no data to compare on");
  if (options.timed_runs < 1)
    throw Error(ErrorCode::invalid_argument, "layer_report: timed_runs is " +
                                                 std::to_string(options.timed_runs) +
                                                 "; at least 1 is needed");
  const auto layers = quantized.layers();
  std::vector<std::string> keep;
  for (const QuantizedLayerInfo& l : layers)
    if (!quantized.graph().is_graph_output(l.output)) keep.push_back(l.output);

  std::vector<Energy> layer_energy(layers.size());
  std::vector<Energy> output_energy(quantized.graph().outputs.size());
  std::vector<std::vector<double>> samples(layers.size());
  LayerTimes times;
  for (const TensorMap& batch : data) {
    const TensorMap want = float_model.run(batch, keep);
    const TensorMap got = quantized.run(batch, keep);
    for (std::size_t i = 0; i < layers.size(); ++i)
      layer_energy[i].add(want.at(layers[i].output), got.at(layers[i].output));
    for (std::size_t i = 0; i < output_energy.size(); ++i) {
      const std::string& name = quantized.graph().outputs[i].name;
      if (want.at(name).type() == ElementType::float32)
        output_energy[i].add(want.at(name), got.at(name));
    }
    for (int r = 0; r < options.timed_runs; ++r) {
      quantized.run(batch, {}, &times);
      for (std::size_t i = 0; i < layers.size(); ++i) samples[i].push_back(times[i]);
    }
  }

  ModelReport report;
  report.batches = data.size();
  report.timed_runs = options.timed_runs;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const QuantizedLayerInfo& l = layers[i];
    report.layers.push_back(
        {l.name, l.op_type, (l.weight_only ? std::string("none") : std::string(to_string(l.mode))),
         l.settings, layer_energy[i].sqnr_db(), l.float_weight_bytes, l.quantized_weight_bytes,
         l.backend, l.kernel, data_path(l), median(samples[i])});
  }
  for (std::size_t i = 0; i < output_energy.size(); ++i)
    report.outputs.push_back({quantized.graph().outputs[i].name, output_energy[i].sqnr_db()});
  report.skipped.assign(quantized.skipped().begin(), quantized.skipped().end());
  return report;
}

}  // namespace qforge::model
