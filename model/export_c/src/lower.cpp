// lower_to_integer: the float graph -> an integer-only program (integer_program.h).
//
// Two passes. The first walks the graph resolved for a batch of one and decides the program's
// ops and which float tensor each int8 tensor stands for; the second calibrates those tensors
// over the batches and fills in every scale, the quantized weights and the multipliers.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include "qforge/calibration/histogram_observer.h"
#include "qforge/error.h"
#include "qforge/model/integer_program.h"
#include "qforge/reference_16x8.h"

namespace qforge::model {
namespace {

constexpr std::string_view kSupported =
    "Conv (2-D, groups, pads, strides, dilations), Gemm and MatMul with a constant weight, "
    "Add of two activations of one shape, Relu and Clip right after one of those (fused), MaxPool, "
    "AveragePool, GlobalAveragePool, "
    "Flatten, Reshape, Squeeze, Unsqueeze, Softmax over the last axis as the last op (int8), and "
    "leading Sub/Div/Mul/Add of the input by a scalar constant";

// TFLite's int8 softmax: input differences in Q5.26, exponentials summed in Q12.19 (so at most
// 4095 of them, each up to 1, fit int32).
constexpr int kSoftmaxDiffIntegerBits = 5;
constexpr std::int64_t kSoftmaxMaxDepth = 4095;

[[noreturn]] void refuse(const Node& node, const std::string& what) {
  throw Error(ErrorCode::unsupported, "export-c: " + node.describe() + ": " + what +
                                          "; integer-only export supports " +
                                          std::string(kSupported));
}

// What a tensor's activation clamp is, from the Relu or Clip fused after its producer.
struct Activation {
  ConvActivation kind = ConvActivation::none;
  float lo = 0.0f, hi = 0.0f;
};

// The float values of a scalar constant input, or nullopt.
std::optional<float> scalar_constant(const Graph& g, const std::string& name) {
  const Tensor* t = g.initializer(name);
  if (!t || t->type() != ElementType::float32 || t->size() != 1) return std::nullopt;
  return t->values<float>()[0];
}

const Tensor& float_initializer(const Graph& g, const Node& node, std::size_t i, const char* what) {
  const Tensor* t = node.has_input(i) ? g.initializer(node.input(i)) : nullptr;
  if (!t || t->type() != ElementType::float32)
    refuse(node, std::string(what) + " '" + node.input(i) + "' is not a float32 constant");
  return *t;
}

Shape shape_of(const Graph& g, const std::string& tensor) {
  const ValueInfo* v = g.find_value_info(tensor);
  if (!v) throw Error(ErrorCode::internal, "export-c: no shape for tensor '" + tensor + "'");
  return v->shape();
}

// A weight to quantize per output channel: rows [O, per_o] as float, and a float bias [O].
struct PendingWeights {
  std::vector<float> w;  // [O, per_o]
  std::vector<float> bias;
  std::int64_t out_channels = 0;
  Activation act;
};

class Lowering {
 public:
  Lowering(const Graph& g, DType activations) : g_(g) { p_.activations = activations; }

  void walk();
  // Feeds `first`, then every batch `next` gives, to one observer per calibrated tensor.
  void calibrate(const Graph& original, TensorMap first, const CalibrationSource& next,
                 const LowerOptions& options);
  void finish();
  IntegerProgram take() { return std::move(p_); }

 private:
  int add_tensor(const std::string& name) {
    p_.tensors.push_back({name, shape_of(g_, name), 1.0f, 0});
    return static_cast<int>(p_.tensors.size()) - 1;
  }
  int int_input(const Node& node) {
    auto it = int_of_.find(node.input(0));
    if (it == int_of_.end())
      refuse(node, "its input '" + node.input(0) +
                       "' is not an integer tensor of the program (a float op precedes it)");
    return it->second;
  }
  // The Relu or Clip after `node`'s output, fused when it is the output's only reader.
  std::string fuse_activation(const Node& node, Activation& act);
  void lower_conv(const Node& node);
  void lower_dense(const Node& node);
  void lower_pool(const Node& node);
  void lower_add(const Node& node);
  void lower_softmax(const Node& node);
  void finish_softmax(IntegerOp& op);
  void finish_add(IntegerOp& op);
  void finish_weighted(IntegerOp& op, const PendingWeights& pw);

