// Max and Min: element-wise over one or more inputs with numpy broadcasting (version 8 on),
// float32, int64, int32. A NaN in any input gives NaN, as numpy's maximum/minimum and ONNX
// Runtime do.
#include <cmath>
#include <limits>

#include "ops/broadcast.h"
#include "ops/kernel.h"

namespace qforge::model::ops {
namespace {

std::vector<TensorType> infer_minmax(const Node& n, std::span<const InferInput> in) {
  if (in.empty()) fail(n, ErrorCode::invalid_argument, "at least one input is required");
  require_type(n, in, 0, {ElementType::float32, ElementType::int64, ElementType::int32});
  Shape shape = in[0].type->shape;
  for (std::size_t i = 1; i < in.size(); ++i) {
    if (input_type(n, in, i).type != in[0].type->type)
      fail(n, ErrorCode::invalid_argument,
           "input " + std::to_string(i) + " is " + std::string(to_string(in[i].type->type)) +
               ", input 0 " + std::string(to_string(in[0].type->type)));
    // Version 6 predates broadcasting: every input has input 0's shape.
    if (n.since_version < 8 && in[i].type->shape != in[0].type->shape)
      fail(n, ErrorCode::shape_mismatch,
           "input " + std::to_string(i) + " " + qforge::to_string(in[i].type->shape) +
               " differs from input 0 " + qforge::to_string(in[0].type->shape) +
               "; version 6 does not broadcast");
    shape = broadcast_shapes(n, shape, in[i].type->shape);
  }
  return {{in[0].type->type, shape}};
}

template <class T>
T pick(bool is_max, T a, T b) {
  if constexpr (std::is_floating_point_v<T>)
    if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<T>::quiet_NaN();
  return is_max ? (b > a ? b : a) : (b < a ? b : a);
}

// Folds the inputs one at a time into the output: out = input 0 broadcast, then
// out = pick(out, input i) for each further input.
template <class T>
void run_typed(bool is_max, std::span<const Tensor* const> in, Tensor& out) {
  T* po = out.values<T>().data();
  const T* p0 = in[0]->values<T>().data();
  broadcast_rows<1>(out.shape(), {&in[0]->shape()},
                    [&](std::int64_t o, const auto& off, const auto& st, std::int64_t n) {
                      for (std::int64_t j = 0; j < n; ++j) po[o + j] = p0[off[0] + j * st[0]];
                    });
  for (std::size_t i = 1; i < in.size(); ++i) {
    const T* pi = in[i]->values<T>().data();
    broadcast_rows<1>(out.shape(), {&in[i]->shape()},
                      [&](std::int64_t o, const auto& off, const auto& st, std::int64_t n) {
                        for (std::int64_t j = 0; j < n; ++j)
                          po[o + j] = pick(is_max, po[o + j], pi[off[0] + j * st[0]]);
                      });
  }
}

void run_minmax(const Node& n, std::span<const Tensor* const> in, std::span<Tensor* const> out) {
  const bool is_max = n.op_type == "Max";
  switch (in[0]->type()) {
    case ElementType::float32: run_typed<float>(is_max, in, *out[0]); break;
    case ElementType::int64: run_typed<std::int64_t>(is_max, in, *out[0]); break;
    default: run_typed<std::int32_t>(is_max, in, *out[0]); break;
  }
}

}  // namespace

void register_minmax(KernelRegistry& r) {
  // Version 6 requires equal shapes; 8 on broadcasts (numpy).
  for (const char* op : {"Max", "Min"})
    r.add({op, {6, 8, 12, 13}, {}, nullptr, infer_minmax, run_minmax});
}

}  // namespace qforge::model::ops
