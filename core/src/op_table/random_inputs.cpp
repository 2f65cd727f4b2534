// Random, valid inputs for every op: what probes verify with and what timing runs on. Each
// kind draws its own inputs (OpHooks::random_inputs) from the values below.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <variant>

#include "accelerator/random_values.h"
#include "op_table/op_hooks.h"
#include "qforge/dtype.h"
#include "qforge/half.h"

namespace qforge::accel {

std::int64_t uniform(Rng& rng, std::int64_t lo, std::int64_t hi) {
  return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
}

float log_uniform(Rng& rng, double lo, double hi) {
  return static_cast<float>(
      std::exp(std::uniform_real_distribution<double>(std::log(lo), std::log(hi))(rng)));
}

std::vector<std::byte> filled(std::size_t bytes, std::byte value) {
  return std::vector<std::byte>(bytes, value);
}

std::vector<std::byte> float_bytes(FloatType t, const std::vector<float>& v) {
  std::vector<std::byte> out(v.size() * static_cast<std::size_t>(size_of(t)));
  for (std::size_t i = 0; i < v.size(); ++i) store_float(t, out.data(), i, v[i]);
  return out;
}

std::vector<float> normal_floats(Rng& rng, std::size_t n, double sigma) {
  std::normal_distribution<float> dist(0.0f, static_cast<float>(sigma));
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

// Codes drawn per element from [z - window, z + window] clipped to the dtype's range, where z
// is the element's own zero point: keeps sum_k (a - za)(b - zb) inside int32 for any K.
std::vector<std::byte> window_codes(Rng& rng, const QuantizationParams& p, const Shape& shape,
                                    std::int64_t window) {
  const DType t = p.dtype();
  const auto& tr = traits(t);
  const auto n = static_cast<std::size_t>(element_count(shape));
  std::vector<std::byte> out(storage_bytes(t, n), std::byte{0});
  const bool one_pair = p.count() == 1;
  for (std::size_t i = 0; i < n; ++i) {
    if (t == DType::binary) {
      store_element(t, out.data(), i, uniform(rng, 0, 1) ? 1 : -1);
      continue;
    }
    const std::int32_t z =
        p.zero_point(one_pair ? 0 : p.param_index(shape, static_cast<std::int64_t>(i)));
    const std::int64_t lo = std::max<std::int64_t>(tr.qmin, z - window);
    const std::int64_t hi = std::min<std::int64_t>(tr.qmax, z + window);
    store_element(t, out.data(), i, static_cast<std::int32_t>(uniform(rng, lo, hi)));
  }
  return out;
}

std::int64_t overflow_window(std::int64_t k) {
  const double w =
      std::floor(std::sqrt(static_cast<double>(std::numeric_limits<std::int32_t>::max()) /
                           static_cast<double>(std::max<std::int64_t>(k, 1))));
  return static_cast<std::int64_t>(w);
}

// Values around and past the code range of `p` (so some saturate), a quarter of them exact
// ties (k + 1/2) * s, and with `specials` the values every quantizer must handle.
std::vector<float> quantize_inputs(Rng& rng, const QuantizationParams& p, std::size_t n,
                                   bool specials) {
  std::vector<float> v(n);
  const float s = p.scale(0);
  const std::int32_t z = p.zero_point(0);
  for (auto& x : v) {
    if (p.scheme().mapping == Mapping::logarithmic) {
      const double k = std::uniform_real_distribution<double>(-1.0, 24.0)(rng);
      x = static_cast<float>((uniform(rng, 0, 1) ? 1.0 : -1.0) * s * std::exp2(-k));
      continue;
    }
    const auto q = uniform(rng, p.qmin() - 3, p.qmax() + 3) - z;
    const float frac =
        uniform(rng, 0, 3) == 0 ? 0.5f : std::uniform_real_distribution<float>(-0.5f, 0.5f)(rng);
    x = (static_cast<float>(q) + frac) * s;
  }
  if (specials) {
    const float list[] = {
        std::numeric_limits<float>::quiet_NaN(),  std::numeric_limits<float>::infinity(),
        -std::numeric_limits<float>::infinity(),  -0.0f,
        std::numeric_limits<float>::max(),        -std::numeric_limits<float>::max(),
        std::numeric_limits<float>::denorm_min(), 1e30f};
    for (std::size_t i = 0; i < std::size(list) && i < n; ++i)
      v[static_cast<std::size_t>(uniform(rng, 0, static_cast<std::int64_t>(n) - 1))] = list[i];
  }
  return v;
}

std::vector<std::byte> full_range_codes(Rng& rng, DType t, std::size_t n) {
  std::vector<std::byte> out(storage_bytes(t, n), std::byte{0});
  const auto& tr = traits(t);
  for (std::size_t i = 0; i < n; ++i) {
    std::int32_t v = static_cast<std::int32_t>(uniform(rng, tr.qmin, tr.qmax));
    if (t == DType::binary) v = v >= 0 ? 1 : -1;
    store_element(t, out.data(), i, v);
  }
  return out;
}

std::vector<std::byte> int32_bytes(const std::vector<std::int32_t>& v) {
  std::vector<std::byte> out(v.size() * 4);
  if (!v.empty()) std::memcpy(out.data(), v.data(), out.size());
  return out;
}

QuantizationParams random_params(Rng& rng, DType dtype, const Scheme& scheme, const Shape& shape) {
  std::size_t count = 1;
  if (scheme.granularity == Granularity::per_channel) {
    const int rank = static_cast<int>(shape.size());
    const int axis = scheme.axis < 0 ? scheme.axis + rank : scheme.axis;
    count = axis >= 0 && axis < rank
                ? static_cast<std::size_t>(std::max<std::int64_t>(shape[axis], 1))
                : 1;
  } else if (scheme.granularity == Granularity::block) {
    std::int64_t outer = 1;
    for (std::size_t i = 0; i + 1 < shape.size(); ++i) outer *= shape[i];
    const std::int64_t last = shape.empty() ? 1 : shape.back();
    const std::int64_t b = std::max<std::int64_t>(scheme.block_size, 1);
    count = static_cast<std::size_t>(std::max<std::int64_t>(outer * ((last + b - 1) / b), 1));
  }
  std::vector<float> scales(count);
  for (auto& s : scales) s = log_uniform(rng, 1.0 / 64, 2.0);
  std::vector<std::int32_t> zps;
  if (scheme.mapping == Mapping::affine) {
    zps.resize(count);
    for (auto& z : zps)
      z = static_cast<std::int32_t>(uniform(rng, traits(dtype).qmin, traits(dtype).qmax));
  }
  return QuantizationParams(dtype, scheme, std::move(scales), std::move(zps));
}

HostArrays random_arrays(const OpDesc& op, Rng& rng, bool specials) {
  const IoLayout layout = io_layout(op);
  HostArrays h;
  for (const auto& o : layout.outputs) h.outputs.push_back(filled(o.bytes, kPoison));
  op_hooks(op.op).random_inputs(op, layout, rng, specials, h);
  return h;
}

}  // namespace qforge::accel
