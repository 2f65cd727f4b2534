// Conv + BatchNormalization -> Conv with rescaled weight and bias.
#include <cmath>

#include "qforge/error.h"
#include "qforge/model/resolve.h"

namespace qforge::model {
namespace {

std::string unique_initializer_name(const Graph& g, const std::string& base) {
  std::string name = base;
  for (int i = 1; g.initializers.contains(name); ++i) name = base + "_" + std::to_string(i);
  return name;
}

bool is_float_vector(const Tensor* t, std::int64_t n) {
  return t && t->type() == ElementType::float32 && t->shape() == Shape{n};
}

// Removes initializers no node reads and no graph output names.
void drop_unused_initializers(Graph& g) {
  for (auto it = g.initializers.begin(); it != g.initializers.end();) {
    bool used = g.is_graph_output(it->first);
    for (const Node& n : g.nodes)
      for (const std::string& in : n.inputs) used = used || in == it->first;
    it = used ? std::next(it) : g.initializers.erase(it);
  }
}

}  // namespace

int fold_conv_batchnorm(Graph& g) {
  int folded = 0;
  for (std::size_t bi = 0; bi < g.nodes.size(); ++bi) {
    const Node& bn = g.nodes[bi];
    if (bn.op_type != "BatchNormalization" || bn.inputs.size() != 5) continue;
    if (bn.attr_int_or("training_mode", 0) != 0 || bn.attr_int_or("spatial", 1) != 1) continue;
    if (bn.since_version == 6 && bn.attr_int_or("is_test", 0) != 1) continue;
    bool extra_outputs = false;
    for (std::size_t o = 1; o < bn.outputs.size(); ++o)
      extra_outputs = extra_outputs || !bn.outputs[o].empty();
    if (extra_outputs) continue;
    const std::string& x = bn.inputs[0];
    const Node* conv_ptr = g.producer_of(x);
    if (!conv_ptr || conv_ptr->op_type != "Conv" || g.is_graph_output(x) ||
        g.consumers_of(x).size() != 1)
      continue;
    const std::size_t ci = static_cast<std::size_t>(conv_ptr - g.nodes.data());
    const Tensor* w = g.initializer(conv_ptr->input(1));
    if (!w || w->type() != ElementType::float32 || w->rank() < 3) continue;
    const std::int64_t m = w->shape()[0];
    const Tensor* b = conv_ptr->has_input(2) ? g.initializer(conv_ptr->input(2)) : nullptr;
    if (conv_ptr->has_input(2) && !is_float_vector(b, m)) continue;
    const Tensor* scale = g.initializer(bn.inputs[1]);
    const Tensor* beta = g.initializer(bn.inputs[2]);
    const Tensor* mean = g.initializer(bn.inputs[3]);
    const Tensor* var = g.initializer(bn.inputs[4]);
    if (!is_float_vector(scale, m) || !is_float_vector(beta, m) || !is_float_vector(mean, m) ||
        !is_float_vector(var, m))
      continue;

    const float eps = bn.attr_float_or("epsilon", 1e-5f);
    Tensor new_w = *w;
    Tensor new_b(ElementType::float32, {m});
    const std::int64_t per_channel = w->size() / std::max<std::int64_t>(m, 1);
    auto wv = new_w.values<float>();
    auto bv = new_b.values<float>();
    for (std::int64_t c = 0; c < m; ++c) {
      // Same factor as the BatchNormalization kernel, so folding changes only rounding order.
      const float a = scale->values<float>()[c] / std::sqrt(var->values<float>()[c] + eps);
      for (std::int64_t i = 0; i < per_channel; ++i) wv[c * per_channel + i] *= a;
      const float bias = b ? b->values<float>()[c] : 0.0f;
      bv[c] = (bias - mean->values<float>()[c]) * a + beta->values<float>()[c];
    }
    Node conv = *conv_ptr;
    const std::string w_name = unique_initializer_name(g, conv.name + ".weight_bn_folded");
    g.initializers.emplace(w_name, std::move(new_w));
    const std::string b_name = unique_initializer_name(g, conv.name + ".bias_bn_folded");
    g.initializers.emplace(b_name, std::move(new_b));
    conv.inputs.resize(3);
    conv.inputs[1] = w_name;
    conv.inputs[2] = b_name;
    conv.outputs[0] = bn.outputs[0];
    // The Conv takes the BN's place (the BN is later in topological order and everything the
    // Conv reads is defined before the Conv).
    std::erase_if(g.value_info, [&](const ValueInfo& v) { return v.name == x; });
    g.nodes[bi] = std::move(conv);
    g.nodes.erase(g.nodes.begin() + static_cast<std::ptrdiff_t>(ci));
    --bi;
    ++folded;
  }
  if (folded) drop_unused_initializers(g);
  g.validate();
  return folded;
}

}  // namespace qforge::model