  const Graph& g_;
  IntegerProgram p_;
  std::map<std::string, int, std::less<>> int_of_;  // float tensor -> its int8 tensor
  std::set<std::string> fused_;                     // activation nodes folded into producers
  std::map<std::size_t, PendingWeights> pending_;   // by op index
  std::map<std::size_t, Activation> add_acts_;      // the fused clamp of each add, by op index
  std::vector<int> calibrated_;                     // tensors whose params come from calibration
};

std::string Lowering::fuse_activation(const Node& node, Activation& act) {
  const std::string& out = node.outputs.at(0);
  const auto readers = g_.consumers_of(out);
  if (readers.size() != 1 || g_.is_graph_output(out)) return out;
  const Node& next = g_.nodes[readers[0]];
  if (next.op_type == "Relu") {
    act.kind = ConvActivation::relu;
  } else if (next.op_type == "Clip") {
    float lo = -std::numeric_limits<float>::max(), hi = std::numeric_limits<float>::max();
    if (next.since_version < 11) {
      lo = next.attr_float_or("min", lo);
      hi = next.attr_float_or("max", hi);
    } else {
      for (std::size_t i = 1; i <= 2; ++i) {
        if (!next.has_input(i)) continue;
        const auto v = scalar_constant(g_, next.input(i));
        if (!v) refuse(next, "its bound '" + next.input(i) + "' is not a float32 scalar constant");
        (i == 1 ? lo : hi) = *v;
      }
    }
    act.kind = ConvActivation::clamp;
    act.lo = lo;
    act.hi = hi;
  } else {
    return out;
  }
  fused_.insert(next.name);
  return next.outputs.at(0);
}

void Lowering::walk() {
  if (g_.inputs.size() != 1 || g_.outputs.size() != 1)
    throw Error(ErrorCode::unsupported,
                "export-c: the graph has " + std::to_string(g_.inputs.size()) + " inputs and " +
                    std::to_string(g_.outputs.size()) + " outputs; expected one of each");
  p_.input_name = g_.inputs[0].name;
  p_.output_name = g_.outputs[0].name;
  p_.input_shape = g_.inputs[0].shape();
  if (g_.inputs[0].type != ElementType::float32)
    throw Error(ErrorCode::unsupported,
                "export-c: input '" + p_.input_name + "' is not float32; expected a float input");

  // The float prefix: scalar Sub/Div/Mul/Add applied to the input, each its only reader.
  std::string current = p_.input_name;
  IntegerOp quantize{IntegerOpKind::quantize};
  std::size_t i = 0;
  for (; i < g_.nodes.size(); ++i) {
    const Node& n = g_.nodes[i];
    static const std::map<std::string, char, std::less<>> kOps = {
        {"Sub", '-'}, {"Div", '/'}, {"Mul", '*'}, {"Add", '+'}};
    const auto op = kOps.find(n.op_type);
    if (op == kOps.end() || n.inputs.size() != 2 || n.input(0) != current ||
        g_.consumers_of(current).size() != 1 || g_.is_graph_output(current))
      break;
    const auto c = scalar_constant(g_, n.input(1));
    if (!c) break;
    quantize.prefix.push_back({op->second, *c});
    quantize.node = n.name;
    current = n.outputs.at(0);
  }
  if (quantize.node.empty()) quantize.node = "input";
  quantize.output = add_tensor(current);
  int_of_[current] = quantize.output;
  calibrated_.push_back(quantize.output);
  p_.ops.push_back(std::move(quantize));

  for (; i < g_.nodes.size(); ++i) {
    const Node& n = g_.nodes[i];
    if (fused_.count(n.name)) continue;
    if (n.op_type == "Conv") {
      lower_conv(n);
    } else if (n.op_type == "Gemm" || n.op_type == "MatMul") {
      lower_dense(n);
    } else if (n.op_type == "MaxPool" || n.op_type == "AveragePool" ||
               n.op_type == "GlobalAveragePool") {
      lower_pool(n);
    } else if (n.op_type == "Add") {
      lower_add(n);
    } else if (n.op_type == "Softmax") {
      lower_softmax(n);
    } else if (n.op_type == "Flatten" || n.op_type == "Reshape" || n.op_type == "Squeeze" ||
               n.op_type == "Unsqueeze") {
      IntegerOp op{IntegerOpKind::reshape, n.name, int_input(n)};
      op.output = add_tensor(n.outputs.at(0));  // its params are its input's (finish())
      int_of_[n.outputs[0]] = op.output;
      p_.ops.push_back(std::move(op));
    } else if (n.op_type == "Relu" || n.op_type == "Clip") {
      refuse(n,
             "a clamp is supported only fused into the Conv, Gemm, MatMul or Add that produces "
             "its input (as the input's only reader)");
    } else {
      refuse(n, "op type " + n.op_type + " is not supported");
    }
  }
  const auto out = int_of_.find(p_.output_name);
  if (out == int_of_.end() || p_.ops.back().output != out->second)
    throw Error(ErrorCode::unsupported, "export-c: output '" + p_.output_name +
                                            "' is not the last op's result; expected a chain");
}

void Lowering::lower_conv(const Node& n) {
  IntegerOp op{IntegerOpKind::conv2d, n.name, int_input(n)};
  const Shape x = p_.tensors[static_cast<std::size_t>(op.input)].shape;
  const Tensor& w = float_initializer(g_, n, 1, "weight");
  if (x.size() != 4 || w.rank() != 4) refuse(n, "only 2-D convolutions are supported");
  ConvDesc& d = op.conv;
  d.n = 1, d.c = x[1], d.h = x[2], d.w = x[3];
  d.out_channels = w.shape()[0];
  d.kernel_h = w.shape()[2], d.kernel_w = w.shape()[3];
  d.groups = n.attr_int_or("group", 1);
  const auto strides = n.attr_ints_or("strides", {1, 1});
  const auto dilations = n.attr_ints_or("dilations", {1, 1});
  const auto pads = n.attr_ints_or("pads", {0, 0, 0, 0});
  if (strides.size() != 2 || dilations.size() != 2 || pads.size() != 4)
    refuse(n, "strides, dilations and pads must have 2, 2 and 4 entries");
  d.stride_h = strides[0], d.stride_w = strides[1];
  d.dilation_h = dilations[0], d.dilation_w = dilations[1];
  d.pad_top = pads[0], d.pad_left = pads[1], d.pad_bottom = pads[2], d.pad_right = pads[3];
  const std::string auto_pad = n.attr_string_or("auto_pad", "NOTSET");
  if (auto_pad == "SAME_UPPER") apply_auto_pad(d, AutoPad::same_upper);
  if (auto_pad == "SAME_LOWER") apply_auto_pad(d, AutoPad::same_lower);
  if (auto_pad == "VALID") apply_auto_pad(d, AutoPad::valid);
  PendingWeights pw;
  pw.out_channels = d.out_channels;
  const auto wv = w.values<float>();
  pw.w.assign(wv.begin(), wv.end());
  pw.bias.assign(static_cast<std::size_t>(d.out_channels), 0.0f);
  if (n.has_input(2)) {
    const auto b = float_initializer(g_, n, 2, "bias").values<float>();
    pw.bias.assign(b.begin(), b.end());
    op.bias.resize(pw.bias.size());  // non-empty: the layer has a bias
  }
  const std::string out = fuse_activation(n, pw.act);
  op.output = add_tensor(out);
  const Shape y = p_.tensors.back().shape;
  if (y.size() != 4 || y[2] != d.out_h() || y[3] != d.out_w())
    refuse(n, "its output shape does not follow from its attributes");
  int_of_[out] = op.output;
  calibrated_.push_back(op.output);
  pending_[p_.ops.size()] = std::move(pw);
  p_.ops.push_back(std::move(op));
}

void Lowering::lower_dense(const Node& n) {
  IntegerOp op{IntegerOpKind::dense, n.name, int_input(n)};
  const Shape x = p_.tensors[static_cast<std::size_t>(op.input)].shape;
  const Tensor& b = float_initializer(g_, n, 1, "weight B");
  if (x.size() != 2 || x[0] != 1 || b.rank() != 2)
    refuse(n, "expected a [1, K] input (a batch of one) and a 2-D constant weight");
  const bool gemm = n.op_type == "Gemm";
  if (gemm && n.attr_int_or("transA", 0) != 0) refuse(n, "transA = 1 is not supported");
  const bool trans_b = gemm && n.attr_int_or("transB", 0) != 0;
  const float alpha = gemm ? n.attr_float_or("alpha", 1.0f) : 1.0f;
  const float beta = gemm ? n.attr_float_or("beta", 1.0f) : 1.0f;
  const std::int64_t k = x[1];
  const std::int64_t out_n = trans_b ? b.shape()[0] : b.shape()[1];
  if ((trans_b ? b.shape()[1] : b.shape()[0]) != k) refuse(n, "weight and input disagree on K");
  PendingWeights pw;
  pw.out_channels = out_n;
  pw.w.resize(static_cast<std::size_t>(out_n * k));
  const auto bv = b.values<float>();
  for (std::int64_t o = 0; o < out_n; ++o)
    for (std::int64_t j = 0; j < k; ++j)
      pw.w[static_cast<std::size_t>(o * k + j)] =
          alpha * bv[static_cast<std::size_t>(trans_b ? o * k + j : j * out_n + o)];
  pw.bias.assign(static_cast<std::size_t>(out_n), 0.0f);
  if (gemm && n.has_input(2)) {
    const Tensor& c = float_initializer(g_, n, 2, "C");
    const auto cv = c.values<float>();
    if (c.size() != 1 && c.size() != out_n) refuse(n, "C must be a scalar or have N values");
    for (std::int64_t o = 0; o < out_n; ++o)
      pw.bias[static_cast<std::size_t>(o)] = beta * cv[c.size() == 1 ? 0 : o];
    op.bias.resize(pw.bias.size());
  }
  ConvDesc& d = op.conv;  // a 1x1 convolution over [K, 1, 1]
  d.n = 1, d.c = k, d.h = 1, d.w = 1, d.out_channels = out_n;
  const std::string out = fuse_activation(n, pw.act);
  op.output = add_tensor(out);
  int_of_[out] = op.output;
  calibrated_.push_back(op.output);
  pending_[p_.ops.size()] = std::move(pw);
  p_.ops.push_back(std::move(op));
}

void Lowering::lower_pool(const Node& n) {
  const bool max = n.op_type == "MaxPool", global = n.op_type == "GlobalAveragePool";
  IntegerOp op{max ? IntegerOpKind::max_pool : IntegerOpKind::avg_pool, n.name, int_input(n)};
  const Shape x = p_.tensors[static_cast<std::size_t>(op.input)].shape;
  if (x.size() != 4) refuse(n, "only 2-D pooling of NCHW tensors is supported");
  if (n.outputs.size() > 1 && !n.outputs[1].empty())
    refuse(n, "the Indices output is not supported");
  ConvDesc& d = op.conv;
  d.n = 1, d.c = x[1], d.h = x[2], d.w = x[3], d.out_channels = x[1];
  if (global) {
    d.kernel_h = x[2], d.kernel_w = x[3];
  } else {
    if (n.attr_string_or("auto_pad", "NOTSET") != "NOTSET")
      refuse(n, "auto_pad is not supported for pooling; write explicit pads");
    if (n.attr_int_or("ceil_mode", 0) != 0) refuse(n, "ceil_mode = 1 is not supported");
    const auto kernel = n.attr_ints_or("kernel_shape", {});
    const auto strides = n.attr_ints_or("strides", {1, 1});
    const auto dilations = n.attr_ints_or("dilations", {1, 1});
    const auto pads = n.attr_ints_or("pads", {0, 0, 0, 0});
    if (kernel.size() != 2 || strides.size() != 2 || dilations.size() != 2 || pads.size() != 4)
      refuse(n, "kernel_shape, strides, dilations and pads must have 2, 2, 2 and 4 entries");
    d.kernel_h = kernel[0], d.kernel_w = kernel[1];
    d.stride_h = strides[0], d.stride_w = strides[1];
    d.dilation_h = dilations[0], d.dilation_w = dilations[1];
    d.pad_top = pads[0], d.pad_left = pads[1], d.pad_bottom = pads[2], d.pad_right = pads[3];
    op.count_include_pad = n.attr_int_or("count_include_pad", 0) != 0;
  }
  // The average sums |x - z| <= 2^(bits) over the window in int32.
  if (!max && d.kernel_h * d.kernel_w > (p_.activations == DType::int16 ? 65535 : 8388607))
    refuse(n, "its window of " + std::to_string(d.kernel_h * d.kernel_w) +
                  " positions is too large for the kernel's int32 sum");
  op.output = add_tensor(n.outputs.at(0));
  const Shape y = p_.tensors.back().shape;
  if (y.size() != 4 || y[2] != d.out_h() || y[3] != d.out_w())
    refuse(n, "its output shape does not follow from its attributes");
  int_of_[n.outputs[0]] = op.output;
  p_.ops.push_back(std::move(op));
}

void Lowering::lower_add(const Node& n) {
  IntegerOp op{IntegerOpKind::add, n.name, int_input(n)};
  const auto second = int_of_.find(n.input(1));
  if (second == int_of_.end())
    refuse(n, "its input '" + n.input(1) +
                  "' is not an integer tensor of the program (Add of two activations only)");
  op.input2 = second->second;
  const Shape a = p_.tensors[static_cast<std::size_t>(op.input)].shape;
  if (p_.tensors[static_cast<std::size_t>(op.input2)].shape != a)
    refuse(n, "its inputs have different shapes; broadcasting is not supported");
  Activation act;
  const std::string out = fuse_activation(n, act);
  op.output = add_tensor(out);
  int_of_[out] = op.output;
  calibrated_.push_back(op.output);
  add_acts_[p_.ops.size()] = act;
  p_.ops.push_back(std::move(op));
}

void Lowering::lower_softmax(const Node& n) {
  IntegerOp op{IntegerOpKind::softmax, n.name, int_input(n)};
  if (p_.activations != DType::int8)
    refuse(n, "Softmax is supported in int8 programs only, not in the 16x8 variant");
  if (!g_.is_graph_output(n.outputs.at(0)))
    refuse(n, "Softmax is supported only as the graph's last op (its output is the graph's)");
  const Shape x = p_.tensors[static_cast<std::size_t>(op.input)].shape;
  const auto rank = static_cast<std::int64_t>(x.size());
  if (rank == 0) refuse(n, "its input is a scalar; expected at least one axis");
  // Before opset 13 the input is seen as 2-D [prod(:axis), prod(axis:)]; from 13 the softmax
  // runs along `axis` alone, which is contiguous in NCHW only when every later axis has size 1.
  std::int64_t axis = n.attr_int_or("axis", n.since_version >= 13 ? -1 : 1);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) refuse(n, "its axis is outside the input's rank");
  op.rows = 1, op.depth = 1;
  for (std::int64_t d = 0; d < rank; ++d) {
    const std::int64_t size = x[static_cast<std::size_t>(d)];
    if (d < axis) op.rows *= size;
    else if (d == axis || n.since_version < 13) op.depth *= size;
    else if (size != 1)
      refuse(n, "it normalises axis " + std::to_string(axis) +
                    ", which is not the last one with more than one element; expected the "
                    "values of each softmax to be contiguous");
  }
  if (op.depth > kSoftmaxMaxDepth)
    refuse(n, "it normalises " + std::to_string(op.depth) + " values; at most " +
                  std::to_string(kSoftmaxMaxDepth) +
                  " fit the int32 sum of exponentials in Q12.19");
  op.output = add_tensor(n.outputs[0]);  // fixed params, not calibrated (finish_softmax)
  int_of_[n.outputs[0]] = op.output;
  p_.ops.push_back(std::move(op));
}

void Lowering::calibrate(const Graph& original, TensorMap first, const CalibrationSource& next,
                         const LowerOptions& options) {
  std::vector<std::string> keep;
  std::vector<std::unique_ptr<calibration::HistogramObserver>> observers;
  for (const int t : calibrated_) {
    const std::string& name = p_.tensors[static_cast<std::size_t>(t)].name;
    if (!original.is_graph_output(name)) keep.push_back(name);
    observers.push_back(
        std::make_unique<calibration::HistogramObserver>(options.calibration, options.bins));
  }
  std::map<Shape, std::unique_ptr<Executor>> executors;  // one per batch shape
  // Batches stream through: each is observed and dropped, so memory does not grow with them.
  for (std::optional<TensorMap> batch = std::move(first); batch; batch = next()) {
    const auto in = batch->find(p_.input_name);
    if (in == batch->end())
      throw Error(ErrorCode::invalid_argument,
                  "export-c: a calibration batch lacks input '" + p_.input_name + "'");
    auto& ex = executors[in->second.shape()];
    if (!ex) {
      ResolveOptions ro;
      ro.input_shapes[p_.input_name] = in->second.shape();
      ex = std::make_unique<Executor>(original, ro);
    }
    const TensorMap values = ex->run(*batch, keep);
    for (std::size_t i = 0; i < calibrated_.size(); ++i) {
      const Tensor& t = values.at(p_.tensors[static_cast<std::size_t>(calibrated_[i])].name);
      observers[i]->observe(t.values<float>(), t.shape());
    }
  }
  // int8 affine, or int16 symmetric (zero point 0) for the 16x8 variant.
  const bool s16 = p_.activations == DType::int16;
  const calibration::Target target{p_.activations, s16 ? Mapping::symmetric : Mapping::affine,
                                   calibration::Convention::qforge};
  for (std::size_t i = 0; i < calibrated_.size(); ++i) {
    IntegerTensor& t = p_.tensors[static_cast<std::size_t>(calibrated_[i])];
    if (!observers[i]->has_data())
      throw Error(ErrorCode::invalid_argument,
                  "export-c: tensor '" + t.name + "' saw no finite value in calibration");
    const QuantizationParams params = observers[i]->params(target);
    t.scale = params.scale();
    t.zero_point = params.zero_point();
  }
}

void Lowering::finish_weighted(IntegerOp& op, const PendingWeights& pw) {
  const IntegerTensor& x = p_.tensors[static_cast<std::size_t>(op.input)];
  IntegerTensor& y = p_.tensors[static_cast<std::size_t>(op.output)];
  ConvDesc& d = op.conv;
  const std::int64_t per_o = static_cast<std::int64_t>(pw.w.size()) / pw.out_channels;
  std::vector<float> lo(static_cast<std::size_t>(pw.out_channels)), hi(lo.size());
  for (std::int64_t o = 0; o < pw.out_channels; ++o) {
    const auto row = std::span(pw.w).subspan(static_cast<std::size_t>(o * per_o),
                                             static_cast<std::size_t>(per_o));
    const auto [mn, mx] = std::minmax_element(row.begin(), row.end());
    lo[static_cast<std::size_t>(o)] = *mn, hi[static_cast<std::size_t>(o)] = *mx;
  }
  d.w_params = reference::params_from_ranges(DType::int8, Scheme::per_channel_symmetric(0), lo, hi);
  op.weights.resize(pw.w.size());
  reference::quantize(QuantizeDesc{d.w_shape(), d.w_params}, pw.w.data(), op.weights.data());
  const bool s16 = p_.activations == DType::int16;
  if (s16) {
    // TFLite's 16x8 requantization takes multipliers (sx * sw) / sy below 2^7. An output whose
    // calibrated range is tiny against its input's (a channel a ReLU almost always zeroes)
    // would need more: its scale is widened to the smallest that keeps every multiplier at or
    // below 127, which coarsens only values calibration saw near zero. Its consumers are
    // lowered after this op and read the widened scale.
    double widest = 0.0;
    for (std::int64_t o = 0; o < pw.out_channels; ++o)
      widest =
          std::max(widest, static_cast<double>(x.scale) *
                               static_cast<double>(d.w_params.scale(static_cast<std::size_t>(o))));
    y.scale = std::max(y.scale, static_cast<float>(widest / 127.0));
  }
  d.x_params = s16 ? QuantizationParams::per_tensor_symmetric(DType::int16, x.scale)
                   : QuantizationParams::per_tensor_affine(DType::int8, x.scale, x.zero_point);
  d.y_params = s16 ? QuantizationParams::per_tensor_symmetric(DType::int16, y.scale)
                   : QuantizationParams::per_tensor_affine(DType::int8, y.scale, y.zero_point);
  d.requant_mode = RequantMode::fixed_point;
  d.activation = pw.act.kind;
  d.clamp_min = pw.act.lo, d.clamp_max = pw.act.hi;
  const bool has_bias = !op.bias.empty();
  // 16x8: the int64 bias is qlinear_conv_16x8's argument and desc.bias stays none.
  d.bias = has_bias && !s16 ? ConvBias::int32 : ConvBias::none;
  const std::int64_t max_x = std::max(p_.qmax() - x.zero_point, x.zero_point - p_.qmin());
  // int8: the C kernels sum in int32. 16x8: they sum in int64 and requantize values below 2^47
  // (TFLite's bound); the bias itself is limited to the same.
  const std::int64_t limit =
      s16 ? (std::int64_t{1} << 47) - 1 : std::numeric_limits<std::int32_t>::max();
  for (std::int64_t o = 0; o < pw.out_channels; ++o) {
    const auto oi = static_cast<std::size_t>(o);
    const float sw = d.w_params.scale(oi);
    if (has_bias) {
      const double b = std::nearbyint(static_cast<double>(pw.bias[oi]) /
                                      (static_cast<double>(x.scale) * static_cast<double>(sw)));
      const double lim = static_cast<double>(limit);
      op.bias[oi] = static_cast<std::int64_t>(std::clamp(b, -lim, lim));
    }
    // Every accumulator must stay within the limit whatever the input values.
    std::int64_t bound = has_bias ? std::abs(op.bias[oi]) : 0;
    for (std::int64_t j = 0; j < per_o; ++j)
      bound += max_x * std::abs(static_cast<std::int64_t>(op.weights[oi * per_o + j]));
    if (bound > limit)
      throw Error(ErrorCode::overflow,
                  "export-c: node '" + op.node + "' output channel " + std::to_string(o) +
                      " can reach an accumulator of " + std::to_string(bound) +
                      (s16 ? "; expected every sum below 2^47 (TFLite's 16x8 requantization)"
                           : "; expected every int32 sum to fit (the kernels accumulate in "
                             "int32)"));
    // int8: core's qlinear_conv ratio in float32; 16x8: TFLite's, in double (the oracle,
    // qlinear_conv_16x8, derives the same).
    op.multipliers.push_back(
        s16 ? reference::multiplier_16x8(x.scale, sw, y.scale, "qlinear_conv_16x8",
                                         "output channel " + std::to_string(o))
            : reference::quantize_multiplier(static_cast<double>((x.scale * sw) / y.scale)));
  }
  const auto clamp = [&](float v) {
    return reference::quantize_value(v, y.scale, y.zero_point, p_.qmin(), p_.qmax());
  };
  op.act_min = p_.qmin(), op.act_max = p_.qmax();
  if (pw.act.kind == ConvActivation::relu) op.act_min = clamp(0.0f);
  if (pw.act.kind == ConvActivation::clamp) {
    if (!(pw.act.lo <= pw.act.hi))
      throw Error(ErrorCode::invalid_argument,
                  "export-c: node '" + op.node + "': Clip min > max; expected min <= max");
    op.act_min = clamp(pw.act.lo), op.act_max = clamp(pw.act.hi);
  }
  if (s16) reference::check_conv_16x8(d);
  else reference::check_descriptor(OpKind::qlinear_conv, d);
}

void Lowering::finish_add(IntegerOp& op) {
  const IntegerTensor& a = p_.tensors[static_cast<std::size_t>(op.input)];
  const IntegerTensor& b = p_.tensors[static_cast<std::size_t>(op.input2)];
  const IntegerTensor& y = p_.tensors[static_cast<std::size_t>(op.output)];
  // TFLite's PrepareGeneralSubOp / int8 ADD, in double as there.
  const double twice_max = 2.0 * std::max<double>(a.scale, b.scale);
  op.multipliers = {reference::quantize_multiplier(a.scale / twice_max),
                    reference::quantize_multiplier(b.scale / twice_max),
                    reference::quantize_multiplier(
                        twice_max / (static_cast<double>(1 << p_.add_shift()) * double{y.scale}))};
  const Activation act = add_acts_.at(static_cast<std::size_t>(&op - p_.ops.data()));
  const auto q = [&](float v) {
    return reference::quantize_value(v, y.scale, y.zero_point, p_.qmin(), p_.qmax());
  };
  op.act_min = p_.qmin(), op.act_max = p_.qmax();
  if (act.kind == ConvActivation::relu) op.act_min = q(0.0f);
  if (act.kind == ConvActivation::clamp) op.act_min = q(act.lo), op.act_max = q(act.hi);
}

// TFLite's PreprocessSoftmaxScaling and CalculateInputRadius in double, with ONNX's beta of 1.
void Lowering::finish_softmax(IntegerOp& op) {
  const IntegerTensor& x = p_.tensors[static_cast<std::size_t>(op.input)];
  IntegerTensor& y = p_.tensors[static_cast<std::size_t>(op.output)];
  // TFLite's int8 spec: probabilities in [0, 1) at scale 1/256 from -128, whatever calibration
  // would say, so that the output's full range is used and every runtime agrees on it.
  y.scale = 1.0f / 256.0f, y.zero_point = -128;
  constexpr double beta = 1.0;
  const double real = std::min(beta * static_cast<double>(x.scale) *
                                   static_cast<double>(1 << (31 - kSoftmaxDiffIntegerBits)),
                               static_cast<double>((std::int64_t{1} << 31) - 1));
  if (!(real > 1.0))
    throw Error(ErrorCode::unsupported,
                "export-c: node '" + op.node + "': Softmax input scale " + std::to_string(x.scale) +
                    " is at most 2^-26; expected a larger one (TFLite's int8 softmax scales input "
                    "differences up into Q5.26)");
  const reference::FixedPointMultiplier m = reference::quantize_multiplier(real);
  op.multipliers = {m};
  // The most negative difference whose d * 2^shift still fits Q5.26 before the multiplier (in
  // [1/2, 1)) scales it: below it, d * scale * beta < -15.5, whose exponential (< 2^-22) is far
  // below half an output step (2^-9), and the output is the minimum.
  const double radius = static_cast<double>((1 << kSoftmaxDiffIntegerBits) - 1) *
                        static_cast<double>(std::int64_t{1} << (31 - kSoftmaxDiffIntegerBits)) /
                        static_cast<double>(std::int64_t{1} << m.shift);
  op.diff_min = -static_cast<std::int32_t>(std::floor(radius));
}

void Lowering::finish() {
  for (std::size_t i = 0; i < p_.ops.size(); ++i) {
    IntegerOp& op = p_.ops[i];
    if (op.kind == IntegerOpKind::conv2d || op.kind == IntegerOpKind::dense) {
      finish_weighted(op, pending_.at(i));
    } else if (op.kind == IntegerOpKind::add) {
      finish_add(op);
    } else if (op.kind == IntegerOpKind::softmax) {
      finish_softmax(op);
    } else if (op.kind != IntegerOpKind::quantize) {
      // Pools and reshapes keep their input's params (max and average commute with them).
      const IntegerTensor& in = p_.tensors[static_cast<std::size_t>(op.input)];
      IntegerTensor& out = p_.tensors[static_cast<std::size_t>(op.output)];
      out.scale = in.scale, out.zero_point = in.zero_point;
    }
  }
}

}  // namespace

