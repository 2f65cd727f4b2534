#include "qforge/model/qdq_export.h"

#include <cstring>
#include <set>
#include <string>

#include "qforge/dtype.h"
#include "qforge/error.h"
#include "qforge/model/onnx_export.h"

namespace qforge::model {
namespace {

// Tensor and node names in use, and fresh ones derived from a base name.
class Names {
 public:
  explicit Names(const Graph& g) {
    for (const auto& v : g.inputs) used_.insert(v.name);
    for (const auto& [name, t] : g.initializers) used_.insert(name);
    for (const Node& n : g.nodes) {
      used_.insert(n.name);
      for (const auto& o : n.outputs) used_.insert(o);
    }
  }
  std::string fresh(const std::string& base) {
    std::string name = base;
    for (int i = 1; used_.count(name); ++i) name = base + "_" + std::to_string(i);
    used_.insert(name);
    return name;
  }

 private:
  std::set<std::string> used_;
};

[[noreturn]] void refuse(const QuantizedLayerInfo& layer, const std::string& what) {
  throw Error(ErrorCode::unsupported,
              "QDQ export: " + layer.op_type + " '" + layer.name + "': " + what);
}

ElementType element_type(const QuantizedLayerInfo& layer, DType t, const char* role) {
  if (t == DType::int8) return ElementType::int8;
  if (t == DType::uint8) return ElementType::uint8;
  refuse(layer, std::string(role) + " are " + std::string(qforge::name(t)) +
                    "; ONNX QuantizeLinear/DequantizeLinear up to opset 17 (ONNX 1.12) take "
                    "int8 and uint8 only (int16 and int4 need opset 21)");
}

// A scale (float) and zero point (int8/uint8) tensor pair, scalar or 1-D.
Tensor scale_tensor(const QuantizationParams& p, bool per_channel) {
  const auto s = p.scales();
  return per_channel ? Tensor::from_values<float>({static_cast<std::int64_t>(s.size())}, s)
                     : Tensor::scalar<float>(s[0]);
}
Tensor zero_point_tensor(const QuantizationParams& p, ElementType type, bool per_channel) {
  const auto z = p.zero_points();
  Tensor t(type, per_channel ? Shape{static_cast<std::int64_t>(z.size())} : Shape{});
  for (std::size_t i = 0; i < (per_channel ? z.size() : 1); ++i) {
    if (type == ElementType::int8) t.values<std::int8_t>()[i] = static_cast<std::int8_t>(z[i]);
    else t.values<std::uint8_t>()[i] = static_cast<std::uint8_t>(z[i]);
  }
  return t;
}

struct Builder {
  Graph& g;
  Names names;
  int qdq_version;  // QuantizeLinear/DequantizeLinear's since_version under the graph's opset

  std::string add_initializer(const std::string& base, Tensor t) {
    std::string name = names.fresh(base);
    g.initializers.emplace(name, std::move(t));
    return name;
  }
  Node make(const std::string& op, const std::string& base, int version,
            std::vector<std::string> in, std::vector<std::string> out) {
    Node n;
    n.name = names.fresh(base);
    n.op_type = op;
    n.since_version = version;
    n.inputs = std::move(in);
    n.outputs = std::move(out);
    return n;
  }

