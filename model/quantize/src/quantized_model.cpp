#include "qforge/model/quantized_model.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>

#include "accelerator_pools.h"
#include "conv_spec.h"
#include "matmul_spec.h"
#include "nhwc_pool.h"
#include "qforge/dtype.h"
#include "qforge/error.h"
#include "qforge/op_table.h"
#include "qforge/reference.h"
#include "thread_pool_choice.h"
#include "weights.h"

namespace qforge::model {

// One quantized layer: the plans (static and explicit) or the descriptor for the per-call path
// (dynamic), and scratch for the activation codes.
struct QuantizedModel::Layer {
  explicit Layer(OpDesc d) : op(std::move(d)) {}
  std::size_t info = 0;  // index into info_
  ActivationMode mode = ActivationMode::static_range;
  bool weight_only = false;  // float activations: layer_plan alone (matmul_weight_only)
  Shape input_shape;         // of the activation as quantize / dynamic_quantize_linear see it
  OpDesc op;                 // matmul_dequant or conv_dequant; dynamic: the activation params are
                             // replaced on each run
  std::shared_ptr<const Plan> quantize_plan;
  std::shared_ptr<const Plan> dynamic_plan;  // dynamic matmul: dynamic_quantize_linear
  // Dynamic matmul: a quantize plan of A's shape, made at construction only so that the
  // accelerator decides the quantize bucket there (tuning cache, tuning) rather than in the
  // first batch. Never run: a batch whose producer gave A's range dispatches Accelerator::
  // quantize with that batch's params.
  std::shared_ptr<const Plan> range_quantize_plan;
  std::shared_ptr<const Plan> layer_plan;
  std::size_t layer_inputs = 0;
  // The activation codes: a_codes_bytes at a_codes, a buffer of QuantizedModel::code_buffers_
  // that layers whose codes are never live at once share (share_code_buffers), so that a run
  // writes its codes into one cache-sized buffer rather than a separate one per layer.
  std::byte* a_codes = nullptr;
  std::size_t a_codes_bytes = 0;
  // Dynamic matmuls whose A is one tensor (a transformer's Q, K and V projections) quantize it
  // once per run: the codes and params live in layers_[codes_owner] (the group's first layer;
  // its own index when it shares with none), whichever of them runs first computes them.
  std::size_t codes_owner = 0;
  mutable float a_scale = 0;
  mutable std::int32_t a_zero_point = 0;
  std::string node_output;  // the node's own output (the fused Relu's input)
  // The int8 path (QuantizedLayerInfo::int8_input): codes arrive from the layer before, no
  // quantize plan.
  bool int8_input = false;
  // int8_output: the layer reading the codes (index into layers_) and the nodes between.
  std::ptrdiff_t consumer = -1;
  std::vector<std::size_t> path_nodes;
  // B as the plan reads it when that is not info.b_codes: a MatMul or Gemm whose A is
  // flattened from NHWC codes reads B's K axis in (h, w, c) order.
  std::vector<std::byte> run_codes;
  // The input prelude (plan_input_preludes): the float input is `source` (a graph input) with
  // each step applied in order; `nodes` compute it in the graph, `tensors` are their outputs.
  struct Step {
    char op = '-';  // '+', '-', '*', '/': x = x op value
    float value = 0;
  };
  std::string prelude_source;
  std::vector<Step> prelude_steps;
  std::vector<std::size_t> prelude_nodes;
  std::vector<std::string> prelude_tensors;
  mutable std::vector<float> prelude_values;
  // Static int8 / uint8 per-tensor A params: the run normalizes and quantizes each block in
  // one pass across the executor's threads (quantize_values) instead of the quantize plan.
  bool prelude_quantizes = false;
};

struct QuantizedModel::NhwcPool {
  quantize::PoolWindow window;
  std::int64_t n = 0, c = 0, h = 0, w = 0, oh = 0, ow = 0;
  bool is_signed = true;
};

namespace {

// A's params for static and explicit activations.
QuantizationParams activation_params(const ActivationQuantization& a, const std::string& input,
                                     const CalibrationResult& calibration) {
  if (a.mode == ActivationMode::explicit_params) {
    if (a.mapping == Mapping::symmetric)
      return QuantizationParams::per_tensor_symmetric(a.dtype, *a.scale);
    return QuantizationParams::per_tensor_affine(a.dtype, *a.scale, a.zero_point.value_or(0));
  }
  const TensorCalibration& c = calibration.at(input);
  if (c.params.dtype() != a.dtype || c.params.scheme().mapping != a.mapping)
    throw Error(ErrorCode::invalid_argument,
                "the calibration of '" + input + "' is " + c.params.to_string() +
                    ", the rule asks for " + std::string(qforge::name(a.dtype)) + " " +
                    std::string(to_string(a.mapping)) + "; calibrate with the same recipe");
  return c.params;
}

// Why a quantized decision cannot run, or empty when it can (before the node's structure is
// read by matmul_spec / conv_spec, which throw their own reasons).
std::string unsupported_reason(const Node& node, const LayerQuantization& q) {
  const bool conv = quantize::is_quantizable_conv(node.op_type);
  if (!conv && !quantize::is_quantizable_matmul(node.op_type))
    return "quantized " + node.op_type + " is not supported; Conv, MatMul and Gemm are";
  if (!q.weights)
    return "activation-only quantization of " + node.op_type +
           " is not supported; Conv, MatMul and Gemm need weights and activations quantized";
  if (conv && q.weights->rounding != WeightRounding::nearest)
    return "weight rounding " + std::string(to_string(q.weights->rounding)) +
           " is for MatMul and Gemm (calibration sums the Hessian of their input only); Conv "
           "weights round to nearest";
  if (!q.activations) {
    // Weight-only: float activations, core's matmul_weight_only (ONNX Runtime's MatMulNBits).
    if (conv)
      return "weight-only quantization of Conv is not supported: core's weight-only op is a "
             "matmul (MatMul and Gemm); quantize the activations too";
    const DType t = q.weights->dtype;
    if (t != DType::int4 && t != DType::uint4 && t != DType::int8 && t != DType::uint8)
      return "weight-only MatMul and Gemm take int4, uint4, int8 or uint8 weights "
             "(matmul_weight_only); the rule asks for " +
             std::string(qforge::name(t));
    return {};
  }
  if (q.activations->mode == ActivationMode::dynamic &&
      (q.activations->dtype != DType::uint8 || q.activations->mapping != Mapping::affine))
    return "dynamic activations run through dynamic_quantize_linear, which is uint8 affine; the "
           "rule asks for " +
           std::string(qforge::name(q.activations->dtype)) + " " +
           std::string(to_string(q.activations->mapping));
  if (conv) {
    const WeightQuantization& w = *q.weights;
    if (w.dtype != DType::int8 && w.dtype != DType::uint8)
      return "quantized Conv takes int8 or uint8 weights (core's convolution); the rule asks for " +
             std::string(qforge::name(w.dtype));
    if (w.granularity == Granularity::block)
      return "quantized Conv takes weights per tensor or per output channel; block-wise weights "
             "are for MatMul and Gemm";
    if (w.granularity == Granularity::per_channel && w.axis && *w.axis != 0 && *w.axis != -4)
      return "per-channel Conv weights along axis " + std::to_string(*w.axis) +
             " are not supported; core's convolution takes channels along the output axis O, "
             "axis 0 of OIHW (leave the axis unset)";
    const DType a = q.activations->dtype;
    if (a != DType::int8 && a != DType::uint8)
      return "quantized Conv takes int8 or uint8 activations (core's convolution); the rule "
             "asks for " +
             std::string(qforge::name(a));
  }
  return {};
}

// The Relu or Clip (constant bounds, min <= max) that is the only reader of `tensor` (not a
// graph output), as the conv clamp that computes it; nullopt when there is none.
struct FusedActivation {
  std::size_t node = 0;
  ConvActivation kind = ConvActivation::relu;
  float lo = 0, hi = 0;  // clamp
};
std::optional<FusedActivation> fusable_activation(const Graph& graph, const std::string& tensor) {
  const std::vector<std::size_t> readers = graph.consumers_of(tensor);
  if (readers.size() != 1 || graph.is_graph_output(tensor)) return std::nullopt;
  const Node& node = graph.nodes[readers[0]];
  if (node.outputs.empty() || node.outputs[0].empty() || node.input(0) != tensor)
    return std::nullopt;
  if (node.op_type == "Relu") return FusedActivation{readers[0]};
  if (node.op_type != "Clip") return std::nullopt;
  float lo = -std::numeric_limits<float>::infinity();
  float hi = std::numeric_limits<float>::infinity();
  if (node.since_version < 11) {
    lo = node.attr_float_or("min", lo);
    hi = node.attr_float_or("max", hi);
  } else {
    for (std::size_t i = 1; i < 3; ++i) {
      if (!node.has_input(i)) continue;
      const Tensor* b = graph.initializer(node.input(i));
      if (!b || b->type() != ElementType::float32 || b->size() != 1) return std::nullopt;
      (i == 1 ? lo : hi) = b->values<float>()[0];
    }
  }
  if (!(lo <= hi)) return std::nullopt;  // ONNX's Clip then gives hi everywhere
  return FusedActivation{readers[0], ConvActivation::clamp, lo, hi};
}

// The Add that alone reads a MatMul's output `tensor` (no graph output), its other input a
// float32 initializer broadcasting as [n] over the last axis ([n] or [1, .., 1, n], of no higher
// rank than `tensor`, so the Add's output has `tensor`'s shape): the bias matmul_dequant adds in
// its epilogue, in the same float32 addition per element. nullopt for anything else.
struct BiasAdd {
  std::size_t node = 0;
  std::size_t x_input = 0;  // which of the Add's inputs is `tensor`
  std::vector<float> bias;
};
std::optional<BiasAdd> foldable_bias_add(const Graph& graph, const std::string& tensor,
                                         std::int64_t n) {
  const std::vector<std::size_t> readers = graph.consumers_of(tensor);
  if (readers.size() != 1 || graph.is_graph_output(tensor)) return std::nullopt;
  const Node& add = graph.nodes[readers[0]];
  if (add.op_type != "Add" || add.inputs.size() != 2 || add.outputs.size() != 1 ||
      add.outputs[0].empty() || add.input(0) == add.input(1))
    return std::nullopt;
  const std::size_t x_input = add.input(0) == tensor ? 0 : 1;
  const Tensor* b = graph.initializer(add.input(1 - x_input));
  const ValueInfo* x = graph.find_value_info(tensor);
  const ValueInfo* y = graph.find_value_info(add.outputs[0]);
  if (!b || b->type() != ElementType::float32 || !x || !y || !x->fully_known() ||
      !y->fully_known() || y->type != ElementType::float32 || x->shape() != y->shape())
    return std::nullopt;
  const Shape& bs = b->shape();
  if (bs.empty() || bs.size() > x->shape().size()) return std::nullopt;
  for (std::size_t d = 0; d + 1 < bs.size(); ++d)
    if (bs[d] != 1) return std::nullopt;
  if (bs.back() != n) return std::nullopt;
  const auto v = b->values<float>();
  return BiasAdd{readers[0], x_input, std::vector<float>(v.begin(), v.end())};
}

// Nodes that pass a quantized layer's codes on unchanged in meaning: MaxPool (2-D, no Indices;
// max commutes with quantize at one scale and zero point) and the ops that only reshape.
bool passes_codes(const Graph& graph, const Node& node) {
  if (node.outputs.empty() || node.outputs[0].empty()) return false;
  for (std::size_t i = 1; i < node.outputs.size(); ++i)
    if (!node.outputs[i].empty()) return false;
  if (node.op_type == "Flatten" || node.op_type == "Reshape" || node.op_type == "Squeeze" ||
      node.op_type == "Unsqueeze")
    return true;
  if (node.op_type != "MaxPool") return false;
  const ValueInfo* x = graph.find_value_info(node.input(0));
  return x && x->fully_known() && x->shape().size() == 4;
}

// x op c, elementwise, as the float executor's Sub, Div, Add and Mul compute it (float32, x
// first): `out` may be `in`. Cloned for AVX2 (the dynamic linker picks the clone once): the
// Fashion-MNIST models' normalization divides every input value, and 8-wide divisions take
// about half the time of the baseline's 4-wide ones; IEEE operations either way, so the values
// are the same.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx2", "default")))
#endif
void apply_step(char op, float c, const float* in, float* out, std::size_t n) {
  switch (op) {
    case '+':
      for (std::size_t i = 0; i < n; ++i) out[i] = in[i] + c;
      break;
    case '-':
      for (std::size_t i = 0; i < n; ++i) out[i] = in[i] - c;
      break;
    case '*':
      for (std::size_t i = 0; i < n; ++i) out[i] = in[i] * c;
      break;
    default:
      for (std::size_t i = 0; i < n; ++i) out[i] = in[i] / c;
      break;
  }
}

// reference::quantize_value of per-tensor int8 or uint8 params over n values, in a form the
// compiler vectorizes (cloned for AVX2 as apply_step): the same float32 division and rounding
// to nearest even, then the clamp to [qmin - z, qmax - z] in float (exact: those are small
// integers) where the reference clamps after adding z in double; NaN gives z.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx2", "default")))
#endif
void quantize_values(const float* in, std::size_t n, float scale, std::int32_t zero_point,
                     std::int32_t qmin, std::int32_t qmax, bool is_signed, void* out) {
  const float lo = static_cast<float>(qmin - zero_point);
  const float hi = static_cast<float>(qmax - zero_point);
  auto code = [&](float x) {
    const float v = x / scale;
    float r = std::nearbyint(v);
    r = r < lo ? lo : r;
    r = r > hi ? hi : r;
    r = v == v ? r : 0.0f;
    return static_cast<std::int32_t>(r) + zero_point;
  };
  if (is_signed) {
    auto* q = static_cast<std::int8_t*>(out);
    for (std::size_t i = 0; i < n; ++i) q[i] = static_cast<std::int8_t>(code(in[i]));
  } else {
    auto* q = static_cast<std::uint8_t*>(out);
    for (std::size_t i = 0; i < n; ++i) q[i] = static_cast<std::uint8_t>(code(in[i]));
  }
}

// Values per task of the fused prelude: two float32 divisions each (the normalization's and the
// quantize's), about four times an elementwise add, so a quarter of ops::kElementGrain. A batch
// of 256 Fashion-MNIST images (200 704 values) splits into one task per thread and more.
constexpr std::int64_t kPreludeGrain = 16384;

// The one-element float32 initializer that is input 1 of a Sub, Div, Add or Mul, as a step.
std::optional<char> scalar_step_op(const Graph& graph, const Node& node, float& value) {
  static const std::map<std::string, char, std::less<>> kOps = {
      {"Add", '+'}, {"Sub", '-'}, {"Mul", '*'}, {"Div", '/'}};
  const auto op = kOps.find(node.op_type);
  if (op == kOps.end() || node.inputs.size() != 2 || node.outputs.size() != 1) return std::nullopt;
  const Tensor* c = graph.initializer(node.input(1));
  if (!c || c->type() != ElementType::float32 || c->size() != 1) return std::nullopt;
  value = c->values<float>()[0];
  return op->second;
}

// The int32 bias of qlinear_conv, at scale sx * sw[o] (export_c rounds the same way), or empty
// when some output channel's accumulator could leave int32 for some input: the layer then
// keeps its float output.
std::vector<std::int32_t> int32_bias(const ConvDesc& d, std::span<const float> bias,
                                     std::span<const std::byte> w_codes) {
  const QuantizationParams& x = d.x_params;
  const std::int64_t max_x =
      std::max<std::int64_t>(x.qmax() - x.zero_point(), x.zero_point() - x.qmin());
  const std::int64_t per_o = d.reduction();
  const bool w_signed = d.w_params.dtype() == DType::int8;
  std::vector<std::int32_t> out(static_cast<std::size_t>(d.out_channels), 0);
  for (std::int64_t o = 0; o < d.out_channels; ++o) {
    const auto oi = static_cast<std::size_t>(o);
    const std::size_t wp = d.w_params.count() == 1 ? 0 : oi;
    const double b = bias.empty() ? 0.0
                                  : std::nearbyint(static_cast<double>(bias[oi]) /
                                                   (static_cast<double>(x.scale()) *
                                                    static_cast<double>(d.w_params.scale(wp))));
    std::int64_t bound = static_cast<std::int64_t>(std::min(std::abs(b), 1e18));
    const std::int32_t zw = d.w_params.zero_point(wp);
    for (std::int64_t j = 0; j < per_o; ++j) {
      const auto code = static_cast<std::uint8_t>(w_codes[oi * per_o + j]);
      const std::int32_t w = w_signed ? static_cast<std::int8_t>(code) : code;
      bound += max_x * std::abs(static_cast<std::int64_t>(w - zw));
    }
    if (bound > std::numeric_limits<std::int32_t>::max()) return {};
    out[oi] = static_cast<std::int32_t>(b);
  }
  return out;
}

// The int32 bias of qlinear_matmul, at scale sa * sb[n] (rounded as int32_bias above), or empty
// when some column's C + bias could leave int32 for some A: the layer then keeps its float
// output. `b_codes` are B's codes in d.b_layout.
std::vector<std::int32_t> int32_matmul_bias(const MatmulDesc& d, std::span<const float> bias,
                                            std::span<const std::byte> b_codes) {
  const QuantizationParams& a = d.a;
  const std::int64_t max_a =
      std::max<std::int64_t>(a.qmax() - a.zero_point(), a.zero_point() - a.qmin());
  const bool b_signed = d.b.dtype() == DType::int8;
  const bool kn = d.b_layout == MatrixLayout::kn;
  std::vector<std::int32_t> out(static_cast<std::size_t>(d.n), 0);
  for (std::int64_t n = 0; n < d.n; ++n) {
    const auto ni = static_cast<std::size_t>(n);
    const std::size_t bp = d.b.count() == 1 ? 0 : ni;
    const double b =
        bias.empty()
            ? 0.0
            : std::nearbyint(static_cast<double>(bias[ni]) /
                             (static_cast<double>(a.scale()) * static_cast<double>(d.b.scale(bp))));
    std::int64_t bound = static_cast<std::int64_t>(std::min(std::abs(b), 1e18));
    const std::int32_t zb = d.b.zero_point(bp);
    for (std::int64_t k = 0; k < d.k; ++k) {
      const auto code = static_cast<std::uint8_t>(
          b_codes[static_cast<std::size_t>(kn ? k * d.n + n : n * d.k + k)]);
      const std::int32_t w = b_signed ? static_cast<std::int8_t>(code) : code;
      bound += max_a * std::abs(static_cast<std::int64_t>(w - zb));
    }
    if (bound > std::numeric_limits<std::int32_t>::max()) return {};
    out[ni] = static_cast<std::int32_t>(b);
  }
  return out;
}

std::string decided_by(const Recipe& recipe, const NodeDecision& d) {
  return d.by_default() ? std::string("the recipe's default") : rule_name(recipe, d.rule);
}

}  // namespace

QuantizedModel::QuantizedModel(const Executor& float_model, const Recipe& recipe,
                               const RecipeResolution& resolution,
                               const CalibrationResult& calibration, Accelerator& accelerator)
    : accelerator_(&accelerator), executor_(std::make_unique<Executor>(float_model)) {
  build(recipe, resolution, calibration, /*with_plans=*/true);
}

QuantizedModel::QuantizedModel(const Executor& float_model, const Recipe& recipe,
                               const RecipeResolution& resolution,
                               const CalibrationResult& calibration)
    : owned_(std::make_unique<Accelerator>(AcceleratorOptions::from_environment())),
      accelerator_(owned_.get()),
      executor_(std::make_unique<Executor>(float_model)) {
  build(recipe, resolution, calibration, /*with_plans=*/true);
}

QuantizedModel::QuantizedModel(const Executor& float_model, const Recipe& recipe,
                               const RecipeResolution& resolution,
                               const CalibrationResult& calibration, WithoutPlans)
    : accelerator_(nullptr), executor_(std::make_unique<Executor>(float_model)) {
  build(recipe, resolution, calibration, /*with_plans=*/false);
}

QuantizedModel::~QuantizedModel() {
  // Plans belong to the accelerator's plugins: release them before an owned accelerator.
  layers_.clear();
}

const Graph& QuantizedModel::graph() const noexcept { return executor_->graph(); }

std::span<const QuantizedLayerInfo> QuantizedModel::layers() const noexcept { return info_; }

void QuantizedModel::build(const Recipe& recipe, const RecipeResolution& resolution,
                           const CalibrationResult& calibration, bool with_plans) {
  const Graph& graph = executor_->graph();
  if (resolution.nodes.size() != graph.nodes.size())
    throw Error(ErrorCode::invalid_argument,
                "QuantizedModel: the recipe resolution has " +
                    std::to_string(resolution.nodes.size()) + " nodes, the graph " +
                    std::to_string(graph.nodes.size()) +
                    "; resolve the recipe against node_refs(executor.graph())");
  layer_of_node_.assign(graph.nodes.size(), -1);
  fused_relu_.assign(graph.nodes.size(), false);
  folded_add_.assign(graph.nodes.size(), -1);
  for (std::size_t i = 0; i < graph.nodes.size(); ++i) {
    const Node& node = graph.nodes[i];
    const NodeDecision& d = resolution.nodes[i];
    if (!d.quantize) continue;
    // Broad rules (optional ones, the default) leave what they cannot quantize in float.
    const bool lenient = d.by_default() || recipe.rules.at(d.rule).optional;
    const bool conv = quantize::is_quantizable_conv(node.op_type);
    std::optional<quantize::MatmulSpec> mm;
    std::optional<quantize::ConvSpec> cv;
    std::optional<quantize::QuantizedWeight> w;
    std::string reason = unsupported_reason(node, *d.quantize);
    if (reason.empty()) {
      try {
        if (conv) {
          cv = quantize::conv_spec(graph, node);
          // OIHW is [O, C/G * KH * KW] row-major: the nk layout with N = O.
          WeightQuantization rule = *d.quantize->weights;
          rule.axis.reset();  // checked above against the 4-D weight
          w = quantize::quantize_weight(node, rule, cv->weight, cv->desc.reduction(),
                                        cv->desc.out_channels, MatrixLayout::nk);
        } else {
          mm = quantize::matmul_spec(graph, node);
          const GptqFactor* gptq = nullptr;
          if (d.quantize->weights->rounding == WeightRounding::gptq) {
            try {
              gptq = &calibration.gptq_at(mm->input);
            } catch (const Error& e) {
              throw Error(e.code(), "QuantizedModel: " + node.describe() + ": " + e.what());
            }
          }
          w = quantize::quantize_weight(node, *d.quantize->weights, mm->weight, mm->k, mm->n,
                                        mm->layout, gptq);
        }
      } catch (const Error& e) {
        if (e.code() != ErrorCode::unsupported) throw;
        reason = e.what();
      }
    } else {
      reason = node.describe() + ": " + reason;
    }
    if (!w) {
      if (lenient) {
        skipped_.push_back(
            {i, node.name, reason + " (decided by " + decided_by(recipe, d) + "; left in float)"});
        continue;
      }
      throw Error(ErrorCode::unsupported,
                  "QuantizedModel: " + reason + " (decided by " + decided_by(recipe, d) +
                      "; skip the node or mark the rule optional to keep it float)");
    }

    const LayerQuantization& q = *d.quantize;
    const bool weight_only = !q.activations;
    // Weight-only layers have no activation quantization; `act` is then only a placeholder.
    const ActivationQuantization act = weight_only ? ActivationQuantization{} : *q.activations;

    QuantizedLayerInfo info;
    info.node = i;
    info.name = node.name;
    info.op_type = node.op_type;
    info.input = conv ? cv->input : mm->input;
    info.output = conv ? cv->output : mm->output;
    info.mode = act.mode;
    info.weight_only = weight_only;
    info.settings = describe(d.quantize);
    info.n = conv ? cv->desc.out_channels : mm->n;
    info.k = conv ? cv->desc.reduction() : mm->k;
    info.b_layout = w->layout;
    info.b_params = w->params;
    info.weight_shape = conv                            ? cv->desc.w_shape()
                        : w->layout == MatrixLayout::kn ? Shape{info.k, info.n}
                                                        : Shape{info.n, info.k};
    info.quantized_weight_bytes = quantize::quantized_bytes(*w);
    info.b_codes = std::move(w->codes);
    info.bias = conv ? std::move(cv->bias) : std::move(mm->bias);
    info.float_weight_bytes = static_cast<std::size_t>(info.n * info.k) * sizeof(float);

    const DType a_dtype = act.mode == ActivationMode::dynamic ? DType::uint8 : act.dtype;
    // Dynamic: representative params decide the bucket; every call carries the batch's own.
    // Weight-only: matmul_weight_only does not read A's params.
    std::optional<QuantizationParams> a_params;
    try {
      a_params = act.mode == ActivationMode::dynamic || weight_only
                     ? QuantizationParams::per_tensor_affine(DType::uint8, 1.0f / 64, 128)
                     : activation_params(act, info.input, calibration);
    } catch (const Error& e) {
      throw Error(e.code(), "QuantizedModel: " + node.describe() + ": " + e.what());
    }
    std::unique_ptr<Layer> layer;
    if (conv) {
      ConvDesc desc = cv->desc;
      desc.x_params = *a_params;
      desc.w_params = info.b_params;
      desc.bias = info.bias.empty() ? ConvBias::none : ConvBias::f32;
      // A Relu or Clip that alone reads the output is fused into the conv's clamp: the executor
      // runs a Relu in place (executor.h), so run() skips it (a Clip's output gets a copy), and
      // the layer's output is the Relu's or Clip's.
      if (const auto act = fusable_activation(graph, info.output)) {
        desc.activation = act->kind;
        desc.clamp_min = act->lo;
        desc.clamp_max = act->hi;
        fused_relu_[act->node] = true;
        info.output = graph.nodes[act->node].outputs[0];
      }
      info.conv = desc;
      layer = std::make_unique<Layer>(OpDesc{OpKind::conv_dequant, desc});
      layer->input_shape = desc.x_shape();
      layer->node_output = cv->output;
    } else {
      layer = std::make_unique<Layer>(
          OpDesc{weight_only ? OpKind::matmul_weight_only : OpKind::matmul_dequant,
                 MatmulDesc{.m = mm->m,
                            .n = mm->n,
                            .k = mm->k,
                            .a = std::move(*a_params),
                            .b = info.b_params,
                            .b_layout = info.b_layout,
                            .has_bias = !info.bias.empty(),
                            .out_type = FloatType::f32,
                            .y = std::nullopt,
                            .requant_mode = RequantMode::float_multiplier}});
      layer->input_shape = Shape{mm->m, mm->k};
      layer->node_output = mm->output;
      // A dynamic MatMul's float output: the bias Add after it goes into the epilogue, the Add
      // runs in place on the layer's output and computes nothing. Not in a fused chain (that
      // adds the bias in its own pass already), nor for static layers, whose output may join
      // the int8 path.
      if (node.op_type == "MatMul" && !weight_only && act.mode == ActivationMode::dynamic &&
          info.bias.empty()) {
        if (auto add = foldable_bias_add(graph, mm->output, mm->n);
            add && !executor_->in_fused_chain(add->node)) {
          executor_->run_in_place(add->node, add->x_input);
          info.bias = std::move(add->bias);
          info.bias_add = static_cast<std::ptrdiff_t>(add->node);
          info.output = graph.nodes[add->node].outputs[0];
          folded_add_[add->node] = static_cast<std::ptrdiff_t>(add->x_input);
          std::get<MatmulDesc>(layer->op.desc).has_bias = true;
        }
      }
      if (!weight_only && act.mode != ActivationMode::dynamic)
        info.matmul = std::get<MatmulDesc>(layer->op.desc);
    }
    layer->info = info_.size();
    layer->mode = act.mode;
    layer->weight_only = weight_only;
    std::int64_t elements = 1;
    for (std::int64_t e : layer->input_shape) elements *= e;
    if (!weight_only)
      layer->a_codes_bytes = storage_bytes(a_dtype, static_cast<std::size_t>(elements));
    if (!weight_only && act.mode != ActivationMode::dynamic)
      info.a_params = conv ? std::get<ConvDesc>(layer->op.desc).x_params
                           : std::get<MatmulDesc>(layer->op.desc).a;
    layer_of_node_[i] = static_cast<std::ptrdiff_t>(layers_.size());
    layers_.push_back(std::move(layer));
    info_.push_back(std::move(info));
  }
  link_int8_layers();
  plan_nhwc();
  plan_input_preludes();
  share_dynamic_codes();
  share_code_buffers();
  if (!with_plans) return;
  std::vector<PlanSlot> slots;
  for (const std::unique_ptr<Layer>& layer : layers_) collect_plans(*layer, slots);
  make_plans(slots);
}

void QuantizedModel::share_dynamic_codes() {
  // Same tensor, same codes: dynamic_quantize_linear depends on the values alone, and a tensor
  // is written once per run (before any of its readers run).
  std::map<std::string, std::size_t> owner_of_input;
  for (std::size_t li = 0; li < layers_.size(); ++li) {
    Layer& layer = *layers_[li];
    layer.codes_owner = li;
    if (layer.mode != ActivationMode::dynamic || layer.op.op != OpKind::matmul_dequant) continue;
    const auto [it, first] = owner_of_input.emplace(info_[layer.info].input, li);
    if (first || layers_[it->second]->input_shape != layer.input_shape) continue;
    layer.codes_owner = it->second;
    layer.a_codes_bytes = 0;  // the owner's buffer serves it
  }
}

void QuantizedModel::share_code_buffers() {
  // The hook runs one node at a time in node order (Executor::run). A layer's codes are
  // written and read within its own node's call, except a dynamic group's (share_dynamic_codes):
  // written by its first member, read until its last. So codes are live over the node interval
  // of their owner's group, and owners whose intervals are disjoint share a buffer (interval
  // colouring, first fit by start).
  std::vector<std::size_t> node_of_layer(layers_.size(), 0);
  for (std::size_t node = 0; node < layer_of_node_.size(); ++node)
    if (const std::ptrdiff_t l = layer_of_node_[node]; l >= 0)
      node_of_layer[static_cast<std::size_t>(l)] = node;
  struct Live {
    std::size_t first = 0, last = 0, owner = 0;
  };
  std::vector<Live> live;
  std::vector<std::ptrdiff_t> live_of(layers_.size(), -1);
  for (std::size_t li = 0; li < layers_.size(); ++li) {
    if (layers_[li]->a_codes_bytes == 0) continue;
    live_of[li] = static_cast<std::ptrdiff_t>(live.size());
    live.push_back({node_of_layer[li], node_of_layer[li], li});
  }
  for (std::size_t li = 0; li < layers_.size(); ++li) {
    const std::ptrdiff_t o = live_of[layers_[li]->codes_owner];
    if (o < 0) continue;
    Live& l = live[static_cast<std::size_t>(o)];
    l.first = std::min(l.first, node_of_layer[li]);
    l.last = std::max(l.last, node_of_layer[li]);
  }
  std::sort(live.begin(), live.end(),
            [](const Live& a, const Live& b) { return a.first < b.first; });
  std::vector<std::size_t> buffer_of(live.size()), buffer_last, buffer_bytes;
  for (std::size_t i = 0; i < live.size(); ++i) {
    std::size_t b = 0;
    while (b < buffer_last.size() && buffer_last[b] >= live[i].first) ++b;
    if (b == buffer_last.size()) {
      buffer_last.push_back(0);
      buffer_bytes.push_back(0);
    }
    buffer_last[b] = live[i].last;
    buffer_bytes[b] = std::max(buffer_bytes[b], layers_[live[i].owner]->a_codes_bytes);
    buffer_of[i] = b;
  }
  code_buffers_.assign(buffer_bytes.size(), {});
  for (std::size_t b = 0; b < buffer_bytes.size(); ++b) code_buffers_[b].resize(buffer_bytes[b]);
  for (std::size_t i = 0; i < live.size(); ++i)
    layers_[live[i].owner]->a_codes = code_buffers_[buffer_of[i]].data();
}

void QuantizedModel::plan_nhwc() {
  const Graph& graph = executor_->graph();
  nhwc_pools_.resize(graph.nodes.size());
  for (const std::unique_ptr<Layer>& head : layers_) {
    // A chain starts at a conv fed by float (quantize writes NCHW codes, which are NHWC codes
    // when there is one channel) and hands codes from conv to conv through MaxPools, ending
    // in a MatMul or Gemm through MaxPools and one Flatten: its transposes all go.
    const QuantizedLayerInfo& hi = info_[head->info];
    if (head->int8_input || !hi.int8_output || !hi.conv || hi.conv->c != 1) continue;
    std::vector<Layer*> convs{head.get()};
    Layer* terminal = nullptr;
    bool ok = true;
    for (Layer* cur = head.get(); ok && !terminal;) {
      if (cur->consumer < 0) {
        ok = false;
        break;
      }
      Layer* next = layers_[static_cast<std::size_t>(cur->consumer)].get();
      const bool to_conv = info_[next->info].conv.has_value();
      for (std::size_t k = 0; k < cur->path_nodes.size() && ok; ++k) {
        const Node& node = graph.nodes[cur->path_nodes[k]];
        const bool last = k + 1 == cur->path_nodes.size();
        if (node.op_type == "MaxPool") ok = quantize::nhwc_pool_window(node).has_value();
        else ok = !to_conv && last && node.op_type == "Flatten" && node.attr_int_or("axis", 1) == 1;
      }
      if (!ok) break;
      if (to_conv) {
        if (!info_[next->info].int8_output) ok = false;
        convs.push_back(next);
        cur = next;
        continue;
      }
      const QuantizedLayerInfo& t = info_[next->info];
      const bool flattened =
          !cur->path_nodes.empty() && graph.nodes[cur->path_nodes.back()].op_type == "Flatten";
      ok = flattened && t.b_params.scheme().granularity != Granularity::block &&
           (t.b_params.dtype() == DType::int8 || t.b_params.dtype() == DType::uint8);
      terminal = next;
    }
    if (!ok || !terminal) continue;
    for (Layer* l : convs) {
      ConvDesc d = std::get<ConvDesc>(l->op.desc);
      d.layout = ConvLayout::nhwc;
      l->op.desc = d;
      info_[l->info].nhwc = true;
      for (std::size_t node : l->path_nodes) {
        const Node& pool = graph.nodes[node];
        if (pool.op_type != "MaxPool") continue;
        const Shape x = graph.find_value_info(pool.input(0))->shape();
        const Shape y = graph.find_value_info(pool.outputs[0])->shape();
        nhwc_pools_[node] = std::make_unique<NhwcPool>(
            NhwcPool{*quantize::nhwc_pool_window(pool), x[0], x[1], x[2], x[3], y[2], y[3],
                     info_[l->info].int8_output->dtype() == DType::int8});
      }
      // Kept tensors of the chain are NHWC codes: run() puts them back in NCHW order.
      const auto mark = [&](const std::string& t) {
        const ValueInfo* v = graph.find_value_info(t);
        if (v && v->shape().size() == 4) nhwc_tensors_.insert_or_assign(t, v->shape());
      };
      mark(l->node_output);
      mark(info_[l->info].output);
      for (std::size_t node : l->path_nodes) {
        const Node& n = graph.nodes[node];
        if (n.op_type == "Flatten")
          nhwc_tensors_.insert_or_assign(n.outputs[0], graph.find_value_info(n.input(0))->shape());
        else mark(n.outputs[0]);
      }
    }
    // The terminal's A is [N, C * H * W] in (h, w, c) order: B's K axis follows.
    QuantizedLayerInfo& t = info_[terminal->info];
    const Node& flatten = graph.nodes[convs.back()->path_nodes.back()];
    const Shape x = graph.find_value_info(flatten.input(0))->shape();
    const std::int64_t c = x[1], hw = x[2] * x[3];
    terminal->run_codes.resize(t.b_codes.size());
    for (std::int64_t ci = 0; ci < c; ++ci)
      for (std::int64_t p = 0; p < hw; ++p) {
        const std::int64_t from = ci * hw + p, to = p * c + ci;
        if (t.b_layout == MatrixLayout::nk) {
          for (std::int64_t n = 0; n < t.n; ++n)
            terminal->run_codes[static_cast<std::size_t>(n * t.k + to)] =
                t.b_codes[static_cast<std::size_t>(n * t.k + from)];
        } else {
          std::memcpy(terminal->run_codes.data() + to * t.n, t.b_codes.data() + from * t.n,
                      static_cast<std::size_t>(t.n));
        }
      }
    t.nhwc = true;
  }
}

void QuantizedModel::plan_input_preludes() {
  const Graph& graph = executor_->graph();
  prelude_layer_.assign(graph.nodes.size(), -1);
  for (std::size_t li = 0; li < layers_.size(); ++li) {
    Layer& layer = *layers_[li];
    if (layer.weight_only || layer.int8_input || layer.mode == ActivationMode::dynamic) continue;
    // Walk back from the layer's input through nodes read by nothing else, to a graph input.
    std::vector<Layer::Step> steps;
    std::vector<std::size_t> nodes;
    std::vector<std::string> tensors;
    std::string t = info_[layer.info].input;
    bool ok = true;
    for (;;) {
      const bool is_input = std::any_of(graph.inputs.begin(), graph.inputs.end(),
                                        [&](const ValueInfo& v) { return v.name == t; });
      if (is_input) break;
      const Node* producer = graph.producer_of(t);
      if (!producer || graph.consumers_of(t).size() != 1 || graph.is_graph_output(t)) {
        ok = false;
        break;
      }
      const std::size_t index = static_cast<std::size_t>(producer - graph.nodes.data());
      float value = 0;
      if (const auto op = scalar_step_op(graph, *producer, value)) {
        steps.push_back({*op, value});
      } else if (!(producer->op_type == "Flatten" || producer->op_type == "Reshape" ||
                   producer->op_type == "Squeeze" || producer->op_type == "Unsqueeze") ||
                 producer->outputs.size() != 1) {
        ok = false;
        break;
      }
      nodes.push_back(index);
      tensors.push_back(t);
      t = producer->input(0);
    }
    if (!ok || steps.empty()) continue;
    const ValueInfo* source = graph.find_value_info(t);
    if (!source || source->type != ElementType::float32 || !source->fully_known() ||
        element_count(source->shape()) != element_count(layer.input_shape))
      continue;
    std::reverse(steps.begin(), steps.end());
    layer.prelude_source = t;
    layer.prelude_steps = std::move(steps);
    layer.prelude_nodes = std::move(nodes);
    layer.prelude_tensors = std::move(tensors);
    layer.prelude_values.resize(static_cast<std::size_t>(element_count(layer.input_shape)));
    for (std::size_t node : layer.prelude_nodes)
      prelude_layer_[node] = static_cast<std::ptrdiff_t>(li);
  }
}

void QuantizedModel::link_int8_layers() {
  const Graph& graph = executor_->graph();
  std::map<std::string, ElementType, std::less<>> retyped;
  for (const std::unique_ptr<Layer>& producer : layers_) {
    QuantizedLayerInfo& info = info_[producer->info];
    const bool conv = producer->op.op == OpKind::conv_dequant;
    if ((!conv && producer->op.op != OpKind::matmul_dequant) ||
        producer->mode == ActivationMode::dynamic)
      continue;
    // A MatMul or Gemm fuses the Relu or Clip that alone reads its output here, on the int8
    // path only (a conv fused it when it was built).
    std::optional<FusedActivation> act;
    if (!conv) act = fusable_activation(graph, producer->node_output);
    if (act && act->kind == ConvActivation::clamp &&
        !(std::isfinite(act->lo) && std::isfinite(act->hi)))
      continue;  // a one-sided Clip: qlinear_matmul's clamp takes finite bounds
    const std::string output = act ? graph.nodes[act->node].outputs[0] : info.output;
    // Follow the output through nodes that pass codes on to the one quantized layer reading it.
    std::vector<std::string> path{producer->node_output};
    if (output != producer->node_output) path.push_back(output);
    Layer* consumer = nullptr;
    std::ptrdiff_t consumer_index = -1;
    std::vector<std::size_t> path_nodes;
    for (std::string t = output; !graph.is_graph_output(t);) {
      const std::vector<std::size_t> readers = graph.consumers_of(t);
      if (readers.size() != 1) break;
      const Node& reader = graph.nodes[readers[0]];
      if (const std::ptrdiff_t l = layer_of_node_[readers[0]]; l >= 0) {
        Layer& c = *layers_[static_cast<std::size_t>(l)];
        if (!c.weight_only && c.mode != ActivationMode::dynamic && info_[c.info].input == t) {
          consumer = &c;
          consumer_index = l;
        }
        break;
      }
      if (!passes_codes(graph, reader)) break;
      path_nodes.push_back(readers[0]);
      t = reader.outputs[0];
      path.push_back(t);
    }
    if (!consumer) continue;
    const QuantizationParams& y = *info_[consumer->info].a_params;
    if (y.count() != 1 || (y.dtype() != DType::int8 && y.dtype() != DType::uint8)) continue;
    if (conv) {
      ConvDesc desc = std::get<ConvDesc>(producer->op.desc);
      std::vector<std::int32_t> bias = int32_bias(desc, info.bias, info.b_codes);
      if (bias.empty()) continue;
      desc.y_params = y;
      desc.bias = info.bias.empty() ? ConvBias::none : ConvBias::int32;
      if (!info.bias.empty()) info.bias_i32 = std::move(bias);
      producer->op = OpDesc{OpKind::qlinear_conv, desc};
    } else {
      MatmulDesc desc = std::get<MatmulDesc>(producer->op.desc);
      // qlinear_matmul takes per-tensor or per-column int8/uint8 B (no blocks).
      if (desc.b.scheme().granularity == Granularity::block ||
          (desc.b.dtype() != DType::int8 && desc.b.dtype() != DType::uint8))
        continue;
      std::vector<std::int32_t> bias = int32_matmul_bias(desc, info.bias, info.b_codes);
      if (bias.empty()) continue;
      desc.y = y;
      desc.has_bias = !info.bias.empty();
      if (act) {
        desc.activation = act->kind;
        desc.clamp_min = act->lo;
        desc.clamp_max = act->hi;
        fused_relu_[act->node] = true;
        info.output = output;
      }
      if (!info.bias.empty()) info.bias_i32 = std::move(bias);
      producer->op = OpDesc{OpKind::qlinear_matmul, desc};
      info.matmul = desc;
    }
    producer->consumer = consumer_index;
    producer->path_nodes = std::move(path_nodes);
    info.int8_output = y;
    consumer->int8_input = true;
    info_[consumer->info].int8_input = true;
    const ElementType codes = y.dtype() == DType::int8 ? ElementType::int8 : ElementType::uint8;
    for (const std::string& t : path) {
      retyped[t] = codes;
      int8_tensors_.insert_or_assign(t, y);
    }
  }
  if (!retyped.empty()) executor_->retype_outputs(retyped);
}

// A plan the model runs: what it computes, its fixed weights, and where it goes.
struct QuantizedModel::PlanSlot {
  Workload workload;
  std::vector<const void*> weights;
  std::shared_ptr<const Plan>* target = nullptr;
  QuantizedLayerInfo* info = nullptr;  // the layer's own plan: its backend and kernel go here
  const Node* node = nullptr;          // for error messages
};

void QuantizedModel::collect_plans(Layer& layer, std::vector<PlanSlot>& slots) {
  QuantizedLayerInfo& info = info_[layer.info];
  const Node& node = executor_->graph().nodes[info.node];
  auto add = [&](OpDesc op, std::vector<const void*> weights, std::shared_ptr<const Plan>* target,
                 QuantizedLayerInfo* layer_info) {
    slots.push_back({{std::move(op)}, std::move(weights), target, layer_info, &node});
  };
  if (layer.mode == ActivationMode::dynamic && layer.op.op == OpKind::matmul_dequant) {
    // One plan for every batch: B and the bias fixed (packed once), the activation params
    // that dynamic_quantize_linear computes passed to each run (MatmulDesc::a_params_at_run).
    add(OpDesc{OpKind::dynamic_quantize_linear, DynamicQuantizeDesc{layer.input_shape}}, {},
        &layer.dynamic_plan, nullptr);
    add(OpDesc{OpKind::quantize,
               QuantizeDesc{layer.input_shape,
                            QuantizationParams::per_tensor_affine(DType::uint8, 1.0f, 0)}},
        {}, &layer.range_quantize_plan, nullptr);
    std::get<MatmulDesc>(layer.op.desc).a_params_at_run = true;
    std::vector<const void*> weights(op_operands(layer.op).inputs.size(), nullptr);
    weights[1] = info.b_codes.data();
    if (!info.bias.empty()) weights[2] = info.bias.data();
    layer.layer_inputs = weights.size();
    add(layer.op, std::move(weights), &layer.layer_plan, &info);
    return;
  }
  if (layer.mode == ActivationMode::dynamic && !layer.weight_only) {
    try {
      const Decision decision = accelerator_->decide({layer.op});
      info.backend = decision.id.plugin;
      info.kernel = decision.id.kernel;
    } catch (const Error& e) {
      throw Error(e.code(), "QuantizedModel: " + node.describe() + ": " + e.what());
    }
    return;
  }
  if (!layer.weight_only && !layer.int8_input) {
    add(OpDesc{OpKind::quantize, QuantizeDesc{layer.input_shape, *info.a_params}}, {},
        &layer.quantize_plan, nullptr);
    const QuantizationParams& a = *info.a_params;
    layer.prelude_quantizes = !layer.prelude_steps.empty() && a.count() == 1 &&
                              (a.dtype() == DType::int8 || a.dtype() == DType::uint8) &&
                              a.scheme().mapping != Mapping::logarithmic;
  }
  // One plan, the weight and the bias fixed (packed once by the winning plugin).
  std::vector<const void*> weights(op_operands(layer.op).inputs.size(), nullptr);
  weights[1] = layer.run_codes.empty() ? info.b_codes.data() : layer.run_codes.data();
  if (!info.bias_i32.empty()) weights[2] = info.bias_i32.data();
  else if (!info.bias.empty()) weights[2] = info.bias.data();
  layer.layer_inputs = weights.size();
  add(layer.op, std::move(weights), &layer.layer_plan, &info);
}

void QuantizedModel::make_plans(std::vector<PlanSlot>& slots) {
  const double hand_over = quantize::hand_over_from_environment();
  std::vector<quantize::PlanCandidates> candidates;
  candidates.reserve(slots.size());
  quantize::PoolLookup pools(*accelerator_);
  for (const PlanSlot& slot : slots) {
    try {
      candidates.push_back(quantize::plan_candidates(*accelerator_, slot.workload, pools));
    } catch (const Error& e) {
      throw Error(e.code(), "QuantizedModel: " + slot.node->describe() + ": " + e.what());
    }
  }
  const std::vector<CandidateId> chosen = quantize::choose_thread_pools(candidates, hand_over);
  for (std::size_t i = 0; i < slots.size(); ++i) {
    const PlanSlot& slot = slots[i];
    try {
      std::shared_ptr<const Plan> plan;
      if (!(chosen[i] == candidates[i].winner.id)) {
        // Another candidate of the same bucket, verified by the accelerator; should it refuse
        // this exact descriptor, the accelerator's own choice runs it.
        for (const LoadedPlugin& p : accelerator_->plugins()) {
          if (p.name != chosen[i].plugin || !p.ops) continue;
          try {
            plan = Decision{p.ops, chosen[i], DecisionSource::memory}.plan(slot.workload.op,
                                                                           slot.weights);
          } catch (const Error& e) {
            if (e.code() != ErrorCode::unsupported) throw;
          }
          break;
        }
      }
      if (!plan) plan = accelerator_->prepare(slot.workload, slot.weights);
      *slot.target = std::move(plan);
      if (slot.info) {
        slot.info->backend = (*slot.target)->backend();
        slot.info->kernel = (*slot.target)->kernel();
      }
    } catch (const Error& e) {
      throw Error(e.code(), "QuantizedModel: " + slot.node->describe() + ": " + e.what());
    }
  }
}

TensorMap QuantizedModel::run(const TensorMap& inputs, const std::vector<std::string>& keep,
                              LayerTimes* times) const {
  if (!accelerator_)
    throw Error(ErrorCode::invalid_argument,
                "QuantizedModel::run: this model was built without plans (for export only); "
                "build it with an accelerator to run it");
  if (times) times->assign(layers_.size(), 0.0);
  // The layers whose input prelude runs fused in this run: their source is given as float32 of
  // the expected size and no prelude tensor is kept (those nodes then compute nothing).
  std::vector<const float*> prelude_source(layers_.size(), nullptr);
  for (std::size_t li = 0; li < layers_.size(); ++li) {
    const Layer& layer = *layers_[li];
    if (layer.prelude_steps.empty()) continue;
    const auto source = inputs.find(layer.prelude_source);
    if (source == inputs.end() || source->second.type() != ElementType::float32 ||
        source->second.size() != layer.prelude_values.size())
      continue;
    const bool kept = std::any_of(keep.begin(), keep.end(), [&](const std::string& k) {
      return std::find(layer.prelude_tensors.begin(), layer.prelude_tensors.end(), k) !=
             layer.prelude_tensors.end();
    });
    if (!kept) prelude_source[li] = source->second.values<float>().data();
  }
  // Per layer: its a_codes hold this run's codes of its input (share_dynamic_codes).
  std::vector<char> codes_ready(layers_.size(), 0);
  const RangedNodeHook hook = [&](std::size_t node, std::span<const Tensor* const> in,
                                  std::span<const ValueRange> in_ranges,
                                  std::span<Tensor* const> out) {
    if (const std::ptrdiff_t p = prelude_layer_[node];
        p >= 0 && prelude_source[static_cast<std::size_t>(p)])
      return true;  // the layer computes it while quantizing
    if (const std::ptrdiff_t x = folded_add_[node]; x >= 0) {
      // The layer before it already added the bias, normally in place.
      const Tensor* from = in[static_cast<std::size_t>(x)];
      if (out[0] != from) std::memcpy(out[0]->data(), from->data(), from->byte_size());
      return true;
    }
    if (fused_relu_[node]) {
      // The layer before it already clamped; in place there is nothing left to do.
      if (out[0] != in[0]) std::memcpy(out[0]->data(), in[0]->data(), in[0]->byte_size());
      return true;
    }
    if (const NhwcPool* pool = nhwc_pools_[node].get()) {
      quantize::max_pool_nhwc(in[0]->data(), out[0]->data(), pool->is_signed, pool->n, pool->h,
                              pool->w, pool->c, pool->oh, pool->ow, pool->window);
      return true;
    }
    const std::ptrdiff_t index = layer_of_node_[node];
    if (index < 0) return false;
    const Layer& layer = *layers_[static_cast<std::size_t>(index)];
    const QuantizedLayerInfo& info = info_[layer.info];
    // Float, or the codes of the int8 path (the executor retyped those tensors).
    const void* x = in[0]->data();
    void* y = out[0]->data();
    const float* bias = info.bias.empty() ? nullptr : info.bias.data();
    const auto start = std::chrono::steady_clock::now();
    if (layer.weight_only) {
      std::array<const void*, kMaxOperands> args{};
      args[0] = x;
      void* const result = y;
      layer.layer_plan->run(std::span<const void* const>(args.data(), layer.layer_inputs),
                            std::span<void* const>(&result, 1));
    } else if (layer.layer_plan && layer.mode == ActivationMode::dynamic) {
      // matmul_dequant: A's params, as dynamic_quantize_linear computed them, follow the other
      // inputs of the layer's plan (B and the bias are fixed in it).
      const Layer& owner = *layers_[layer.codes_owner];
      if (!codes_ready[layer.codes_owner]) {
        const ValueRange& r = in_ranges[0];
        if (r.known && std::isfinite(r.lo) && std::isfinite(r.hi)) {
          // The producing step found the range (the one dynamic_quantize_linear's own pass
          // would find), so its params follow by the same expressions and one quantize pass
          // writes the same codes: no second read of A for its min and max.
          const QuantizationParams p =
              reference::params_from_range(DType::uint8, Mapping::affine, r.lo, r.hi);
          accelerator_->quantize(QuantizeDesc{layer.input_shape, p}, x, owner.a_codes);
          owner.a_scale = p.scale();
          owner.a_zero_point = p.zero_point();
        } else {
          std::uint8_t zero_point = 0;
          layer.dynamic_plan->run({x}, {owner.a_codes, &owner.a_scale, &zero_point});
          owner.a_zero_point = zero_point;
        }
        codes_ready[layer.codes_owner] = 1;
      }
      std::array<const void*, kMaxOperands> args{};
      args[0] = owner.a_codes;
      args[layer.layer_inputs - 2] = &owner.a_scale;
      args[layer.layer_inputs - 1] = &owner.a_zero_point;
      void* const result = y;
      layer.layer_plan->run(std::span<const void* const>(args.data(), layer.layer_inputs),
                            std::span<void* const>(&result, 1));
    } else if (layer.mode == ActivationMode::dynamic) {
      const QuantizationParams a = accelerator_->dynamic_quantize_linear(
          DynamicQuantizeDesc{layer.input_shape}, static_cast<const float*>(x),
          reinterpret_cast<std::uint8_t*>(layer.a_codes));
      if (layer.op.op == OpKind::conv_dequant) {
        ConvDesc desc = std::get<ConvDesc>(layer.op.desc);
        desc.x_params = a;
        accelerator_->conv(OpKind::conv_dequant, desc, layer.a_codes, info.b_codes.data(), bias,
                           static_cast<float*>(y));
      } else {
        MatmulDesc desc = std::get<MatmulDesc>(layer.op.desc);
        desc.a = a;
        accelerator_->matmul_dequant(desc, layer.a_codes, info.b_codes.data(), bias,
                                     static_cast<float*>(y));
      }
    } else {
      const float* source = prelude_source[static_cast<std::size_t>(index)];
      if (source && layer.prelude_quantizes) {
        // The input normalization and the quantize in one pass: each block's steps write to a
        // buffer in L1 that the quantize reads back, the blocks split across the executor's
        // threads (the float32 operations of the nodes and of reference::quantize, so the
        // codes are the same whoever computes which block).
        const QuantizationParams& a = *info.a_params;
        const float scale = a.scale(0);
        const std::int32_t zero_point = a.zero_point(0), qmin = a.qmin(), qmax = a.qmax();
        const bool is_signed = a.dtype() == DType::int8;
        std::byte* codes = layer.a_codes;
        Executor::parallel_for(static_cast<std::int64_t>(layer.prelude_values.size()),
                               kPreludeGrain, [&](std::int64_t begin, std::int64_t end) {
                                 constexpr std::size_t kBlock = 2048;
                                 alignas(64) std::array<float, kBlock> block;
                                 for (auto i = static_cast<std::size_t>(begin);
                                      i < static_cast<std::size_t>(end); i += kBlock) {
                                   const std::size_t n =
                                       std::min(kBlock, static_cast<std::size_t>(end) - i);
                                   const float* from = source + i;
                                   for (const Layer::Step& step : layer.prelude_steps) {
                                     apply_step(step.op, step.value, from, block.data(), n);
                                     from = block.data();
                                   }
                                   quantize_values(block.data(), n, scale, zero_point, qmin, qmax,
                                                   is_signed, codes + i);
                                 }
                               });
        x = nullptr;
      } else if (source) {
        // The input normalization, the same float32 operations as the nodes it replaces (so
        // the codes are the same), block by block so that every step after the first works
        // in L1 (one pass over memory instead of one per step), then the quantize.
        float* values = layer.prelude_values.data();
        const std::size_t total = layer.prelude_values.size();
        constexpr std::size_t kBlock = 2048;
        for (std::size_t i = 0; i < total; i += kBlock) {
          const std::size_t n = std::min(kBlock, total - i);
          const float* from = source + i;
          for (const Layer::Step& step : layer.prelude_steps) {
            apply_step(step.op, step.value, from, values + i, n);
            from = values + i;
          }
        }
        x = values;
      }
      if (!layer.int8_input && x) layer.quantize_plan->run({x}, {layer.a_codes});
      std::array<const void*, kMaxOperands> args{};
      args[0] = layer.int8_input ? x : layer.a_codes;
      void* const result = y;
      layer.layer_plan->run(std::span<const void* const>(args.data(), layer.layer_inputs),
                            std::span<void* const>(&result, 1));
    }
    if (times)
      (*times)[static_cast<std::size_t>(index)] =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return true;
  };
  TensorMap result = executor_->run_with_ranges(inputs, keep, hook);
  // Kept tensors of the int8 path come back as the float values they stand for.
  for (const std::string& k : keep) {
    const auto codes = int8_tensors_.find(k);
    if (codes == int8_tensors_.end()) continue;
    Tensor& t = result.at(k);
    if (t.type() == ElementType::float32) continue;  // named twice in `keep`
    Tensor values(ElementType::float32, t.shape());
    const QuantizationParams& p = codes->second;
    if (p.count() == 1 && (p.dtype() == DType::int8 || p.dtype() == DType::uint8) &&
        p.scheme().mapping != Mapping::logarithmic) {
      // The int8 path's per-tensor params: reference::dequantize's arithmetic, (code - z) * s,
      // in one loop instead of a call per value (the report keeps every layer's output).
      const float scale = p.scale(0);
      const std::int32_t zero = p.zero_point(0);
      float* out = values.values<float>().data();
      const std::size_t n = t.size();
      if (p.dtype() == DType::int8) {
        const auto* q = reinterpret_cast<const std::int8_t*>(t.data());
        for (std::size_t i = 0; i < n; ++i)
          out[i] = static_cast<float>(static_cast<std::int32_t>(q[i]) - zero) * scale;
      } else {
        const auto* q = reinterpret_cast<const std::uint8_t*>(t.data());
        for (std::size_t i = 0; i < n; ++i)
          out[i] = static_cast<float>(static_cast<std::int32_t>(q[i]) - zero) * scale;
      }
    } else {
      reference::dequantize(QuantizeDesc{Shape{static_cast<std::int64_t>(t.size())}, p}, t.data(),
                            values.values<float>().data());
    }
    if (const auto nhwc = nhwc_tensors_.find(k); nhwc != nhwc_tensors_.end()) {
      // [N, H, W, C] in memory: back to the graph's NCHW order.
      const Shape& d = nhwc->second;
      const std::int64_t c = d[1], hw = d[2] * d[3];
      const auto v = values.values<float>();
      std::vector<float> nchw(v.size());
      for (std::int64_t b = 0; b < d[0]; ++b)
        for (std::int64_t p = 0; p < hw; ++p)
          for (std::int64_t ci = 0; ci < c; ++ci)
            nchw[static_cast<std::size_t>((b * c + ci) * hw + p)] =
                v[static_cast<std::size_t>((b * hw + p) * c + ci)];
      std::copy(nchw.begin(), nchw.end(), v.begin());
    }
    t = std::move(values);
  }
  return result;
}

}  // namespace qforge::model
