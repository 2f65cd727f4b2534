#include "matmul_spec.h"

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

// A's shape and the product of its leading extents.
std::int64_t rows_of_input(const Graph& graph, const Node& node, std::int64_t rank_at_least) {
  const ValueInfo* a = graph.find_value_info(node.input(0));
  if (!a || !a->fully_known())
    refuse(node, "the shape of input '" + node.input(0) + "' is not known");
  if (a->type != ElementType::float32)
    refuse(node, "input '" + node.input(0) + "' is " + std::string(to_string(a->type)) +
                     "; quantized layers need float32 activations");
  const Shape s = a->shape();
  if (static_cast<std::int64_t>(s.size()) < rank_at_least)
    refuse(node, "input '" + node.input(0) + "' is " + qforge::to_string(s) + "; rank " +
                     std::to_string(rank_at_least) + " or more is supported");
  std::int64_t m = 1;
  for (std::size_t d = 0; d + 1 < s.size(); ++d) m *= s[d];
  return m;
}

MatmulSpec matmul(const Graph& graph, const Node& node) {
  MatmulSpec spec;
  spec.input = node.input(0);
  spec.output = node.outputs.at(0);
  spec.m = rows_of_input(graph, node, 2);
  const Tensor& b = float_initializer(graph, node, 1, "B");
  if (b.rank() != 2)
    refuse(node, "B is " + qforge::to_string(b.shape()) + "; a 2-D weight [K, N] is supported");
  spec.k = b.shape()[0];
  spec.n = b.shape()[1];
  spec.layout = MatrixLayout::kn;
  const auto v = b.values<float>();
  spec.weight.assign(v.begin(), v.end());
  return spec;
}

MatmulSpec gemm(const Graph& graph, const Node& node) {
  if (node.attr_int_or("transA", 0) != 0)
    refuse(node, "transA = 1 is not supported for quantized Gemm (transA = 0 with any transB is)");
  MatmulSpec spec;
  spec.input = node.input(0);
  spec.output = node.outputs.at(0);
  spec.m = rows_of_input(graph, node, 2);
  const Tensor& b = float_initializer(graph, node, 1, "B");
  if (b.rank() != 2) refuse(node, "B is " + qforge::to_string(b.shape()) + "; Gemm's B is 2-D");
  const bool tb = node.attr_int_or("transB", 0) != 0;
  spec.layout = tb ? MatrixLayout::nk : MatrixLayout::kn;
  spec.k = tb ? b.shape()[1] : b.shape()[0];
  spec.n = tb ? b.shape()[0] : b.shape()[1];
  const float alpha = node.attr_float_or("alpha", 1.0f);
  const auto v = b.values<float>();
  spec.weight.resize(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) spec.weight[i] = alpha * v[i];
  if (node.inputs.size() > 2 && node.has_input(2)) {
    const Tensor& c = float_initializer(graph, node, 2, "C");
    const float beta = node.attr_float_or("beta", 1.0f);
    const auto cv = c.values<float>();
    const bool per_column =
        c.size() == spec.n && (c.rank() == 1 || (c.rank() == 2 && c.shape()[0] == 1));
    if (per_column) {
      for (float x : cv) spec.bias.push_back(beta * x);
    } else if (c.size() == 1) {
      spec.bias.assign(static_cast<std::size_t>(spec.n), beta * cv[0]);
    } else {
      refuse(node, "C is " + qforge::to_string(c.shape()) + "; a bias of shape [" +
                       std::to_string(spec.n) + "], [1, " + std::to_string(spec.n) +
                       "] or one element is supported");
    }
  }
  return spec;
}

}  // namespace

bool is_quantizable_matmul(const std::string& op_type) {
  return op_type == "MatMul" || op_type == "Gemm";
}

MatmulSpec matmul_spec(const Graph& graph, const Node& node) {
  if (node.op_type == "MatMul") return matmul(graph, node);
  if (node.op_type == "Gemm") return gemm(graph, node);
  refuse(node, "quantized " + node.op_type + " is not a matmul; conv_spec reads Conv");
}

}  // namespace qforge::model::quantize
