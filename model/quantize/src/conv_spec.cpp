#include "conv_spec.h"

#include <tuple>

#include "qforge/error.h"

namespace qforge::model::quantize {
namespace {

[[noreturn]] void refuse(const Node& node, const std::string& what) {
  throw Error(ErrorCode::unsupported, node.describe() + ": " + what);
}

const Tensor& float_initializer(const Graph& graph, const Node& node, std::size_t i,
                                const char* role) {
  const Tensor* t = graph.initializer(node.input(i));
  if (!t)
    refuse(node, std::string(role) + " '" + node.input(i) +
                     "' is not an initializer; quantized layers need constant weights");
  if (t->type() != ElementType::float32)
    refuse(node, std::string(role) + " '" + node.input(i) + "' is " +
                     std::string(to_string(t->type())) + "; quantized layers need float32 weights");
  return *t;
}

// A two-element attribute (strides, dilations) or its default of ones.
std::pair<std::int64_t, std::int64_t> pair_attr(const Node& node, const char* key) {
  const auto v = node.attr_ints_or(key, {1, 1});
  if (v.size() != 2)
    refuse(node, std::string(key) + " has " + std::to_string(v.size()) +
                     " values; a 2-D convolution takes 2");
  return {v[0], v[1]};
}

AutoPad auto_pad(const Node& node) {
  const std::string p = node.attr_string_or("auto_pad", "NOTSET");
  if (p == "NOTSET") return AutoPad::notset;
  if (p == "SAME_UPPER") return AutoPad::same_upper;
  if (p == "SAME_LOWER") return AutoPad::same_lower;
  if (p == "VALID") return AutoPad::valid;
  refuse(node, "auto_pad '" + p + "' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID");
}

}  // namespace

bool is_quantizable_conv(const std::string& op_type) { return op_type == "Conv"; }

ConvSpec conv_spec(const Graph& graph, const Node& node) {
  if (!is_quantizable_conv(node.op_type))
    refuse(node, "quantized " + node.op_type + " is not supported; Conv, MatMul and Gemm are");
  ConvSpec spec;
  spec.input = node.input(0);
  spec.output = node.outputs.at(0);
  const ValueInfo* x = graph.find_value_info(spec.input);
  if (!x || !x->fully_known()) refuse(node, "the shape of input '" + spec.input + "' is not known");
  if (x->type != ElementType::float32)
    refuse(node, "input '" + spec.input + "' is " + std::string(to_string(x->type)) +
                     "; quantized layers need float32 activations");
  const Shape xs = x->shape();
  if (xs.size() != 4)
    refuse(node, "input '" + spec.input + "' is " + qforge::to_string(xs) +
                     "; quantized Conv is 2-D (X of rank 4, NCHW)");
  const Tensor& w = float_initializer(graph, node, 1, "W");
  const Shape ws = w.shape();
  if (ws.size() != 4) refuse(node, "W is " + qforge::to_string(ws) + "; a 2-D Conv's W is OIHW");

  ConvDesc& d = spec.desc;
  d.layout = ConvLayout::nchw;
  d.n = xs[0];
  d.c = xs[1];
  d.h = xs[2];
  d.w = xs[3];
  d.out_channels = ws[0];
  d.kernel_h = ws[2];
  d.kernel_w = ws[3];
  d.groups = node.attr_int_or("group", 1);
  std::tie(d.stride_h, d.stride_w) = pair_attr(node, "strides");
  std::tie(d.dilation_h, d.dilation_w) = pair_attr(node, "dilations");
  const AutoPad mode = auto_pad(node);
  if (mode == AutoPad::notset) {
    // ONNX orders pads as (begin of each axis, end of each axis).
    const auto pads = node.attr_ints_or("pads", {0, 0, 0, 0});
    if (pads.size() != 4)
      refuse(node, "pads has " + std::to_string(pads.size()) +
                       " values; a 2-D convolution takes 4 (top, left, bottom, right)");
    d.pad_top = pads[0];
    d.pad_left = pads[1];
    d.pad_bottom = pads[2];
    d.pad_right = pads[3];
  } else {
    apply_auto_pad(d, mode);
  }
  if (d.w_shape() != ws)
    refuse(node, "W is " + qforge::to_string(ws) + "; with X " + qforge::to_string(xs) +
                     " and group " + std::to_string(d.groups) + " it should be " +
                     qforge::to_string(d.w_shape()));
  const auto wv = w.values<float>();
  spec.weight.assign(wv.begin(), wv.end());
  if (node.has_input(2)) {
    const Tensor& b = float_initializer(graph, node, 2, "B");
    if (b.size() != d.out_channels)
      refuse(node, "B is " + qforge::to_string(b.shape()) + "; Conv's bias is [" +
                       std::to_string(d.out_channels) + "]");
    const auto bv = b.values<float>();
    spec.bias.assign(bv.begin(), bv.end());
  }
  return spec;
}

}  // namespace qforge::model::quantize
