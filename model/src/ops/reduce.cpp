// ReduceMean, ReduceSum, ReduceMax, ReduceMin over float32. Axes are an attribute before
// version 13 (ReduceSum: before 13; the others: before 18, so always an attribute here) and an
// optional input for ReduceSum from 13 on.
#include <algorithm>
#include <limits>

#include "ops/kernel.h"
#include "ops/parallel.h"

namespace qforge::model::ops {
namespace {

bool axes_from_input(const Node& n) { return n.op_type == "ReduceSum" && n.since_version >= 13; }

// Which axes are reduced; empty axes mean all axes unless noop_with_empty_axes.
std::vector<bool> reduced_axes(const Node& n, std::span<const InferInput> in, std::int64_t rank,
                               bool& noop) {
  std::vector<std::int64_t> axes;
  noop = false;
  if (axes_from_input(n)) {
    if (in.size() > 1 && in[1].present()) axes = int_values(constant_input(n, in, 1, "axes"));
  } else {
    axes = n.attr_ints_or("axes", {});
  }
  std::vector<bool> mask(static_cast<std::size_t>(rank), axes.empty());
  if (axes.empty() && n.attr_int_or("noop_with_empty_axes", 0) != 0) {
    noop = true;
    std::fill(mask.begin(), mask.end(), false);
  }
  for (std::int64_t a : axes) {
    const std::int64_t ax = normalize_axis(n, a, rank);
    if (mask[static_cast<std::size_t>(ax)])
      fail(n, ErrorCode::invalid_argument, "axis " + std::to_string(a) + " is listed twice");
    mask[static_cast<std::size_t>(ax)] = true;
  }
  return mask;
}

std::vector<TensorType> infer_reduce(const Node& n, std::span<const InferInput> in) {
  require_type(n, in, 0, {ElementType::float32});
  const Shape& x = in[0].type->shape;
  bool noop = false;
  const auto mask = reduced_axes(n, in, static_cast<std::int64_t>(x.size()), noop);
  const bool keep = n.attr_int_or("keepdims", 1) != 0;
  Shape out;
  for (std::size_t d = 0; d < x.size(); ++d) {
    if (!mask[d]) out.push_back(x[d]);
    else if (keep) out.push_back(1);
    if (mask[d] && x[d] == 0 && (n.op_type == "ReduceMax" || n.op_type == "ReduceMin"))
      fail(n, ErrorCode::invalid_argument, "reducing an empty axis has no max or min");
  }
  return {{ElementType::float32, out}};
}

enum class Fold { sum, max, min };

template <Fold F>
inline float fold(float acc, float v) {
  if constexpr (F == Fold::max) return std::max(acc, v);
  else if constexpr (F == Fold::min) return std::min(acc, v);
  else return acc + v;
}

// Values are folded into the output in input order; each output element's running state lives
// in the output buffer. Reducing a trailing block of axes (LayerNormalization's ReduceMean over
// the last axis) folds each row on its own, split across the pool. One block of axes with kept
// axes after it (mean pooling's sum over the tokens of [batch, tokens, hidden]) folds whole
// inner rows into the output row, split across the pool by outer index: the same order per
// output element as the walk below, in contiguous vectorisable loops. Any other set of axes
// walks the input once, scattering into the outputs.
// Not inlined: inlined twice into run_reduce, GCC 12 warns falsely (-Wfree-nonheap-object) about
// the index vectors.
template <Fold F>
[[gnu::noinline]] void reduce_into(const Shape& x, const std::vector<bool>& mask, const float* xv,
                                   std::span<float> y) {
  const auto rank = static_cast<std::int64_t>(x.size());
  std::int64_t first = rank;  // the trailing block of reduced axes starts here
  while (first > 0 && mask[static_cast<std::size_t>(first - 1)]) --first;
  if (std::none_of(mask.begin(), mask.begin() + first, [](bool b) { return b; })) {
    std::int64_t cols = 1;
    for (std::int64_t d = first; d < rank; ++d) cols *= x[static_cast<std::size_t>(d)];
    const auto rows = static_cast<std::int64_t>(y.size());
    parallel_for(rows, std::max<std::int64_t>(1, kElementGrain / std::max<std::int64_t>(cols, 1)),
                 [&](std::int64_t begin, std::int64_t end) {
                   for (std::int64_t r = begin; r < end; ++r) {
                     const float* xr = xv + r * cols;
                     float acc = y[static_cast<std::size_t>(r)];
                     for (std::int64_t j = 0; j < cols; ++j) acc = fold<F>(acc, xr[j]);
                     y[static_cast<std::size_t>(r)] = acc;
                   }
                 });
    return;
  }
  // Here some axis before `first` is reduced (else the rows above ran).
  std::int64_t block = 0;  // the first reduced axis; [block, end) is reduced
  while (!mask[static_cast<std::size_t>(block)]) ++block;
  std::int64_t end = block;
  while (end < rank && mask[static_cast<std::size_t>(end)]) ++end;
  if (std::none_of(mask.begin() + end, mask.end(), [](bool b) { return b; })) {
    std::int64_t outer = 1, reduced = 1, inner = 1;
    for (std::int64_t d = 0; d < block; ++d) outer *= x[static_cast<std::size_t>(d)];
    for (std::int64_t d = block; d < end; ++d) reduced *= x[static_cast<std::size_t>(d)];
    for (std::int64_t d = end; d < rank; ++d) inner *= x[static_cast<std::size_t>(d)];
    const std::int64_t per_outer = std::max<std::int64_t>(reduced * inner, 1);
    parallel_for(outer, std::max<std::int64_t>(1, kElementGrain / per_outer),
                 [&](std::int64_t begin, std::int64_t stop) {
                   for (std::int64_t o = begin; o < stop; ++o) {
                     float* yr = y.data() + o * inner;
                     for (std::int64_t r = 0; r < reduced; ++r) {
                       const float* xr = xv + (o * reduced + r) * inner;
                       for (std::int64_t j = 0; j < inner; ++j) yr[j] = fold<F>(yr[j], xr[j]);
                     }
                   }
                 });
    return;
  }
  // Output strides over the input axes (0 on reduced axes).
  Shape ostride(static_cast<std::size_t>(rank), 0);
  std::int64_t step = 1;
  for (std::int64_t d = rank; d-- > 0;)
    if (!mask[static_cast<std::size_t>(d)]) {
      ostride[static_cast<std::size_t>(d)] = step;
      step *= x[static_cast<std::size_t>(d)];
    }
  Shape idx(static_cast<std::size_t>(rank), 0);
  std::int64_t o = 0;
  const std::int64_t count = element_count(x);
  for (std::int64_t i = 0; i < count; ++i) {
    y[static_cast<std::size_t>(o)] = fold<F>(y[static_cast<std::size_t>(o)], xv[i]);
    for (std::int64_t d = rank; d-- > 0;) {
      const auto du = static_cast<std::size_t>(d);
      o += ostride[du];
      if (++idx[du] < x[du]) break;
      o -= ostride[du] * x[du];
      idx[du] = 0;
    }
  }
}

void run_reduce(const Node& n, std::span<const Tensor* const> in, std::span<Tensor* const> out) {
  const Shape& x = in[0]->shape();
  const auto rank = static_cast<std::int64_t>(x.size());
  std::vector<InferInput> ii(in.size());
  std::vector<TensorType> types(in.size());
  for (std::size_t i = 0; i < in.size(); ++i)
    if (in[i]) {
      types[i] = in[i]->tensor_type();
      ii[i] = {&types[i], in[i]};
    }
  bool noop = false;
  const auto mask = reduced_axes(n, ii, rank, noop);
  const std::string& op = n.op_type;
  const float init = op == "ReduceMax"   ? -std::numeric_limits<float>::infinity()
                     : op == "ReduceMin" ? std::numeric_limits<float>::infinity()
                                         : 0.0f;
  auto y = out[0]->values<float>();
  std::fill(y.begin(), y.end(), init);
  const float* xv = in[0]->values<float>().data();
  if (op == "ReduceMax") reduce_into<Fold::max>(x, mask, xv, y);
  else if (op == "ReduceMin") reduce_into<Fold::min>(x, mask, xv, y);
  else reduce_into<Fold::sum>(x, mask, xv, y);
  if (op == "ReduceMean" && !y.empty()) {
    const std::int64_t count = in[0]->size() / static_cast<std::int64_t>(y.size());
    for (float& v : y) v /= static_cast<float>(count);
  }
}

}  // namespace

void register_reduce(KernelRegistry& r) {
  r.add({"ReduceMean", {1, 11, 13}, {"axes", "keepdims"}, nullptr, infer_reduce, run_reduce});
  for (const char* op : {"ReduceMax", "ReduceMin"})
    r.add({op, {1, 11, 12, 13}, {"axes", "keepdims"}, nullptr, infer_reduce, run_reduce});
  r.add({"ReduceSum",
         {1, 11, 13},
         {"axes", "keepdims", "noop_with_empty_axes"},
         nullptr,
         infer_reduce,
         run_reduce});
}

}  // namespace qforge::model::ops
