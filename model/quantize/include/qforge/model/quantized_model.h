// Quantized execution of a graph's Conv, MatMul and Gemm layers (docs/MODEL.md, "Quantized
// execution").
//
// A QuantizedModel is built once from the float executor, the recipe and its resolution, and
// the calibration result. For every Conv, MatMul or Gemm node the recipe quantizes:
//   - the weight (an initializer) is quantized once as the rule says (dtype, mapping,
//     per tensor / per output channel / block-wise along K; rounded to nearest or, for MatMul
//     and Gemm, by GPTQ with the calibration's Hessian of the layer's input, gptq.h), Gemm's alpha
//     folded into B and beta * C into a float bias first; Conv's weight (OIHW, Conv +
//     BatchNormalization already folded by the executor) per tensor or per output channel O, int8
//     or uint8;
//   - static and explicit activations: the layer is two accelerator plans prepared once,
//     quantize (the input with its calibrated or written params) and matmul_dequant or
//     conv_dequant with the weight and the float bias fixed in the plan (packed by the winning
//     plugin, never passed again);
//   - dynamic activations: dynamic_quantize_linear (uint8, ONNX's DynamicQuantizeLinear) per
//     batch, then the accelerator's per-call matmul_dequant or conv_dequant. A plan fixes the
//     activation params in its descriptor, and dynamic params change every batch, so a plan per
//     batch would repack the weight each time; the per-call path keeps the same weight params
//     object, whose identity() lets a backend keep its packing.
// A Relu (or a Clip with constant bounds) that is the only reader of a quantized Conv's output
// is fused into the convolution (its relu or clamp activation) and skipped: the executor runs
// such a Relu in place, on the conv's output tensor (a Clip's output gets a copy). A static Conv
// whose output reaches exactly one other static layer, directly or through MaxPool / Flatten /
// Reshape / Squeeze / Unsqueeze, keeps it int8: it runs qlinear_conv with that layer's input
// params, the nodes between run on the codes, and that layer skips its quantize
// (QuantizedLayerInfo::int8_output; the same values as dequantizing, running those nodes in float
// and quantizing again). Every other node runs in float through the executor's kernels (its node
// hook).
//
//   - weight-only rules (no activations) on MatMul and Gemm: one matmul_weight_only plan (float
//     A, int4/uint4/int8/uint8 B per tensor, per column or in blocks along K, float Y: ONNX
//     Runtime's MatMulNBits), B and bias fixed in it.
// Refused (qforge::Error naming the node and what is supported): quantizing any op other than
// Conv, MatMul and Gemm, a weight that is not an initializer, activation-only rules, weight-only
// Conv, gptq weight rounding of Conv, gptq rounding without the calibration's Hessian of the
// layer's input (invalid_argument, whatever rule decided the node), weight-only weights other than
// 4- and 8-bit, Gemm with transA = 1 or a C that is not a per-column initializer, dynamic
// activations other than uint8 affine, per-channel weights on another axis than the output channel;
// for Conv also anything but 2-D (X of rank 4), weights other than int8/uint8 per tensor or per
// channel, activations other than int8/uint8. A node decided by an optional rule or by the recipe's
// default is not refused: it stays float and skipped() says why, since such rules are broad by
// design.
//
// Each plan is made by the accelerator's choice for its bucket, unless that choice runs on
// another thread pool than the plans around it and was measured faster than the best candidate
// on their pool (or the calling thread) by less than a hand-over: then by that candidate
// (docs/MODEL.md, "Thread pools"; QFORGE_MODEL_HAND_OVER sets the hand-over in seconds, 0 keeps
// every choice of the accelerator). QuantizedLayerInfo::backend and kernel name what runs.
//
// run() is not safe to call concurrently (the accelerator is used from one thread at a time).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "qforge/accelerator.h"
#include "qforge/model/calibrate.h"
#include "qforge/model/executor.h"
#include "qforge/model/quantize_export.h"
#include "qforge/model/recipe.h"
#include "qforge/op_desc.h"
#include "qforge/params.h"

