#include "weight_codes.h"

#include <cstdint>
#include <string>

#include "qforge/checked_size.h"
#include "qforge/error.h"
#include "qforge/reference.h"

namespace qforge::model::quantize {
namespace {

// reference::quantize_value(x[i], scale, zero_point, qmin, qmax) for a run of values, in a form
// the compiler keeps in vector registers. The same float32 division; then, before rounding, v
// is clamped to [qmin - z - 1, qmax - z + 1] (every value outside saturates either way, and NaN
// becomes 0, so that it lands on z as quantize_value's NaN does); inside that band |v| < 2^9, so
// adding and subtracting 1.5 * 2^23 rounds it half to even (the FPU's default rounding mode,
// which qforge never changes), as reference's round_half_even does; then z is added and the sum
// saturated in int32, exact for these magnitudes.
void quantize_run(const float* x, std::size_t n, float scale, std::int32_t zero_point,
                  std::int32_t qmin, std::int32_t qmax, std::uint8_t* out) {
  constexpr float kRound = 12582912.0f;  // 1.5 * 2^23
  const float lo = static_cast<float>(qmin - zero_point - 1);
  const float hi = static_cast<float>(qmax - zero_point + 1);
  for (std::size_t i = 0; i < n; ++i) {
    const float v = x[i] / scale;
    float c = v < lo ? lo : v;
    c = c > hi ? hi : c;
    c = v != v ? 0.0f : c;
    const float r = (c + kRound) - kRound;
    std::int32_t q = static_cast<std::int32_t>(r) + zero_point;
    q = q < qmin ? qmin : q;
    q = q > qmax ? qmax : q;
    out[i] = static_cast<std::uint8_t>(q);
  }
}

}  // namespace

void quantize_codes(const Shape& shape, const QuantizationParams& p, std::span<const float> data,
                    std::span<std::byte> codes) {
  const Granularity g = p.scheme().granularity;
  const bool bytes = p.dtype() == DType::int8 || p.dtype() == DType::uint8;
  const bool mapped =
      p.scheme().mapping == Mapping::affine || p.scheme().mapping == Mapping::symmetric;
  if (!bytes || !mapped || !(g == Granularity::per_tensor || g == Granularity::per_channel)) {
    if (static_cast<std::int64_t>(data.size()) != element_count(shape) ||
        codes.size() != checked_storage_bytes("codes", p.dtype(), element_count(shape)))
      throw Error(ErrorCode::internal, "quantize_codes: " + std::to_string(data.size()) +
                                           " values and " + std::to_string(codes.size()) +
                                           " code bytes for shape " + to_string(shape));
    reference::quantize(QuantizeDesc{shape, p}, data.data(), codes.data());
    return;
  }
  p.validate_for(shape);
  if (static_cast<std::int64_t>(data.size()) != element_count(shape) || codes.size() != data.size())
    throw Error(ErrorCode::internal, "quantize_codes: " + std::to_string(data.size()) +
                                         " values and " + std::to_string(codes.size()) +
                                         " code bytes for shape " + to_string(shape));
  // [outer, channels, inner] around the channel axis; one channel for per tensor.
  std::size_t outer = 1, channels = 1, inner = data.size();
  if (g == Granularity::per_channel) {
    const auto axis = static_cast<std::size_t>(p.channel_axis(shape.size()));
    inner = 1;
    for (std::size_t i = 0; i < axis; ++i) outer *= static_cast<std::size_t>(shape[i]);
    channels = static_cast<std::size_t>(shape[axis]);
    for (std::size_t i = axis + 1; i < shape.size(); ++i)
      inner *= static_cast<std::size_t>(shape[i]);
  }
  auto* out = reinterpret_cast<std::uint8_t*>(codes.data());
  std::size_t at = 0;
  for (std::size_t o = 0; o < outer; ++o)
    for (std::size_t c = 0; c < channels; ++c, at += inner)
      quantize_run(data.data() + at, inner, p.scales()[c], p.zero_points()[c], p.qmin(), p.qmax(),
                   out + at);
}

}  // namespace qforge::model::quantize
