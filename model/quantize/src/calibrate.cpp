#include "qforge/model/calibrate.h"

#include <algorithm>
#include <memory>

#include "conv_spec.h"
#include "matmul_spec.h"
#include "qforge/calibration/histogram_observer.h"
#include "qforge/calibration/methods.h"
#include "qforge/calibration/minmax.h"
#include "qforge/error.h"

namespace qforge::model {
namespace {

struct Watched {
  std::string tensor;
  ActivationQuantization settings;
  std::vector<std::string> consumers;
  std::unique_ptr<calibration::Observer> observer;
};

// The observer of one watched tensor. Min-max needs only the extremes of the finite values: a
// MinMaxObserver finds the ones the histogram observer's min-max reads (both from the same
// extremes scan, folded with std::min / std::max) and the params come from the same
// params_for_ranges, without binning every value into a histogram that min-max never reads
// (the binning was most of the observers' time: docs/PERFORMANCE.md, branch cal2t). The bins
// are still checked, as the histogram observer checks them, so a recipe's error does not
// depend on its method.
std::unique_ptr<calibration::Observer> make_observer(const calibration::MethodOptions& method,
                                                     int bins) {
  if (method.method != calibration::Method::minmax)
    return std::make_unique<calibration::HistogramObserver>(method, bins);
  calibration::validate(method);
  if (bins < 1 || bins > calibration::Histogram::kMaxBins)
    throw Error(ErrorCode::invalid_argument, "HistogramObserver: bins = " + std::to_string(bins) +
                                                 "; expected 1 to " +
                                                 std::to_string(calibration::Histogram::kMaxBins));
  return std::make_unique<calibration::MinMaxObserver>();
}

// A MatMul or Gemm input whose Hessian GPTQ needs, summed when its first gptq consumer runs.
struct Hessian {
  std::string tensor;
  std::string first_consumer;
  HessianAccumulator sum;
};

// The settings that decide a tensor's params; two consumers must agree on them.
bool same_calibration(const ActivationQuantization& a, const ActivationQuantization& b) {
  return a.dtype == b.dtype && a.mapping == b.mapping && a.calibration == b.calibration;
}

// Batches as pointers, so that a span of batches is not copied one by one.
using BatchPointers = std::function<const TensorMap*()>;
CalibrationResult calibrate_batches(const Executor& float_model, const RecipeResolution& resolution,
                                    const BatchPointers& next, const CalibrateOptions& options);

}  // namespace

std::vector<NodeRef> node_refs(const Graph& graph) {
  std::vector<NodeRef> refs;
  refs.reserve(graph.nodes.size());
  for (const Node& n : graph.nodes) refs.push_back({n.name, n.op_type});
  return refs;
}

const GptqFactor& CalibrationResult::gptq_at(std::string_view tensor) const {
  auto it = gptq.find(tensor);
  if (it == gptq.end() || !it->second)
    throw Error(ErrorCode::invalid_argument,
                "calibration: no GPTQ Hessian for tensor '" + std::string(tensor) +
                    "'; a recipe that rounds weights with gptq needs calibrate() with that recipe "
                    "(calibration read from JSON carries none)");
  return *it->second;
}

const TensorCalibration& CalibrationResult::at(std::string_view tensor) const {
  auto it = tensors.find(tensor);
  if (it == tensors.end())
    throw Error(ErrorCode::invalid_argument,
                "calibration: no params for tensor '" + std::string(tensor) +
                    "'; calibrate with the same recipe resolution as the quantized model");
  return it->second;
}

CalibrationResult calibrate(const Executor& float_model, const RecipeResolution& resolution,
                            const BatchSource& next, const CalibrateOptions& options) {
  std::optional<TensorMap> current;
  return calibrate_batches(
      float_model, resolution,
      [&]() -> const TensorMap* {
        current = next();
        return current ? &*current : nullptr;
      },
      options);
}

CalibrationResult calibrate(const Executor& float_model, const RecipeResolution& resolution,
                            std::span<const TensorMap> batches, const CalibrateOptions& options) {
  std::size_t i = 0;
  return calibrate_batches(
      float_model, resolution,
      [&]() -> const TensorMap* { return i == batches.size() ? nullptr : &batches[i++]; }, options);
}

namespace {

CalibrationResult calibrate_batches(const Executor& float_model, const RecipeResolution& resolution,
                                    const BatchPointers& next, const CalibrateOptions& options) {
  const Graph& graph = float_model.graph();
  if (resolution.nodes.size() != graph.nodes.size())
    throw Error(ErrorCode::invalid_argument,
                "calibrate: the recipe resolution has " + std::to_string(resolution.nodes.size()) +
                    " nodes, the executor's graph " + std::to_string(graph.nodes.size()) +
                    "; resolve the recipe against node_refs(executor.graph())");

  std::vector<std::unique_ptr<Watched>> watched;
  std::vector<Watched*> watch_at(graph.nodes.size(), nullptr);  // the first consumer observes
  for (std::size_t i = 0; i < graph.nodes.size(); ++i) {
    const Node& node = graph.nodes[i];
    const auto& q = resolution.nodes[i].quantize;
    if (!q || !q->activations || !q->weights ||
        q->activations->mode != ActivationMode::static_range ||
        !(quantize::is_quantizable_matmul(node.op_type) ||
          quantize::is_quantizable_conv(node.op_type)) ||
        !node.has_input(0))
      continue;
    // QuantizedModel refuses A of another type with the reason; nothing to observe here.
    const ValueInfo* a = graph.find_value_info(node.input(0));
    if (!a || a->type != ElementType::float32) continue;
    const std::string& tensor = node.input(0);
    Watched* w = nullptr;
    for (auto& existing : watched)
      if (existing->tensor == tensor) w = existing.get();
    if (w && !same_calibration(w->settings, *q->activations))
      throw Error(ErrorCode::invalid_argument,
                  "calibrate: tensor '" + tensor + "' is read by '" + w->consumers.front() +
                      "' and '" + node.name +
                      "' with different activation dtypes, mappings or methods; give both "
                      "nodes one rule or the same activation settings");
    if (!w) {
      watched.push_back(std::make_unique<Watched>(Watched{
          tensor, *q->activations, {}, make_observer(q->activations->calibration, options.bins)}));
      w = watched.back().get();
      watch_at[i] = w;
    }
    w->consumers.push_back(node.name);
  }

  // GPTQ's Hessians: input A of each MatMul and Gemm whose weights are gptq-rounded.
  std::vector<std::unique_ptr<Hessian>> hessians;
  std::vector<Hessian*> hessian_at(graph.nodes.size(), nullptr);  // the first consumer sums
  for (std::size_t i = 0; i < graph.nodes.size(); ++i) {
    const Node& node = graph.nodes[i];
    const auto& q = resolution.nodes[i].quantize;
    if (!q || !q->weights || q->weights->rounding != WeightRounding::gptq ||
        !quantize::is_quantizable_matmul(node.op_type))
      continue;  // QuantizedModel says why a gptq Conv or another op cannot run
    std::optional<quantize::MatmulSpec> mm;
    try {
      mm = quantize::matmul_spec(graph, node);
    } catch (const Error& e) {
      if (e.code() != ErrorCode::unsupported) throw;
      continue;  // QuantizedModel refuses it (or leaves it float) with the reason
    }
    const ValueInfo* a = graph.find_value_info(mm->input);
    if (!a || a->type != ElementType::float32) continue;
    const bool seen = std::any_of(hessians.begin(), hessians.end(),
                                  [&](const auto& h) { return h->tensor == mm->input; });
    if (seen) continue;
    hessians.push_back(
        std::make_unique<Hessian>(Hessian{mm->input, node.name, HessianAccumulator(mm->k)}));
    hessian_at[i] = hessians.back().get();
  }

  CalibrationResult result;
  if (watched.empty() && hessians.empty()) return result;
  const NodeHook hook = [&](std::size_t node, std::span<const Tensor* const> in,
                            std::span<Tensor* const>) {
    if (Watched* w = watch_at[node]) w->observer->observe(in[0]->values<float>(), in[0]->shape());
    if (Hessian* h = hessian_at[node]) h->sum.add(in[0]->values<float>());
    return false;
  };
  std::size_t batches = 0;
  while (const TensorMap* batch = next()) {
    float_model.run(*batch, {}, hook);
    ++batches;
  }
  if (batches == 0) throw Error(ErrorCode::invalid_argument, "calibrate: no calibration batch");

  for (const auto& w : watched) {
    const calibration::Target target{w->settings.dtype, w->settings.mapping,
                                     calibration::Convention::qforge};
    if (!w->observer->has_data())
      throw Error(ErrorCode::invalid_argument, "calibrate: tensor '" + w->tensor +
                                                   "' saw no finite value in " +
                                                   std::to_string(batches) + " batches");
    result.tensors.emplace(w->tensor,
                           TensorCalibration{w->tensor, w->consumers, w->settings,
                                             w->observer->params(target), w->observer->stats()});
  }
  for (auto& h : hessians) {
    try {
      result.gptq.emplace(h->tensor,
                          std::make_shared<const GptqFactor>(gptq_factor(h->sum, options.gptq)));
    } catch (const Error& e) {
      throw Error(e.code(), "calibrate: tensor '" + h->tensor + "' (input of '" +
                                h->first_consumer + "', weights rounded with gptq): " + e.what());
    }
    h.reset();  // its K x K sum is no longer needed
  }
  return result;
}

}  // namespace

}  // namespace qforge::model
