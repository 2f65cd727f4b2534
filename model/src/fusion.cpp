#include "fusion.h"

#include <algorithm>

#include "ops/conv.h"
#include "ops/parallel.h"
#include "ops/value_range.h"

namespace qforge::model {
namespace {

// The one node reading `tensor` when no other node reads it and it is no graph output.
const Node* sole_consumer(const Graph& g, const std::string& tensor) {
  const std::vector<std::size_t> c = g.consumers_of(tensor);
  if (c.size() != 1 || g.is_graph_output(tensor)) return nullptr;
  return &g.nodes[c[0]];
}

std::size_t index_of(const Graph& g, const Node* n) {
  return static_cast<std::size_t>(n - g.nodes.data());
}

bool is_float(const Graph& g, const std::string& tensor, Shape* shape = nullptr) {
  const ValueInfo* v = g.find_value_info(tensor);
  if (v) {
    if (v->type != ElementType::float32 || !v->fully_known()) return false;
    if (shape) *shape = v->shape();
    return true;
  }
  const Tensor* t = g.initializer(tensor);
  if (!t || t->type() != ElementType::float32) return false;
  if (shape) *shape = t->shape();
  return true;
}

bool scalar_constant(const Graph& g, const std::string& tensor, float& value) {
  const Tensor* t = g.initializer(tensor);
  if (!t || t->type() != ElementType::float32 || t->size() != 1) return false;
  value = t->values<float>()[0];
  return true;
}

// A float32 initializer of `n` values along the last axis (leading extents 1).
const Tensor* row_constant(const Graph& g, const std::string& tensor, std::int64_t n) {
  const Tensor* t = g.initializer(tensor);
  if (!t || t->type() != ElementType::float32 || t->rank() == 0 || t->shape().back() != n ||
      t->size() != n)
    return nullptr;
  return t;
}

// The input of a two-input node other than `tensor`.
const std::string* other_input(const Node& n, const std::string& tensor) {
  if (n.inputs.size() != 2) return nullptr;
  if (n.inputs[0] == tensor) return &n.inputs[1];
  if (n.inputs[1] == tensor) return &n.inputs[0];
  return nullptr;
}

// v = Add(x, bias) read only by `readers` (node indices): the Add and its x and bias, if so.
const Node* bias_add(const Graph& g, const std::string& v, std::vector<std::size_t> readers,
                     const Shape& shape, std::string& x, std::string& bias) {
  const Node* add = g.producer_of(v);
  if (!add || add->op_type != "Add" || add->inputs.size() != 2 || g.is_graph_output(v) ||
      shape.empty())
    return nullptr;
  std::vector<std::size_t> c = g.consumers_of(v);
  std::sort(c.begin(), c.end());
  std::sort(readers.begin(), readers.end());
  if (c != readers) return nullptr;
  for (int i = 0; i < 2; ++i) {
    Shape s;
    if (row_constant(g, add->inputs[1 - i], shape.back()) && !g.initializer(add->inputs[i]) &&
        is_float(g, add->inputs[i], &s) && s == shape) {
      x = add->inputs[i];
      bias = add->inputs[1 - i];
      return add;
    }
  }
  return nullptr;
}

bool gelu(const Graph& g, std::size_t erf_index, FusedChain& chain) {
  const Node& erf = g.nodes[erf_index];
  const Node* div = g.producer_of(erf.input(0));
  if (!div || div->op_type != "Div" || div->inputs.size() != 2 ||
      sole_consumer(g, erf.input(0)) != &erf || !scalar_constant(g, div->input(1), chain.divisor))
    return false;
  const std::string& v = div->input(0);
  Shape shape;
  if (!is_float(g, v, &shape) || g.initializer(v)) return false;
  const Node* add_one = sole_consumer(g, erf.outputs[0]);
  if (!add_one || add_one->op_type != "Add") return false;
  const std::string* one = other_input(*add_one, erf.outputs[0]);
  if (!one || !scalar_constant(g, *one, chain.one)) return false;
  const Node* product = sole_consumer(g, add_one->outputs[0]);
  if (!product || product->op_type != "Mul") return false;
  const std::string* h = other_input(*product, add_one->outputs[0]);
  if (!h) return false;
  const Node* halve = g.producer_of(*h);
  if (!halve || halve->op_type != "Mul" || sole_consumer(g, *h) != product) return false;
  const std::string* half = other_input(*halve, v);
  if (!half || !scalar_constant(g, *half, chain.half)) return false;
  Shape out;
  if (!is_float(g, product->outputs[0], &out) || out != shape) return false;
  chain.kind = FusedChain::Kind::gelu;
  chain.nodes = {index_of(g, div), erf_index, index_of(g, add_one), index_of(g, halve),
                 index_of(g, product)};
  chain.inner = {erf.input(0), erf.outputs[0], add_one->outputs[0], *h};
  chain.operands[kX] = v;
  if (const Node* add = bias_add(g, v, {index_of(g, div), index_of(g, halve)}, shape,
                                 chain.operands[kX], chain.operands[kBias])) {
    chain.nodes.push_back(index_of(g, add));
    chain.inner.push_back(v);
  }
  return true;
}

// The axis a Softmax or LayerNormalization normalises is the last one.
bool last_axis(const Node& n, std::int64_t rank, std::int64_t fallback) {
  std::int64_t axis = n.attr_int_or("axis", fallback);
  if (axis < 0) axis += rank;
  return axis == rank - 1;
}

bool softmax(const Graph& g, std::size_t index, FusedChain& chain) {
  const Node& sm = g.nodes[index];
  Shape shape;
  if (!is_float(g, sm.input(0), &shape) || shape.empty() ||
      !last_axis(sm, static_cast<std::int64_t>(shape.size()), sm.since_version >= 13 ? -1 : 1))
    return false;
  const Node* add = g.producer_of(sm.input(0));
  if (!add || add->op_type != "Add" || add->inputs.size() != 2 ||
      sole_consumer(g, sm.input(0)) != &sm)
    return false;
  // The scores: of the output's shape and, when both are, the one a Div computes.
  int main = -1;
  for (int i = 1; i >= 0; --i) {
    Shape s;
    if (!is_float(g, add->inputs[i], &s) || g.initializer(add->inputs[i])) continue;
    const Node* p = g.producer_of(add->inputs[i]);
    if (s == shape && (main < 0 || (p && p->op_type == "Div"))) main = i;
  }
  if (main < 0) return false;
  Shape mask;
  if (!is_float(g, add->inputs[1 - main], &mask) || mask.size() > shape.size()) return false;
  for (std::size_t d = 0; d < mask.size(); ++d) {
    const std::int64_t e = mask[mask.size() - 1 - d];
    if (e != 1 && e != shape[shape.size() - 1 - d]) return false;
  }
  chain.kind = FusedChain::Kind::softmax;
  chain.nodes = {index_of(g, add), index};
  chain.inner = {sm.input(0)};
  chain.operands[kX] = add->inputs[main];
  chain.operands[kOther] = add->inputs[1 - main];
  const Node* div = g.producer_of(chain.operands[kX]);
  if (div && div->op_type == "Div" && div->inputs.size() == 2 &&
      sole_consumer(g, chain.operands[kX]) == add &&
      scalar_constant(g, div->input(1), chain.divisor)) {
    Shape s;
    if (is_float(g, div->input(0), &s) && s == shape && !g.initializer(div->input(0))) {
      chain.has_divisor = true;
      chain.nodes.insert(chain.nodes.begin(), index_of(g, div));
      chain.inner.push_back(chain.operands[kX]);
      chain.operands[kX] = div->input(0);
    }
  }
  return true;
}

bool layernorm(const Graph& g, std::size_t index, FusedChain& chain) {
  const Node& ln = g.nodes[index];
  Shape shape;
  if (!is_float(g, ln.input(0), &shape) || shape.empty() ||
      !last_axis(ln, static_cast<std::int64_t>(shape.size()), -1) ||
      ln.attr_int_or("stash_type", 1) != 1)
    return false;
  for (std::size_t i = 1; i < ln.outputs.size(); ++i)
    if (!ln.outputs[i].empty()) return false;
  const std::int64_t cols = shape.back();
  if (!row_constant(g, ln.input(1), cols)) return false;
  chain.operands[kScale] = ln.input(1);
  if (ln.has_input(2)) {
    if (!row_constant(g, ln.input(2), cols)) return false;
    chain.operands[kLnBias] = ln.input(2);
  }
  chain.epsilon = ln.attr_float_or("epsilon", 1e-5f);
  const Node* add = g.producer_of(ln.input(0));
  if (!add || add->op_type != "Add" || add->inputs.size() != 2 ||
      sole_consumer(g, ln.input(0)) != &ln)
    return false;
  for (const std::string& in : add->inputs) {
    Shape s;
    if (!is_float(g, in, &s) || s != shape || g.initializer(in)) return false;
  }
  chain.kind = FusedChain::Kind::layernorm;
  chain.nodes = {index_of(g, add), index};
  chain.inner = {ln.input(0)};
  chain.operands[kX] = add->inputs[0];
  chain.operands[kOther] = add->inputs[1];
  for (int i = 0; i < 2; ++i) {
    std::string x;
    if (const Node* b =
            bias_add(g, add->inputs[i], {index_of(g, add)}, shape, x, chain.operands[kBias])) {
      chain.nodes.push_back(index_of(g, b));
      chain.inner.push_back(add->inputs[i]);
      chain.operands[kOther] = add->inputs[1 - i];
      chain.operands[kX] = x;
      break;
    }
  }
  return true;
}

bool conv_chain(const Graph& g, std::size_t index, FusedChain& chain) {
  const Node& conv = g.nodes[index];
  Shape x, y;
  if (conv.outputs.size() != 1 || !conv.has_input(0) || !conv.has_input(1) ||
      !is_float(g, conv.input(0), &x) || x.size() != 4 || !is_float(g, conv.outputs[0], &y) ||
      !is_float(g, conv.input(1)) || (conv.has_input(2) && !is_float(g, conv.input(2))))
    return false;
  chain.nodes = {index};
  std::string last = conv.outputs[0];
  const Node* next = sole_consumer(g, last);
  if (next && next->op_type == "Relu" && next->outputs.size() == 1 && next->input(0) == last &&
      is_float(g, next->outputs[0])) {
    chain.relu = true;
    chain.inner.push_back(last);
    chain.nodes.push_back(index_of(g, next));
    last = next->outputs[0];
    next = sole_consumer(g, last);
  }
  Shape pooled;
  if (next && next->op_type == "MaxPool" && next->input(0) == last &&
      (next->outputs.size() == 1 || next->outputs[1].empty()) &&
      next->attr_int_or("storage_order", 0) == 0 &&
      next->attr_ints_or("kernel_shape", {}).size() == 2 &&
      is_float(g, next->outputs[0], &pooled)) {
    chain.has_pool = true;
    chain.pool = *next;
    chain.pool_input = y;
    chain.inner.push_back(last);
    chain.nodes.push_back(index_of(g, next));
  }
  if (chain.nodes.size() == 1) return false;
  chain.kind = FusedChain::Kind::conv;
  chain.conv = conv;
  chain.operands[kX] = conv.input(0);
  chain.operands[kOther] = conv.input(1);
  if (conv.has_input(2)) chain.operands[kBias] = conv.input(2);
  return true;
}

// A Transpose with permutation `perm` writing `t`, which only `reader` reads.
const Node* transpose_into(const Graph& g, const std::string& t, const Node* reader,
                           const std::vector<std::int64_t>& perm) {
  const Node* p = g.producer_of(t);
  if (!p || p->op_type != "Transpose" || p->inputs.size() != 1 || p->outputs.size() != 1 ||
      sole_consumer(g, t) != reader || p->attr_ints_or("perm", {}) != perm)
    return nullptr;
  return p;
}

bool attention(const Graph& g, std::size_t index, FusedChain& chain) {
  const Node& sm = g.nodes[index];
  Shape probs;
  if (sm.outputs.size() != 1 || !is_float(g, sm.outputs[0], &probs) || probs.size() != 4 ||
      !last_axis(sm, 4, sm.since_version >= 13 ? -1 : 1))
    return false;
  // Down: the context product with the values, and the merge Transpose.
  const Node* ctx = sole_consumer(g, sm.outputs[0]);
  if (!ctx || ctx->op_type != "MatMul" || ctx->inputs.size() != 2 ||
      ctx->input(0) != sm.outputs[0] || ctx->input(1) == sm.outputs[0])
    return false;
  const Node* merge = sole_consumer(g, ctx->outputs[0]);
  const Node* vt = transpose_into(g, ctx->input(1), ctx, {0, 2, 1, 3});
  if (!merge || merge->op_type != "Transpose" || merge->outputs.size() != 1 ||
      merge->attr_ints_or("perm", {}) != std::vector<std::int64_t>{0, 2, 1, 3} || !vt)
    return false;
  std::vector<const Node*> nodes = {&sm, ctx, merge, vt};
  std::vector<std::string> inner = {sm.outputs[0], ctx->outputs[0], ctx->input(1)};
  // Up: [mask Add] <- [Div by a constant] <- the scores product.
  const Node* reader = &sm;
  std::string x = sm.input(0);
  const Node* p = g.producer_of(x);
  std::string mask;
  if (p && p->op_type == "Add" && p->inputs.size() == 2 && sole_consumer(g, x) == reader) {
    int main = -1;
    for (int i = 0; i < 2 && main < 0; ++i) {
      const Node* pp = g.producer_of(p->inputs[i]);
      Shape s;
      if (pp && (pp->op_type == "Div" || pp->op_type == "MatMul") &&
          is_float(g, p->inputs[i], &s) && s == probs && sole_consumer(g, p->inputs[i]) == p)
        main = i;
    }
    if (main < 0) return false;
    mask = p->inputs[1 - main];
    Shape m;
    if (!is_float(g, mask, &m) || m.size() > probs.size()) return false;
    for (std::size_t d = 0; d < m.size(); ++d) {
      const std::int64_t e = m[m.size() - 1 - d];
      if (e != 1 && e != probs[probs.size() - 1 - d]) return false;
    }
    nodes.push_back(p);
    inner.push_back(x);
    reader = p;
    x = p->inputs[main];
    p = g.producer_of(x);
  }
  if (p && p->op_type == "Div" && p->inputs.size() == 2 && sole_consumer(g, x) == reader &&
      scalar_constant(g, p->input(1), chain.divisor)) {
    chain.has_divisor = true;
    nodes.push_back(p);
    inner.push_back(x);
    reader = p;
    x = p->input(0);
    p = g.producer_of(x);
  }
  Shape scores;
  if (!p || p->op_type != "MatMul" || p->inputs.size() != 2 || sole_consumer(g, x) != reader ||
      !is_float(g, x, &scores) || scores != probs)
    return false;
  nodes.push_back(p);
  inner.push_back(x);
  // The queries' and the keys' head splits: keys as one Transpose to [B, H, D, T], or as the
  // queries' Transpose followed by a swap of the last two axes.
  const Node* qt = transpose_into(g, p->input(0), p, {0, 2, 1, 3});
  const Node* kt = transpose_into(g, p->input(1), p, {0, 2, 3, 1});
  if (!kt) {
    if (const Node* swap = transpose_into(g, p->input(1), p, {0, 1, 3, 2})) {
      kt = transpose_into(g, swap->input(0), swap, {0, 2, 1, 3});
      if (kt) {
        nodes.push_back(swap);
        inner.push_back(swap->input(0));
      }
    }
  }
  if (!qt || !kt || p->input(0) == p->input(1)) return false;
  nodes.push_back(qt);
  nodes.push_back(kt);
  inner.push_back(p->input(0));
  inner.push_back(p->input(1));
  // The heads' layouts: q [B, S, H, D], k [B, T, H, D], v [B, T, H, E]; y [B, S, H, E].
  Shape q, k, v, y;
  if (!is_float(g, qt->input(0), &q) || !is_float(g, kt->input(0), &k) ||
      !is_float(g, vt->input(0), &v) || !is_float(g, merge->outputs[0], &y) || q.size() != 4 ||
      k.size() != 4 || v.size() != 4)
    return false;
  const std::int64_t b = probs[0], h = probs[1], s = probs[2], t = probs[3];
  if (q != Shape{b, s, h, q[3]} || k != Shape{b, t, h, q[3]} || v != Shape{b, t, h, v[3]} ||
      y != Shape{b, s, h, v[3]})
    return false;
  chain.kind = FusedChain::Kind::attention;
  chain.nodes.clear();
  for (const Node* n : nodes) chain.nodes.push_back(index_of(g, n));
  if (*std::max_element(chain.nodes.begin(), chain.nodes.end()) != index_of(g, merge)) return false;
  chain.inner = std::move(inner);
  chain.operands[kX] = qt->input(0);
  chain.operands[kOther] = mask;
  chain.operands[kKey] = kt->input(0);
  chain.operands[kValue] = vt->input(0);
  return true;
}

}  // namespace

std::vector<FusedChain> find_fused_chains(const Graph& graph) {
  std::vector<FusedChain> chains;
  std::vector<bool> used(graph.nodes.size(), false);
  // Attention first: its Softmax would otherwise start a softmax chain.
  for (const bool whole_attention : {true, false})
    for (std::size_t i = 0; i < graph.nodes.size(); ++i) {
      const Node& n = graph.nodes[i];
      FusedChain chain;
      const bool found =
          whole_attention ? n.op_type == "Softmax" && attention(graph, i, chain)
                          : (n.op_type == "Erf" && gelu(graph, i, chain)) ||
                                (n.op_type == "Softmax" && softmax(graph, i, chain)) ||
                                (n.op_type == "LayerNormalization" && layernorm(graph, i, chain)) ||
                                (n.op_type == "Conv" && conv_chain(graph, i, chain));
      if (!found) continue;
      std::sort(chain.nodes.begin(), chain.nodes.end());
      if (std::any_of(chain.nodes.begin(), chain.nodes.end(),
                      [&](std::size_t k) { return used[k]; }))
        continue;
      for (std::size_t k : chain.nodes) used[k] = true;
      chains.push_back(std::move(chain));
    }
  // Sorted by their last node, the one whose step runs them.
  std::sort(chains.begin(), chains.end(), [](const FusedChain& a, const FusedChain& b) {
    return a.nodes.back() < b.nodes.back();
  });
  return chains;
}

namespace {

void run_attention(const FusedChain& chain, const std::array<const Tensor*, 5>& operands, Tensor& y,
                   ops::RangeSink* range) {
  const Shape& q = operands[kX]->shape();
  const Shape& v = operands[kValue]->shape();
  ops::FusedAttention a;
  a.q = operands[kX]->values<float>().data();
  a.k = operands[kKey]->values<float>().data();
  a.v = operands[kValue]->values<float>().data();
  a.y = y.values<float>().data();
  a.batch = q[0];
  a.q_len = q[1];
  a.heads = q[2];
  a.depth = q[3];
  a.kv_len = v[1];
  a.v_depth = v[3];
  a.has_divisor = chain.has_divisor;
  a.divisor = chain.divisor;
  a.products = ops::attention_products();
  a.range = range;
  if (const Tensor* mask = operands[kOther]) {
    // Strides along [B, H, S, T], the mask's axes aligned to the right; 0 where it broadcasts.
    const Shape& m = mask->shape();
    std::int64_t step = 1;
    for (std::size_t i = 0; i < m.size(); ++i) {
      const std::size_t dm = m.size() - 1 - i, d = 3 - i;
      a.mask_strides[d] = m[dm] == 1 ? 0 : step;
      step *= m[dm];
    }
    a.mask = mask->values<float>().data();
  }
  ops::fused_attention(a);
}

// A task's GELU in blocks of about kRangeBlock values, each block's range widened while the
// block is still in L1 (a task may span megabytes), merged once per task. Blocks hold whole
// rows when there is a bias, so each block starts at the bias's first element.
constexpr std::int64_t kRangeBlock = 4096;
void gelu_with_range(const ops::GeluErf& g, const float* x, float* y, std::int64_t n,
                     std::int64_t row, ops::RangeSink& sink) {
  const std::int64_t block = std::max<std::int64_t>(1, kRangeBlock / row) * row;
  float lo = 0.0f, hi = 0.0f;
  for (std::int64_t i = 0; i < n; i += block) {
    const std::int64_t len = std::min(block, n - i);
    ops::gelu_erf(g, x + i, y + i, len);
    ops::widen_range(y + i, len, lo, hi);
  }
  sink.merge(lo, hi);
}

void run_chain_kernel(const FusedChain& chain, const std::array<const Tensor*, 5>& operands,
                      Tensor& y, ops::RangeSink* range) {
  if (chain.kind == FusedChain::Kind::conv) {
    ops::ConvEpilogue e;
    e.relu = chain.relu;
    ops::WindowGeometry pool;
    if (chain.has_pool) {
      pool = ops::max_pool_window(chain.pool, chain.pool_input);
      e.pool = &pool;
    }
    ops::conv_fused(chain.conv, *operands[kX], *operands[kOther], operands[kBias], e, y);
    return;
  }
  if (chain.kind == FusedChain::Kind::attention) {
    run_attention(chain, operands, y, range);
    return;
  }
  const Tensor& x = *operands[kX];
  const Tensor* other = operands[kOther];
  const Tensor* bias = operands[kBias];
  const float* xv = x.values<float>().data();
  float* yv = y.values<float>().data();
  const std::int64_t n = static_cast<std::int64_t>(x.size());
  if (n == 0) return;
  const Shape& shape = x.shape();
  const std::int64_t cols = shape.back();
  const std::int64_t rows = cols == 0 ? 0 : n / cols;
  switch (chain.kind) {
    case FusedChain::Kind::gelu: {
      ops::GeluErf g;
      g.divisor = chain.divisor;
      g.one = chain.one;
      g.half = chain.half;
      if (bias) {
        g.bias = bias->values<float>().data();
        g.bias_n = cols;
        // Whole rows per task, so each range starts at the bias's first element.
        ops::parallel_for(rows, std::max<std::int64_t>(1, ops::kLibmGrain / cols),
                          [&](std::int64_t begin, std::int64_t end) {
                            const float* from = xv + begin * cols;
                            float* to = yv + begin * cols;
                            const std::int64_t len = (end - begin) * cols;
                            if (range) gelu_with_range(g, from, to, len, cols, *range);
                            else ops::gelu_erf(g, from, to, len);
                          });
      } else {
        ops::parallel_for(n, ops::kLibmGrain, [&](std::int64_t begin, std::int64_t end) {
          if (range) gelu_with_range(g, xv + begin, yv + begin, end - begin, 1, *range);
          else ops::gelu_erf(g, xv + begin, yv + begin, end - begin);
        });
      }
      return;
    }
    case FusedChain::Kind::softmax: {
      const Shape& m = other->shape();
      const std::size_t rank = shape.size();
      // The mask's strides along the output's axes: 0 where it has extent 1 or no axis.
      std::vector<std::int64_t> strides(rank, 0);
      std::int64_t step = 1;
      for (std::size_t i = 0; i < m.size(); ++i) {
        const std::size_t dm = m.size() - 1 - i, d = rank - 1 - i;
        strides[d] = m[dm] == 1 ? 0 : step;
        step *= m[dm];
      }
      ops::MaskedSoftmax s;
      s.has_divisor = chain.has_divisor;
      s.divisor = chain.divisor;
      s.mask = other->values<float>().data();
      s.outer_shape = shape.data();
      s.mask_strides = strides.data();
      s.outer_rank = static_cast<int>(rank) - 1;
      s.mask_step = strides[rank - 1];
      ops::masked_softmax(s, xv, yv, rows, cols);
      return;
    }
    case FusedChain::Kind::conv:
    case FusedChain::Kind::attention: return;  // run above
    case FusedChain::Kind::layernorm: {
      ops::AddLayerNorm a;
      a.bias = bias ? bias->values<float>().data() : nullptr;
      a.residual = other->values<float>().data();
      a.scale = operands[kScale]->values<float>().data();
      a.ln_bias = operands[kLnBias] ? operands[kLnBias]->values<float>().data() : nullptr;
      a.epsilon = chain.epsilon;
      a.range = range;
      ops::add_layernorm(a, xv, yv, rows, cols);
      return;
    }
  }
}

}  // namespace

void run_fused_chain(const FusedChain& chain, const std::array<const Tensor*, 5>& operands,
                     Tensor& y, ValueRange* range) {
  const bool ranged = chain.kind == FusedChain::Kind::gelu ||
                      chain.kind == FusedChain::Kind::layernorm ||
                      chain.kind == FusedChain::Kind::attention;
  ops::RangeSink sink;
  ops::RangeSink* const into = range && ranged ? &sink : nullptr;
  run_chain_kernel(chain, operands, y, into);
  if (into) *range = sink.range();
}

}  // namespace qforge::model