  // DequantizeLinear of the layer's weight codes; returns the float weight's tensor name.
  std::string weight(const QuantizedLayerInfo& layer, std::vector<Node>& out) {
    const QuantizationParams& p = layer.b_params;
    const Granularity gran = p.scheme().granularity;
    if (layer.weight_only && gran == Granularity::block)
      refuse(layer,
             "block-wise weight-only layers (ONNX Runtime's MatMulNBits) need "
             "DequantizeLinear's block_size and int4 (opset 21) or com.microsoft's MatMulNBits, "
             "which this exporter does not write; ONNX Runtime's matmul_nbits_quantizer makes "
             "that graph from the float model");
    const ElementType type = element_type(layer, p.dtype(), "weights");
    if (gran == Granularity::block)
      refuse(layer, "block-wise weights need DequantizeLinear's block_size (opset 21)");
    const bool per_channel = gran == Granularity::per_channel;
    if (per_channel && qdq_version < 13)
      refuse(layer,
             "per-channel weights need per-axis DequantizeLinear (opset 13); the model "
             "imports opset " +
                 std::to_string(g.opset));
    Tensor codes(type, layer.weight_shape);
    std::memcpy(codes.data(), layer.b_codes.data(), codes.byte_size());
    const std::string base = layer.name + ".weight";
    std::vector<std::string> in = {
        add_initializer(base + "_quantized", std::move(codes)),
        add_initializer(base + "_scale", scale_tensor(p, per_channel)),
        add_initializer(base + "_zero_point", zero_point_tensor(p, type, per_channel))};
    const std::string w = names.fresh(base + "_dequantized");
    Node dq = make("DequantizeLinear", layer.name + "/weight_dequantize", qdq_version,
                   std::move(in), {w});
    if (per_channel) dq.attributes["axis"] = std::int64_t{p.scheme().axis};
    out.push_back(std::move(dq));
    return w;
  }

  // Symmetric schemes quantize to the narrow range ([-127, 127] for int8), ONNX's QuantizeLinear
  // to the full one: a Clip at (qmin - z) * s in front makes the codes qforge's (x / s of that
  // bound rounds to qmin - z exactly, and nothing above it changes). Returns the clipped name.
  std::string narrow(const QuantizedLayerInfo& layer, const QuantizationParams& p,
                     std::vector<Node>& out) {
    const float lo = static_cast<float>(p.qmin() - p.zero_point()) * p.scale();
    const std::string clipped = names.fresh(layer.name + ".input_clipped");
    Node clip = make("Clip", layer.name + "/input_clip", 6, {layer.input}, {clipped});
    if (g.opset >= 11) {
      clip.since_version = g.opset >= 13 ? 13 : g.opset >= 12 ? 12 : 11;
      clip.inputs.push_back(add_initializer(layer.name + ".input_min", Tensor::scalar<float>(lo)));
    } else {
      clip.attributes["min"] = lo;
    }
    out.push_back(std::move(clip));
    return clipped;
  }

  // DequantizeLinear of a Conv's or Gemm's int32 bias at scale sx * sw[o] (the int8 path's
  // qlinear_conv and qlinear_matmul
  // adds its bias so; ONNX Runtime's quantize_static writes bias the same way); returns the
  // float bias's name.
  std::string int32_bias(const QuantizedLayerInfo& layer, std::vector<Node>& out) {
    const QuantizationParams& w = layer.b_params;
    const bool per_channel = w.count() > 1;
    if (per_channel && qdq_version < 13)
      refuse(layer, "per-channel bias scales need per-axis DequantizeLinear (opset 13)");
    const float sx = layer.a_params->scale();
    std::vector<float> scales;
    for (std::size_t o = 0; o < w.count(); ++o) scales.push_back(sx * w.scale(o));
    const std::string base = layer.name + ".bias";
    std::vector<std::string> in = {
        add_initializer(base + "_quantized", Tensor::from_values<std::int32_t>(
                                                 {static_cast<std::int64_t>(layer.bias_i32.size())},
                                                 std::span<const std::int32_t>(layer.bias_i32))),
        add_initializer(base + "_scale",
                        per_channel
                            ? Tensor::from_values<float>({static_cast<std::int64_t>(scales.size())},
                                                         std::span<const float>(scales))
                            : Tensor::scalar<float>(scales[0]))};
    const std::string b = names.fresh(base + "_dequantized");
    Node dq =
        make("DequantizeLinear", layer.name + "/bias_dequantize", qdq_version, std::move(in), {b});
    if (per_channel) dq.attributes["axis"] = std::int64_t{0};
    out.push_back(std::move(dq));
    return b;
  }

