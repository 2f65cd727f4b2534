// Helpers for the matmul reference tests: random operands of any dtype and a naive triple loop
// written independently of the reference (param_index on the full shapes, no unpacking).
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "qforge/reference.h"
#include "test_support.h"

namespace qforge::test {

// A MatmulDesc with the common fields set and the others at their defaults.
inline MatmulDesc matmul(std::int64_t m, std::int64_t n, std::int64_t k, QuantizationParams a,
                         QuantizationParams b, MatrixLayout layout = MatrixLayout::kn) {
  return MatmulDesc{.m = m,
                    .n = n,
                    .k = k,
                    .a = std::move(a),
                    .b = std::move(b),
                    .b_layout = layout,
                    .has_bias = false,
                    .out_type = FloatType::f32,
                    .y = std::nullopt,
                    .requant_mode = RequantMode::float_multiplier};
}

// Packed storage holding random values of dtype t over its full range.
inline std::vector<std::uint8_t> random_packed(std::mt19937_64& rng, DType t, std::size_t n) {
  std::vector<std::uint8_t> v(storage_bytes(t, n), 0);
  for (std::size_t i = 0; i < n; ++i) {
    const auto& tr = traits(t);
    std::int32_t q = static_cast<std::int32_t>(uniform_int(rng, tr.qmin, tr.qmax));
    store_element(t, v.data(), i, q);
  }
  return v;
}

inline std::vector<std::int32_t> random_zero_points(std::mt19937_64& rng, DType t, Mapping m,
                                                    std::size_t count) {
  if (m != Mapping::affine) return {};
  std::vector<std::int32_t> z(count);
  for (auto& v : z) v = static_cast<std::int32_t>(uniform_int(rng, traits(t).qmin, traits(t).qmax));
  return z;
}

inline std::vector<float> random_scales(std::mt19937_64& rng, std::size_t count) {
  std::vector<float> s(count);
  for (auto& v : s) v = uniform(rng, 0.001f, 0.1f);
  return s;
}

// Exact C[m, n] and, for block-wise B, the per-block partial sums C_j[m, n] (j along K).
inline std::int64_t naive_dot(const MatmulDesc& d, const void* a, const void* b, std::int64_t m,
                              std::int64_t n, std::int64_t k0, std::int64_t k1) {
  const Shape as = d.a_shape(), bs = d.b_shape();
  std::int64_t acc = 0;
  for (std::int64_t k = k0; k < k1; ++k) {
    const std::int64_t ai = m * d.k + k;
    const std::int64_t bi = d.b_layout == MatrixLayout::kn ? k * d.n + n : n * d.k + k;
    const std::int64_t av = load_element(d.a.dtype(), a, static_cast<std::size_t>(ai)) -
                            d.a.zero_point(d.a.param_index(as, ai));
    const std::int64_t bv = load_element(d.b.dtype(), b, static_cast<std::size_t>(bi)) -
                            d.b.zero_point(d.b.param_index(bs, bi));
    acc += av * bv;
  }
  return acc;
}

// A random matmul description: dtypes, mappings and granularities drawn from what the ops accept.
struct RandomMatmul {
  MatmulDesc desc;
  std::vector<std::uint8_t> a, b;
};

inline RandomMatmul random_matmul(std::mt19937_64& rng, bool allow_block_b,
                                  std::int64_t max_dim = 9) {
  const auto pick_dtype = [&] { return static_cast<DType>(uniform_int(rng, 0, 6)); };
  const auto pick_mapping = [&](DType t) {
    return t == DType::binary ? Mapping::symmetric : static_cast<Mapping>(uniform_int(rng, 0, 1));
  };
  const std::int64_t M = uniform_int(rng, 1, max_dim), N = uniform_int(rng, 1, max_dim),
                     K = uniform_int(rng, 1, 3 * max_dim);
  const DType ta = pick_dtype();
  DType tb = pick_dtype();
  // Two 16-bit operands overflow int32 within a term or two (65535^2 > 2^31); that path has its
  // own tests, so random cases keep at most one 16-bit side.
  if (traits(ta).bits == 16 && traits(tb).bits == 16) tb = DType::int8;
  const Mapping ma = pick_mapping(ta), mb = pick_mapping(tb);
  const bool a_rows = uniform_int(rng, 0, 1);
  QuantizationParams ap =
      a_rows ? QuantizationParams::per_channel(ta, ma, 0, random_scales(rng, M),
                                               random_zero_points(rng, ta, ma, M))
             : QuantizationParams(ta, Scheme{ma, Granularity::per_tensor}, random_scales(rng, 1),
                                  random_zero_points(rng, ta, ma, 1));
  const auto layout = uniform_int(rng, 0, 1) ? MatrixLayout::kn : MatrixLayout::nk;
  const int b_kind =
      static_cast<int>(uniform_int(rng, 0, allow_block_b && layout == MatrixLayout::nk ? 2 : 1));
  std::optional<QuantizationParams> bp;
  if (b_kind == 0) {
    bp.emplace(tb, Scheme{mb, Granularity::per_tensor}, random_scales(rng, 1),
               random_zero_points(rng, tb, mb, 1));
  } else if (b_kind == 1) {
    bp = QuantizationParams::per_channel(tb, mb, layout == MatrixLayout::kn ? 1 : 0,
                                         random_scales(rng, N), random_zero_points(rng, tb, mb, N));
  } else {
    const std::int64_t block = uniform_int(rng, 1, K + 2);
    const auto count = static_cast<std::size_t>(N * ((K + block - 1) / block));
    bp = QuantizationParams::blockwise(tb, mb, block, random_scales(rng, count),
                                       random_zero_points(rng, tb, mb, count));
  }
  RandomMatmul r{test::matmul(M, N, K, ap, *bp, layout), {}, {}};
  r.a = random_packed(rng, ta, static_cast<std::size_t>(M * K));
  r.b = random_packed(rng, tb, static_cast<std::size_t>(N * K));
  return r;
}

}  // namespace qforge::test
