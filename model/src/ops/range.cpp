// Range (version 11): [start, start + delta, ...) up to limit, float32, int64 or int32. The
// length depends on the values, so start, limit and delta must be constant after folding (they
// are when an exporter derives them from shapes: torch.arange(seq_len)).
#include <cmath>
#include <limits>

#include "ops/kernel.h"

namespace qforge::model::ops {
namespace {

double scalar_of(const Node& n, const Tensor& t, std::string_view role) {
  if (t.size() != 1)
    fail(n, ErrorCode::invalid_argument,
         std::string(role) + " must be a scalar, got " + qforge::to_string(t.shape()));
  switch (t.type()) {
    case ElementType::float32: return t.values<float>()[0];
    case ElementType::int64: return static_cast<double>(t.values<std::int64_t>()[0]);
    default: return t.values<std::int32_t>()[0];
  }
}

// ONNX's definition: max(ceil((limit - start) / delta), 0) elements.
std::int64_t range_length(const Node& n, const Tensor& start, const Tensor& limit,
                          const Tensor& delta) {
  const double s = scalar_of(n, start, "start"), l = scalar_of(n, limit, "limit"),
               d = scalar_of(n, delta, "delta");
  if (d == 0.0 || !std::isfinite(d) || !std::isfinite(s) || !std::isfinite(l))
    fail(n, ErrorCode::invalid_argument,
         "start, limit and delta must be finite and delta non-zero (got " + std::to_string(s) +
             ", " + std::to_string(l) + ", " + std::to_string(d) + ")");
  const double count = std::ceil((l - s) / d);
  if (count > static_cast<double>(std::numeric_limits<std::int32_t>::max()))
    fail(n, ErrorCode::invalid_argument,
         "the range has " + std::to_string(count) + " elements; qforge allows at most 2^31 - 1");
  return count > 0 ? static_cast<std::int64_t>(count) : 0;
}

std::vector<TensorType> infer_range(const Node& n, std::span<const InferInput> in) {
  require_type(n, in, 0, {ElementType::float32, ElementType::int64, ElementType::int32});
  for (std::size_t i = 1; i < 3; ++i)
    if (input_type(n, in, i).type != in[0].type->type)
      fail(n, ErrorCode::invalid_argument,
           "start, limit and delta must have one element type; input " + std::to_string(i) +
               " is " + std::string(to_string(in[i].type->type)));
  const std::int64_t len =
      range_length(n, constant_input(n, in, 0, "start"), constant_input(n, in, 1, "limit"),
                   constant_input(n, in, 2, "delta"));
  return {{in[0].type->type, {len}}};
}

template <class T>
void fill(const Tensor& start, const Tensor& delta, Tensor& out) {
  const T s = start.values<T>()[0], d = delta.values<T>()[0];
  auto y = out.values<T>();
  // start + i * delta for each i, as ONNX's reference computes it (no accumulated rounding).
  for (std::size_t i = 0; i < y.size(); ++i) y[i] = static_cast<T>(s + static_cast<T>(i) * d);
}

void run_range(const Node& n, std::span<const Tensor* const> in, std::span<Tensor* const> out) {
  range_length(n, *in[0], *in[1], *in[2]);  // the same checks as at resolve
  switch (in[0]->type()) {
    case ElementType::float32: fill<float>(*in[0], *in[2], *out[0]); break;
    case ElementType::int64: fill<std::int64_t>(*in[0], *in[2], *out[0]); break;
    default: fill<std::int32_t>(*in[0], *in[2], *out[0]); break;
  }
}

}  // namespace

void register_range(KernelRegistry& r) {
  r.add({"Range", {11}, {}, nullptr, infer_range, run_range});
}

}  // namespace qforge::model::ops