  // Q/DQ (static, explicit) or DynamicQuantizeLinear/DQ (dynamic) on A; returns the float name.
  std::string activation(const QuantizedLayerInfo& layer, std::vector<Node>& out) {
    const std::string base = layer.name + ".input";
    const std::string a = names.fresh(base + "_dequantized");
    if (layer.mode == ActivationMode::dynamic) {
      if (g.opset < 11)
        refuse(layer,
               "dynamic activations need DynamicQuantizeLinear (opset 11); the model "
               "imports opset " +
                   std::to_string(g.opset));
      std::vector<std::string> q = {names.fresh(base + "_quantized"), names.fresh(base + "_scale"),
                                    names.fresh(base + "_zero_point")};
      out.push_back(
          make("DynamicQuantizeLinear", layer.name + "/input_quantize", 11, {layer.input}, q));
      out.push_back(
          make("DequantizeLinear", layer.name + "/input_dequantize", qdq_version, q, {a}));
      return a;
    }
    const QuantizationParams& p = *layer.a_params;
    const ElementType type = element_type(layer, p.dtype(), "activations");
    const std::string scale = add_initializer(base + "_scale", scale_tensor(p, false));
    const std::string zp = add_initializer(base + "_zero_point", zero_point_tensor(p, type, false));
    const std::string q = names.fresh(base + "_quantized");
    std::string x = layer.input;
    if (p.qmin() > traits(p.dtype()).qmin) x = narrow(layer, p, out);
    out.push_back(
        make("QuantizeLinear", layer.name + "/input_quantize", qdq_version, {x, scale, zp}, {q}));
    out.push_back(make("DequantizeLinear", layer.name + "/input_dequantize", qdq_version,
                       {q, scale, zp}, {a}));
    return a;
  }
};

}  // namespace

Graph qdq_graph(const QuantizedModel& model) {
  Graph g = model.graph();
  if (g.opset < 10)
    throw Error(ErrorCode::unsupported,
                "QDQ export: the model imports opset " + std::to_string(g.opset) +
                    "; QuantizeLinear and DequantizeLinear need opset 10 or later");
  Builder b{g, Names(g), g.opset >= 13 ? 13 : 10};
  std::vector<const QuantizedLayerInfo*> layer_of(g.nodes.size(), nullptr);
  for (const QuantizedLayerInfo& l : model.layers()) layer_of.at(l.node) = &l;

  std::vector<Node> nodes;
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    Node node = g.nodes[i];
    if (const QuantizedLayerInfo* layer = layer_of[i]) {
      // Weight-only layers keep float activations: only the weight is dequantized. Their usual
      // block-wise int4 weights are refused by weight(): DequantizeLinear's block_size and int4
      // need opset 21, and this exporter writes no com.microsoft MatMulNBits.
      if (!layer->weight_only) node.inputs.at(0) = b.activation(*layer, nodes);
      node.inputs.at(1) = b.weight(*layer, nodes);
      if (!layer->bias_i32.empty() && node.op_type != "Gemm")
        node.inputs.at(2) = b.int32_bias(*layer, nodes);
      if (node.op_type == "Gemm") {
        // alpha is in the codes, beta in the bias.
        node.attributes.erase("alpha");
        node.attributes.erase("beta");
        node.inputs.resize(2);
        if (!layer->bias_i32.empty())
          node.inputs.push_back(b.int32_bias(*layer, nodes));  // as the int8 path adds it
        else if (!layer->bias.empty())
          node.inputs.push_back(b.add_initializer(
              layer->name + ".bias",
              Tensor::from_values<float>({layer->n}, std::span<const float>(layer->bias))));
      }
    }
    nodes.push_back(std::move(node));
  }
  g.nodes = std::move(nodes);

  // Drop the float weights (and biases) no node reads any more.
  std::set<std::string, std::less<>> read;
  for (const Node& n : g.nodes) read.insert(n.inputs.begin(), n.inputs.end());
  for (auto it = g.initializers.begin(); it != g.initializers.end();)
    it = read.count(it->first) || g.is_graph_output(it->first) ? std::next(it)
                                                               : g.initializers.erase(it);
  g.validate();
  return g;
}

std::vector<std::byte> export_qdq_onnx_bytes(const QuantizedModel& model) {
  return export_onnx_bytes(qdq_graph(model));
}

void export_qdq_onnx(const QuantizedModel& model, const std::filesystem::path& path) {
  export_onnx_file(qdq_graph(model), path);
}

}  // namespace qforge::model