std::string_view supported_integer_ops() noexcept { return kSupported; }

IntegerProgram lower_to_integer(const Graph& graph, const CalibrationSource& next,
                                const LowerOptions& options) {
  if (graph.inputs.size() != 1)
    throw Error(
        ErrorCode::unsupported,
        "export-c: the graph has " + std::to_string(graph.inputs.size()) + " inputs; expected one");
  std::optional<TensorMap> first = next();
  if (!first)
    throw Error(ErrorCode::invalid_argument,
                "export-c: no calibration batch; every activation needs a calibrated range");
  // The program runs one sample: resolve the graph for the first batch's shape with batch 1.
  const auto in = first->find(graph.inputs[0].name);
  if (in == first->end())
    throw Error(ErrorCode::invalid_argument,
                "export-c: a calibration batch lacks input '" + graph.inputs[0].name + "'");
  Shape one = in->second.shape();
  if (one.empty()) throw Error(ErrorCode::shape_mismatch, "export-c: the input is a scalar");
  one[0] = 1;
  ResolveOptions ro;
  ro.input_shapes[graph.inputs[0].name] = one;
  const Executor resolved(graph, ro);
  if (options.activations != DType::int8 && options.activations != DType::int16)
    throw Error(ErrorCode::unsupported,
                "export-c: activations " + std::string(name(options.activations)) +
                    "; expected int8 (TFLite's int8 spec) or int16 (its 16x8 variant)");
  Lowering l(resolved.graph(), options.activations);
  l.walk();
  l.calibrate(graph, std::move(*first), next, options);
  l.finish();
  return l.take();
}

IntegerProgram lower_to_integer(const Graph& graph, std::span<const TensorMap> batches,
                                const LowerOptions& options) {
  std::size_t i = 0;
  return lower_to_integer(
      graph,
      [&]() -> std::optional<TensorMap> {
        if (i == batches.size()) return std::nullopt;
        return batches[i++];
      },
      options);
}

}  // namespace qforge::model
