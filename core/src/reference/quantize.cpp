// Quantize / dequantize: the scalar kernels every op uses, and the tensor versions.
#include <cstring>

#include "qforge/checked_size.h"
#include "qforge/reference.h"
#include "reference/detail.h"

namespace qforge::reference {

std::int32_t quantize_value(float x, float scale, std::int32_t zero_point, std::int32_t qmin,
                            std::int32_t qmax) noexcept {
  // [-1, 1] is the range of binary alone (dtype.h's table). Binary has no code for 0, so the
  // sign decides: !(x < 0) gives +1 for +0, -0 and NaN, -1 for every negative value.
  if (qmin == traits(DType::binary).narrow_qmin && qmax == traits(DType::binary).narrow_qmax)
    return x < 0.0f ? -1 : 1;
  const float v = x / scale;  // a true float32 division, as ONNX QuantizeLinear
  if (std::isnan(v)) return zero_point;
  // rne(v) may be huge or infinite: add z in double, where every in-range sum is exact and
  // every out-of-range one still lands beyond [qmin, qmax].
  const double q = static_cast<double>(detail::round_half_even(v)) + zero_point;
  return detail::saturate(q, qmin, qmax);
}

float dequantize_value(std::int32_t q, float scale, std::int32_t zero_point) noexcept {
  // q - z is at most 65535 in magnitude, so converting it to float is exact; one rounding.
  return static_cast<float>(q - zero_point) * scale;
}

void quantize(const QuantizeDesc& desc, const void* x, void* q) {
  const std::string op = "quantize";
  const QuantizationParams& p = desc.params;
  detail::validate_quantize(op, desc, static_cast<std::size_t>(size_of(desc.float_type)));
  const std::int64_t n = element_count(desc.shape);
  detail::require_data(op, "x", x, n);
  detail::require_data(op, "q", q, n);
  if (n == 0) return;
  // Zero the whole output first: padding bits of a last partial byte must read as zero, and
  // store_element only touches the bits of its own element.
  std::memset(q, 0, checked_storage_bytes("q", p.dtype(), n));
  const bool log = p.scheme().mapping == Mapping::logarithmic;
  for (std::int64_t i = 0; i < n; ++i) {
    const auto idx = static_cast<std::size_t>(i);
    const float v = load_float(desc.float_type, x, idx);
    const std::size_t pi = p.param_index(desc.shape, i);
    const std::int32_t code =
        log ? quantize_log_value(v, p.scale(pi), p.dtype())
            : quantize_value(v, p.scale(pi), p.zero_point(pi), p.qmin(), p.qmax());
    store_element(p.dtype(), q, idx, code);
  }
}

void dequantize(const QuantizeDesc& desc, const void* q, float* x) {
  const std::string op = "dequantize";
  const QuantizationParams& p = desc.params;
  detail::validate_quantize(op, desc, sizeof(float));
  const std::int64_t n = element_count(desc.shape);
  detail::require_data(op, "q", q, n);
  detail::require_data(op, "x", x, n);
  const bool log = p.scheme().mapping == Mapping::logarithmic;
  for (std::int64_t i = 0; i < n; ++i) {
    const auto idx = static_cast<std::size_t>(i);
    const std::int32_t code = load_element(p.dtype(), q, idx);
    const std::size_t pi = p.param_index(desc.shape, i);
    x[idx] = log ? dequantize_log_value(code, p.scale(pi))
                 : dequantize_value(code, p.scale(pi), p.zero_point(pi));
  }
}

}  // namespace qforge::reference
