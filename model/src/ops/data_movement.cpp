// Ops that move elements without arithmetic: Transpose, Concat, Split, Slice, Gather, Pad. They
// copy bytes, so they work for every element type (Pad's constant must match the type).
#include <algorithm>
#include <cstring>

#include "ops/kernel.h"
#include "ops/parallel.h"

namespace qforge::model::ops {
namespace {

Shape strides_of(const Shape& s) {
  Shape st(s.size(), 1);
  for (std::size_t d = s.size(); d-- > 1;) st[d - 1] = st[d] * s[d];
  return st;
}

// Calls f(out_linear, in_offset) for output elements [begin, end), where in_offset is
// sum(index_d * in_step[d]) + in_base over the output index (an odometer walk).
template <class F>
void walk_range(const Shape& out, const Shape& in_step, std::int64_t in_base, std::int64_t begin,
                std::int64_t end, F&& f) {
  if (begin >= end) return;
  Shape idx(out.size(), 0);
  std::int64_t off = in_base;
  std::int64_t rest = begin;
  for (std::size_t d = out.size(); d-- > 0;) {
    idx[d] = rest % out[d];
    rest /= out[d];
    off += idx[d] * in_step[d];
  }
  for (std::int64_t i = begin; i < end; ++i) {
    f(i, off);
    for (std::size_t d = out.size(); d-- > 0;) {
      off += in_step[d];
      if (++idx[d] < out[d]) break;
      off -= in_step[d] * out[d];
      idx[d] = 0;
    }
  }
}

template <class F>
void walk(const Shape& out, const Shape& in_step, std::int64_t in_base, F&& f) {
  walk_range(out, in_step, in_base, 0, element_count(out), f);
}

// ---- Transpose ----
std::vector<std::int64_t> perm_of(const Node& n, std::size_t rank) {
  std::vector<std::int64_t> perm(rank);
  for (std::size_t i = 0; i < rank; ++i) perm[i] = static_cast<std::int64_t>(rank - 1 - i);
  perm = n.attr_ints_or("perm", perm);
  std::vector<bool> seen(rank, false);
  if (perm.size() != rank)
    fail(n, ErrorCode::invalid_argument,
         "perm has " + std::to_string(perm.size()) + " entries for rank " + std::to_string(rank));
  for (std::int64_t p : perm) {
    if (p < 0 || p >= static_cast<std::int64_t>(rank) || seen[static_cast<std::size_t>(p)])
      fail(n, ErrorCode::invalid_argument,
           "perm is not a permutation of 0.." + std::to_string(rank - 1));
    seen[static_cast<std::size_t>(p)] = true;
  }
  return perm;
}
std::vector<TensorType> infer_transpose(const Node& n, std::span<const InferInput> in) {
  const TensorType& x = input_type(n, in, 0);
  const auto perm = perm_of(n, x.shape.size());
  Shape out;
  for (std::int64_t p : perm) out.push_back(x.shape[static_cast<std::size_t>(p)]);
  return {{x.type, out}};
}
// A transpose as copies: output axes with extents `ext` whose input steps are `step` (elements),
// after dropping extent-1 axes and merging output axes that are adjacent in the input too.
struct TransposePlan {
  Shape ext, step;
};

TransposePlan plan_transpose(const Shape& out, const Shape& in_step) {
  TransposePlan p;
  for (std::size_t d = 0; d < out.size(); ++d) {
    if (out[d] == 1) continue;
    if (!p.ext.empty() && p.step.back() == in_step[d] * out[d]) {
      p.ext.back() *= out[d];
      p.step.back() = in_step[d];
    } else {
      p.ext.push_back(out[d]);
      p.step.push_back(in_step[d]);
    }
  }
  return p;
}

// Input offset of the output element whose index over the axes [0, axes) is `linear`.
std::int64_t input_offset(const TransposePlan& p, std::size_t axes, std::int64_t linear) {
  std::int64_t off = 0;
  for (std::size_t d = axes; d-- > 0;) {
    off += linear % p.ext[d] * p.step[d];
    linear /= p.ext[d];
  }
  return off;
}

template <class T>
void transpose_as(const TransposePlan& p, const T* x, T* y) {
  const std::size_t rank = p.ext.size();
  if (rank == 0) {
    y[0] = x[0];
    return;
  }
  const std::int64_t last = p.ext[rank - 1];
  std::int64_t rows = 1;
  for (std::size_t d = 0; d + 1 < rank; ++d) rows *= p.ext[d];
  if (p.step[rank - 1] == 1) {
    // The last axis stays innermost (heads split or merged: [B,S,H,D] <-> [B,H,S,D]): each output
    // row is one contiguous run of the input.
    parallel_for(rows, std::max<std::int64_t>(1, kElementGrain / last),
                 [&](std::int64_t begin, std::int64_t end) {
                   for (std::int64_t r = begin; r < end; ++r)
                     std::memcpy(y + r * last, x + input_offset(p, rank - 1, r),
                                 static_cast<std::size_t>(last) * sizeof(T));
                 });
    return;
  }
  // The input's innermost axis moves to output axis `a` < rank - 1: transpose in square tiles
  // of the plane (a, last), so that both the reads along a and the writes along last stay
  // within a few cache lines. The other axes are walked around the plane.
  std::size_t a = 0;
  while (p.step[a] != 1) ++a;
  const std::int64_t ea = p.ext[a];
  std::int64_t ostep_a = 1;  // output step of axis a
  for (std::size_t d = a + 1; d < rank; ++d) ostep_a *= p.ext[d];
  // Planes: every index of the axes other than a and last, as (outer before a, mid after a).
  std::int64_t outer = 1, mid = 1;
  for (std::size_t d = 0; d < a; ++d) outer *= p.ext[d];
  for (std::size_t d = a + 1; d + 1 < rank; ++d) mid *= p.ext[d];
  TransposePlan mid_plan;
  mid_plan.ext.assign(p.ext.begin() + static_cast<std::ptrdiff_t>(a) + 1, p.ext.end() - 1);
  mid_plan.step.assign(p.step.begin() + static_cast<std::ptrdiff_t>(a) + 1, p.step.end() - 1);
  constexpr std::int64_t kTile = 16;
  const std::int64_t tiles_a = (ea + kTile - 1) / kTile;
  const std::int64_t sl = p.step[rank - 1];
  parallel_for(outer * mid * tiles_a, std::max<std::int64_t>(1, kElementGrain / (kTile * last)),
               [&](std::int64_t begin, std::int64_t end) {
                 for (std::int64_t t = begin; t < end; ++t) {
                   const std::int64_t ta = t % tiles_a, plane = t / tiles_a;
                   const std::int64_t o = plane / mid, md = plane % mid;
                   const std::int64_t in_base =
                       input_offset(p, a, o) + input_offset(mid_plan, mid_plan.ext.size(), md);
                   const std::int64_t out_base = o * ea * ostep_a + md * last;
                   const std::int64_t i0 = ta * kTile, i1 = std::min(ea, i0 + kTile);
                   for (std::int64_t j0 = 0; j0 < last; j0 += kTile) {
                     const std::int64_t j1 = std::min(last, j0 + kTile);
                     for (std::int64_t i = i0; i < i1; ++i)
                       for (std::int64_t j = j0; j < j1; ++j)
                         y[out_base + i * ostep_a + j] = x[in_base + i + j * sl];
                   }
                 }
               });
}

void run_transpose(const Node& n, std::span<const Tensor* const> in, std::span<Tensor* const> out) {
  const auto perm = perm_of(n, in[0]->shape().size());
  const Shape st = strides_of(in[0]->shape());
  Shape step;
  for (std::int64_t p : perm) step.push_back(st[static_cast<std::size_t>(p)]);
  const Shape& os = out[0]->shape();
  if (element_count(os) == 0) return;
  const TransposePlan plan = plan_transpose(os, step);
  const std::byte* x = in[0]->data();
  std::byte* y = out[0]->data();
  switch (element_size(in[0]->type())) {
    case 1:
      transpose_as(plan, reinterpret_cast<const std::uint8_t*>(x),
                   reinterpret_cast<std::uint8_t*>(y));
      break;
    case 2:
      transpose_as(plan, reinterpret_cast<const std::uint16_t*>(x),
                   reinterpret_cast<std::uint16_t*>(y));
      break;
    case 4:
      transpose_as(plan, reinterpret_cast<const std::uint32_t*>(x),
                   reinterpret_cast<std::uint32_t*>(y));
      break;
    default:
      transpose_as(plan, reinterpret_cast<const std::uint64_t*>(x),
                   reinterpret_cast<std::uint64_t*>(y));
      break;
  }
}

// ---- Concat ----
std::vector<TensorType> infer_concat(const Node& n, std::span<const InferInput> in) {
  const TensorType& first = input_type(n, in, 0);
  if (!n.has_attribute("axis")) fail(n, ErrorCode::invalid_argument, "axis is required");
  const auto rank = static_cast<std::int64_t>(first.shape.size());
  const auto axis = static_cast<std::size_t>(normalize_axis(n, n.attr_int("axis"), rank));
  Shape out = first.shape;
  out[axis] = 0;
  for (std::size_t i = 0; i < in.size(); ++i) {
    const TensorType& t = input_type(n, in, i);
    bool fits = t.type == first.type && t.shape.size() == first.shape.size();
    for (std::size_t d = 0; fits && d < t.shape.size(); ++d)
      fits = d == axis || t.shape[d] == first.shape[d];
    if (!fits)
      fail(n, ErrorCode::shape_mismatch,
           "input " + std::to_string(i) + " " + to_string(t) + " does not fit " + to_string(first) +
               " along axis " + std::to_string(axis));
    out[axis] += t.shape[axis];
  }
  return {{first.type, out}};
}
void run_concat(const Node& n, std::span<const Tensor* const> in, std::span<Tensor* const> out) {
  const Shape& s = out[0]->shape();
  const auto axis = static_cast<std::size_t>(
      normalize_axis(n, n.attr_int("axis"), static_cast<std::int64_t>(s.size())));
  const std::size_t es = element_size(out[0]->type());
  std::int64_t outer = 1, inner = 1;
  for (std::size_t d = 0; d < s.size(); ++d) {
    if (d < axis) outer *= s[d];
    if (d > axis) inner *= s[d];
  }
  std::byte* y = out[0]->data();
  const std::size_t out_row = static_cast<std::size_t>(s[axis] * inner) * es;
  std::size_t col = 0;
  for (const Tensor* t : in) {
    const std::size_t row = static_cast<std::size_t>(t->shape()[axis] * inner) * es;
    for (std::int64_t o = 0; o < outer; ++o)
      if (row)
        std::memcpy(y + static_cast<std::size_t>(o) * out_row + col,
                    t->data() + static_cast<std::size_t>(o) * row, row);
    col += row;
  }
}

// ---- Split: `split` attribute before 13, input from 13; equal parts when absent ----
std::vector<std::int64_t> split_sizes(const Node& n, std::span<const InferInput> in,
                                      std::int64_t extent) {
  std::vector<std::int64_t> sizes;
  if (n.since_version >= 13) {
    if (in.size() > 1 && in[1].present()) sizes = int_values(constant_input(n, in, 1, "split"));
  } else {
    sizes = n.attr_ints_or("split", {});
  }
  const auto parts = static_cast<std::int64_t>(n.outputs.size());
  if (sizes.empty()) {
    if (parts == 0 || extent % parts != 0)
      fail(n, ErrorCode::shape_mismatch,
           "extent " + std::to_string(extent) + " does not split into " + std::to_string(parts) +
               " equal parts");
    sizes.assign(static_cast<std::size_t>(parts), extent / parts);
  }
  std::int64_t total = 0;
  for (std::int64_t v : sizes) {
    if (v < 0) fail(n, ErrorCode::invalid_argument, "split sizes must be >= 0");
    total += v;
  }
  if (static_cast<std::int64_t>(sizes.size()) != parts || total != extent)
    fail(n, ErrorCode::shape_mismatch,
         "split sizes do not add up to " + std::to_string(extent) + " over " +
             std::to_string(parts) + " outputs");
  return sizes;
}
std::vector<TensorType> infer_split(const Node& n, std::span<const InferInput> in) {
  const TensorType& x = input_type(n, in, 0);
  const auto axis = static_cast<std::size_t>(
      normalize_axis(n, n.attr_int_or("axis", 0), static_cast<std::int64_t>(x.shape.size())));
  std::vector<TensorType> out;
  for (std::int64_t sz : split_sizes(n, in, x.shape[axis])) {
    TensorType t = x;
    t.shape[axis] = sz;
    out.push_back(t);
  }
  return out;
}
void run_split(const Node& n, std::span<const Tensor* const> in, std::span<Tensor* const> out) {
  const Shape& s = in[0]->shape();
  const auto axis = static_cast<std::size_t>(
      normalize_axis(n, n.attr_int_or("axis", 0), static_cast<std::int64_t>(s.size())));
  const std::size_t es = element_size(in[0]->type());
  std::int64_t outer = 1, inner = 1;
  for (std::size_t d = 0; d < s.size(); ++d) {
    if (d < axis) outer *= s[d];
    if (d > axis) inner *= s[d];
  }
  const std::size_t in_row = static_cast<std::size_t>(s[axis] * inner) * es;
  std::size_t col = 0;
  for (Tensor* t : out) {
    const std::size_t row = static_cast<std::size_t>(t->shape()[axis] * inner) * es;
    for (std::int64_t o = 0; o < outer; ++o)
      if (row)
        std::memcpy(t->data() + static_cast<std::size_t>(o) * row,
                    in[0]->data() + static_cast<std::size_t>(o) * in_row + col, row);
    col += row;
  }
}

// ---- Slice: attributes in version 1, inputs from 10 ----
struct SliceSpec {
  Shape start, step, out;
};
SliceSpec slice_spec(const Node& n, std::span<const InferInput> in, const Shape& x) {
  std::vector<std::int64_t> starts, ends, axes, steps;
  if (n.since_version < 10) {
    starts = n.attr_ints_or("starts", {});
    ends = n.attr_ints_or("ends", {});
    axes = n.attr_ints_or("axes", {});
  } else {
    starts = int_values(constant_input(n, in, 1, "starts"));
    ends = int_values(constant_input(n, in, 2, "ends"));
    if (in.size() > 3 && in[3].present()) axes = int_values(constant_input(n, in, 3, "axes"));
    if (in.size() > 4 && in[4].present()) steps = int_values(constant_input(n, in, 4, "steps"));
  }
  const auto rank = static_cast<std::int64_t>(x.size());
  if (axes.empty())
    for (std::size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<std::int64_t>(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    fail(n, ErrorCode::invalid_argument, "starts, ends, axes and steps must have the same length");
  SliceSpec sp{Shape(x.size(), 0), Shape(x.size(), 1), x};
  std::vector<bool> seen(x.size(), false);
  for (std::size_t i = 0; i < starts.size(); ++i) {
    const auto a = static_cast<std::size_t>(normalize_axis(n, axes[i], rank));
    if (seen[a])
      fail(n, ErrorCode::invalid_argument, "axis " + std::to_string(axes[i]) + " is sliced twice");
    seen[a] = true;
    const std::int64_t dim = x[a], step = steps[i];
    if (step == 0) fail(n, ErrorCode::invalid_argument, "steps must not be 0");
    // Clamp as ONNX specifies: [0, dim] for positive steps, [-1, dim - 1] for negative ones.
    auto fix = [&](std::int64_t v, std::int64_t lo, std::int64_t hi) {
      if (v < 0) v += dim;  // cannot overflow: dim >= 0 moves a negative value up
      return std::clamp(v, lo, hi);
    };
    std::int64_t s, e;
    if (step > 0) {
      s = fix(starts[i], 0, dim);
      e = fix(ends[i], 0, dim);
    } else {
      s = fix(starts[i], 0, dim - 1);
      e = fix(ends[i], -1, dim - 1);
    }
    const std::int64_t len = step > 0 ? (e > s ? (e - s + step - 1) / step : 0)
                                      : (s > e ? (s - e - step - 1) / -step : 0);
    sp.start[a] = s;
    sp.step[a] = step;
    sp.out[a] = dim == 0 ? 0 : len;
  }
  return sp;
}
std::vector<InferInput> as_infer_inputs(std::span<const Tensor* const> in,
                                        std::vector<TensorType>& types) {
  std::vector<InferInput> ii(in.size());
  types.resize(in.size());
  for (std::size_t i = 0; i < in.size(); ++i)
    if (in[i]) {
      types[i] = in[i]->tensor_type();
      ii[i] = {&types[i], in[i]};
    }
  return ii;
}
std::vector<TensorType> infer_slice(const Node& n, std::span<const InferInput> in) {
  const TensorType& x = input_type(n, in, 0);
  return {{x.type, slice_spec(n, in, x.shape).out}};
}
void run_slice(const Node& n, std::span<const Tensor* const> in, std::span<Tensor* const> out) {
  std::vector<TensorType> types;
  const auto ii = as_infer_inputs(in, types);
  const SliceSpec sp = slice_spec(n, ii, in[0]->shape());
  const Shape st = strides_of(in[0]->shape());
  std::int64_t base = 0;
  Shape step(st.size());
  for (std::size_t d = 0; d < st.size(); ++d) {
    base += sp.start[d] * st[d];
    step[d] = sp.step[d] * st[d];
  }
  const std::size_t es = element_size(in[0]->type());
  const std::byte* x = in[0]->data();
  std::byte* y = out[0]->data();
  walk(out[0]->shape(), step, base,
       [&](std::int64_t o, std::int64_t i) { std::memcpy(y + o * es, x + i * es, es); });
}

// ---- Gather ----
std::vector<TensorType> infer_gather(const Node& n, std::span<const InferInput> in) {
  const TensorType& x = input_type(n, in, 0);
  require_type(n, in, 1, {ElementType::int64, ElementType::int32});
  const auto axis = static_cast<std::size_t>(
      normalize_axis(n, n.attr_int_or("axis", 0), static_cast<std::int64_t>(x.shape.size())));
  Shape out(x.shape.begin(), x.shape.begin() + static_cast<std::ptrdiff_t>(axis));
  out.insert(out.end(), in[1].type->shape.begin(), in[1].type->shape.end());
  out.insert(out.end(), x.shape.begin() + static_cast<std::ptrdiff_t>(axis) + 1, x.shape.end());
  return {{x.type, out}};
}
void run_gather(const Node& n, std::span<const Tensor* const> in, std::span<Tensor* const> out) {
  const Shape& s = in[0]->shape();
  const auto axis = static_cast<std::size_t>(
      normalize_axis(n, n.attr_int_or("axis", 0), static_cast<std::int64_t>(s.size())));
  const auto idx = int_values(*in[1]);
  std::int64_t outer = 1, inner = 1;
  for (std::size_t d = 0; d < s.size(); ++d) {
    if (d < axis) outer *= s[d];
    if (d > axis) inner *= s[d];
  }
  const std::int64_t dim = s[axis];
  const std::size_t block = static_cast<std::size_t>(inner) * element_size(in[0]->type());
  std::byte* y = out[0]->data();
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::size_t k = 0; k < idx.size(); ++k) {
      std::int64_t i = idx[k];
      if (i < -dim || i >= dim)
        fail(n, ErrorCode::invalid_argument,
             "index " + std::to_string(i) + " is outside [" + std::to_string(-dim) + ", " +
                 std::to_string(dim - 1) + "]");
      if (i < 0) i += dim;
      if (block)
        std::memcpy(y + (static_cast<std::size_t>(o) * idx.size() + k) * block,
                    in[0]->data() + static_cast<std::size_t>(o * dim + i) * block, block);
    }
}

// ---- Pad: modes constant, reflect, edge; negative pads crop ----
struct PadSpec {
  std::vector<std::int64_t> begin, end;
  std::string mode;
};
PadSpec pad_spec(const Node& n, std::span<const InferInput> in, std::size_t rank) {
  PadSpec p;
  p.mode = n.attr_string_or("mode", "constant");
  const auto pads = n.since_version < 11 ? n.attr_ints_or("pads", {})
                                         : int_values(constant_input(n, in, 1, "pads"));
  if (pads.size() != 2 * rank)
    fail(n, ErrorCode::invalid_argument,
         "pads has " + std::to_string(pads.size()) + " values; rank " + std::to_string(rank) +
             " needs " + std::to_string(2 * rank));
  p.begin.assign(pads.begin(), pads.begin() + static_cast<std::ptrdiff_t>(rank));
  p.end.assign(pads.begin() + static_cast<std::ptrdiff_t>(rank), pads.end());
  return p;
}
void check_pad(const Node& n) {
  const std::string mode = n.attr_string_or("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge")
    fail(n, ErrorCode::unsupported, "mode '" + mode + "' is not one of constant, reflect, edge");
  if (n.since_version < 11 && !n.has_attribute("pads"))
    fail(n, ErrorCode::invalid_argument, "pads is required");
}
std::vector<TensorType> infer_pad(const Node& n, std::span<const InferInput> in) {
  const TensorType& x = input_type(n, in, 0);
  const PadSpec p = pad_spec(n, in, x.shape.size());
  Shape out = x.shape;
  for (std::size_t d = 0; d < out.size(); ++d) {
    out[d] += p.begin[d] + p.end[d];
    if (out[d] < 0)
      fail(n, ErrorCode::shape_mismatch, "pads crop axis " + std::to_string(d) + " below zero");
    if (p.mode != "constant" && out[d] > 0 && x.shape[d] == 0)
      fail(n, ErrorCode::shape_mismatch, p.mode + " padding of an empty axis");
    if (p.mode == "reflect" && (p.begin[d] >= x.shape[d] || p.end[d] >= x.shape[d]) &&
        (p.begin[d] > 0 || p.end[d] > 0))
      fail(n, ErrorCode::shape_mismatch,
           "reflect pads must be smaller than the extent on axis " + std::to_string(d));
  }
  if (n.since_version >= 11 && in.size() > 2 && in[2].present() && in[2].type->type != x.type)
    fail(n, ErrorCode::invalid_argument, "constant_value must have X's element type");
  if (n.since_version < 11 && p.mode == "constant" && x.type != ElementType::float32 &&
      n.attr_float_or("value", 0.0f) != 0.0f)
    fail(n, ErrorCode::unsupported, "a non-zero value attribute needs float32 data");
  return {{x.type, out}};
}
void run_pad(const Node& n, std::span<const Tensor* const> in, std::span<Tensor* const> out) {
  std::vector<TensorType> types;
  const auto ii = as_infer_inputs(in, types);
  const Shape& xs = in[0]->shape();
  const PadSpec p = pad_spec(n, ii, xs.size());
  const std::size_t es = element_size(in[0]->type());
  std::vector<std::byte> fill(es, std::byte{0});
  if (n.since_version < 11) {
    const float v = n.attr_float_or("value", 0.0f);
    if (in[0]->type() == ElementType::float32) std::memcpy(fill.data(), &v, es);
  } else if (in.size() > 2 && in[2]) {
    std::memcpy(fill.data(), in[2]->data(), es);
  }
  const Shape st = strides_of(xs);
  const Shape& os = out[0]->shape();
  Shape idx(os.size(), 0);
  std::byte* y = out[0]->data();
  for (std::int64_t o = 0; o < out[0]->size(); ++o) {
    std::int64_t off = 0;
    bool inside = true;
    for (std::size_t d = 0; d < os.size(); ++d) {
      std::int64_t i = idx[d] - p.begin[d];
      const std::int64_t dim = xs[d];
      if (i < 0 || i >= dim) {
        if (p.mode == "constant") {
          inside = false;
          break;
        }
        if (p.mode == "edge") i = std::clamp<std::int64_t>(i, 0, dim - 1);
        else if (dim == 1) i = 0;
        else {  // reflect without repeating the edge; pads < dim keep this one bounce
          if (i < 0) i = -i;
          if (i >= dim) i = 2 * (dim - 1) - i;
        }
      }
      off += i * st[d];
    }
    std::memcpy(y + o * static_cast<std::int64_t>(es),
                inside ? in[0]->data() + off * static_cast<std::int64_t>(es) : fill.data(), es);
    for (std::size_t d = os.size(); d-- > 0;) {
      if (++idx[d] < os[d]) break;
      idx[d] = 0;
    }
  }
}

}  // namespace

void register_data_movement(KernelRegistry& r) {
  r.add({"Transpose", {1, 13}, {"perm"}, nullptr, infer_transpose, run_transpose});
  r.add({"Concat", {4, 11, 13}, {"axis"}, nullptr, infer_concat, run_concat});
  r.add({"Split", {2, 11, 13}, {"axis", "split"}, nullptr, infer_split, run_split});
  r.add({"Slice", {1, 10, 11, 13}, {"starts", "ends", "axes"}, nullptr, infer_slice, run_slice});
  r.add({"Gather", {1, 11, 13}, {"axis"}, nullptr, infer_gather, run_gather});
  // Pad 1 has `paddings`; 2 attributes pads/value; 11 and 13 inputs.
  r.add({"Pad", {2, 11, 13}, {"mode", "pads", "value"}, check_pad, infer_pad, run_pad});
}

}  // namespace qforge::model::ops