namespace qforge::model {

// What one quantized layer holds, for reports and for checking against the reference.
struct QuantizedLayerInfo {
  std::size_t node = 0;  // index into graph().nodes
  std::string name;
  std::string op_type;
  std::string input;  // the activation tensor (MatMul/Gemm's A, Conv's X)
  // The float output Y; for a Conv whose output only a Relu or Clip reads, that node's output
  // (it is fused into the convolution's clamp, conv->activation = relu or clamp); likewise for
  // a MatMul or Gemm on the int8 path (matmul->activation).
  std::string output;
  ActivationMode mode = ActivationMode::static_range;  // not meaningful when weight_only
  // Weight-only (the rule quantizes no activations): the layer is one matmul_weight_only plan
  // on the float input, B and bias fixed in it.
  bool weight_only = false;
  std::string settings;  // describe() of the rule's LayerQuantization
  // Output channels N and reduction length K (Conv: O and C / groups * KH * KW).
  std::int64_t n = 0, k = 0;
  // The quantized weight as matmul_dequant / conv_dequant reads it: codes in `b_layout` (Conv:
  // OIHW, which is nk), params of B (per channel: along N), and the float bias (empty when the
  // layer has none). `weight_shape` is the codes' shape as the graph stores the weight.
  MatrixLayout b_layout = MatrixLayout::kn;
  Shape weight_shape;
  QuantizationParams b_params = QuantizationParams::per_tensor_symmetric(DType::int8, 1.0f);
  std::vector<std::byte> b_codes;
  std::vector<float> bias;
  // A dynamic MatMul's bias taken from the Add that alone read its output (graph().nodes index;
  // -1 when none): matmul_dequant adds it in its epilogue, `output` is the Add's output and the
  // Add node computes nothing (the graph, and so the QDQ export, keeps MatMul and Add).
  std::ptrdiff_t bias_add = -1;
  // Static and explicit: A's params. Dynamic: nullopt (computed per batch).
  std::optional<QuantizationParams> a_params;
  // Conv layers: the convolution as conv_dequant, NCHW (dynamic: x_params is a placeholder,
  // each batch brings its own; on the int8 path it runs as qlinear_conv with y_params =
  // int8_output and bias_i32, NHWC when nhwc). Empty for MatMul and Gemm.
  std::optional<ConvDesc> conv;
  // MatMul and Gemm layers with static or explicit activations: the matmul as it runs,
  // matmul_dequant, or on the int8 path qlinear_matmul (y = int8_output, has_bias with
  // bias_i32, a fused Relu or Clip in activation). Empty for Conv, dynamic and weight-only layers.
  std::optional<MatmulDesc> matmul;
  // The int8 path between static layers. int8_output: the output leaves as codes at these
  // params, the input params of the one quantized layer that reads it (through MaxPool,
  // Flatten, Reshape, Squeeze or Unsqueeze, which then run on the codes; for a MatMul or Gemm,
  // through a Relu or Clip it fuses): the layer runs qlinear_conv or qlinear_matmul (bias as
  // int32 at sx * sw[o], a fused Relu as the clamp of the codes) instead of conv_dequant or
  // matmul_dequant followed by that layer's quantize. int8_input: the input arrives as such
  // codes, so the layer has no quantize of its own.
  bool int8_input = false;
  std::optional<QuantizationParams> int8_output;
  // With int8_output and a bias: the bias as qlinear_conv or qlinear_matmul adds it, int32 at
  // scale sx * sw[o] (rounded half to even; export_c rounds the same way). Empty otherwise.
  std::vector<std::int32_t> bias_i32;
  // The int8 path in NHWC: a chain of such convs from one with a single input channel (whose
  // NCHW codes are NHWC codes) to a MatMul or Gemm behind a Flatten runs its convs in NHWC
  // (no transposes), its MaxPools on NHWC codes, and the MatMul or Gemm with B's K axis in
  // (h, w, c) order. Set on those convs and on that MatMul or Gemm.
  bool nhwc = false;
  std::size_t float_weight_bytes = 0;      // B as float32
  std::size_t quantized_weight_bytes = 0;  // B's codes plus 4 bytes per scale and zero point
  // The plugin and kernel of the matmul_dequant / conv_dequant plan (dynamic: the accelerator's
  // decision for the layer's shape).
  std::string backend;
  std::string kernel;
};

struct SkippedNode {
  std::size_t node = 0;
  std::string name;
  std::string reason;
};

// Seconds each quantized layer took in one run, indexed like layers().
using LayerTimes = std::vector<double>;

class QFORGE_QUANTIZE_API QuantizedModel {
 public:
  // `resolution` must come from node_refs(float_model.graph()); `calibration` must hold every
  // statically quantized input (calibrate() with the same resolution). The accelerator must
  // outlive the model (its plans belong to its plugins).
  QuantizedModel(const Executor& float_model, const Recipe& recipe,
                 const RecipeResolution& resolution, const CalibrationResult& calibration,
                 Accelerator& accelerator);
  // The same with an accelerator of its own, options from the environment.
  QuantizedModel(const Executor& float_model, const Recipe& recipe,
                 const RecipeResolution& resolution, const CalibrationResult& calibration);
  // For export only (qdq_graph, export_qdq_onnx): layers() and graph() exactly as the
  // constructors above make them (codes, params, biases, the int8 path and its NHWC chains all
  // follow from the recipe and the calibration alone), but no plan is made and no plugin is
  // asked, so QuantizedLayerInfo::backend and kernel stay empty and run() throws
  // qforge::Error (invalid_argument). A plan decides only which kernel runs a layer, never what
  // the export writes; `qforge quantize --no-report` saves loading the plugins and tuning so.
  struct WithoutPlans {};
  static constexpr WithoutPlans without_plans{};
  QuantizedModel(const Executor& float_model, const Recipe& recipe,
                 const RecipeResolution& resolution, const CalibrationResult& calibration,
                 WithoutPlans);
  ~QuantizedModel();
  QuantizedModel(const QuantizedModel&) = delete;
  QuantizedModel& operator=(const QuantizedModel&) = delete;

  const Graph& graph() const noexcept;
  std::span<const QuantizedLayerInfo> layers() const noexcept;
  std::span<const SkippedNode> skipped() const noexcept { return skipped_; }

  // Runs the graph as the float executor does (same checks, same outputs), with the quantized
  // layers in place of their nodes. `keep` names intermediates to return as well; `times`, when
  // given, receives the seconds each layer took.
  TensorMap run(const TensorMap& inputs) const { return run(inputs, {}); }
  TensorMap run(const TensorMap& inputs, const std::vector<std::string>& keep,
                LayerTimes* times = nullptr) const;

 private:
  struct Layer;
  struct NhwcPool;
  // Makes the layers, and their plans when `with_plans` (accelerator_ is then set).
  void build(const Recipe& recipe, const RecipeResolution& resolution,
             const CalibrationResult& calibration, bool with_plans);
  // Finds the static Conv layers whose output only reaches another static layer through nodes
  // that pass codes on, and sets them up for the int8 path (QuantizedLayerInfo::int8_output).
  void link_int8_layers();
  // Puts chains of the int8 path into NHWC where nothing needs a transpose
  // (QuantizedLayerInfo::nhwc).
  void plan_nhwc();
  // Finds the scalar Sub/Div/Add/Mul (and reshapes) between a graph input and a static layer's
  // quantize, which the layer then computes in one pass before quantizing (a model's input
  // normalization).
  void plan_input_preludes();
  // Dynamic matmuls reading one tensor quantize it once per run (Layer::codes_owner).
  void share_dynamic_codes();
  // Gives every layer's codes a buffer of code_buffers_, shared by layers whose codes are never
  // live at once (Layer::a_codes).
  void share_code_buffers();
  struct PlanSlot;
  // The plans a layer needs (static, explicit, weight-only, dynamic matmul) as slots to fill,
  // or, for the other dynamic layers, its accelerator decision.
  void collect_plans(Layer& layer, std::vector<PlanSlot>& slots);
  // Decides which candidate runs each plan, keeping neighbouring plans on one thread pool
  // (docs/MODEL.md, "Thread pools"), and makes the plans.
  void make_plans(std::vector<PlanSlot>& slots);

  std::unique_ptr<Accelerator> owned_;
  Accelerator* accelerator_;  // null when built without_plans
  std::unique_ptr<Executor> executor_;
  std::vector<std::unique_ptr<Layer>> layers_;
  std::vector<QuantizedLayerInfo> info_;
  std::vector<SkippedNode> skipped_;
  std::vector<std::ptrdiff_t> layer_of_node_;  // -1 for float nodes
  std::vector<bool> fused_relu_;               // Relu and Clip nodes a layer's clamp computes
  std::vector<std::ptrdiff_t> folded_add_;     // by node: a bias Add's input holding the layer's
                                               // result (QuantizedLayerInfo::bias_add), else -1
  std::vector<std::ptrdiff_t> prelude_layer_;  // by node: the layer computing it, else -1
  // Tensors of the int8 path, by name: they hold codes at these params.
  std::map<std::string, QuantizationParams, std::less<>> int8_tensors_;
  // Those of them held NHWC, with their NCHW shape (a Flatten's output: its input's).
  std::map<std::string, Shape, std::less<>> nhwc_tensors_;
  std::vector<std::unique_ptr<NhwcPool>> nhwc_pools_;  // by node: MaxPools on NHWC codes
  // The activation codes of all layers (share_code_buffers): written by the run (one at a time).
  std::vector<std::vector<std::byte>> code_buffers_;
};

}  // namespace qforge::model
