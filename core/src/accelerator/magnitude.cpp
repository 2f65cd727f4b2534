// The size of the terms each float output element is computed from, for outputs that are sums
// which can cancel: |C·sa·sb| + |bias| (per block for block-wise B), Σ|dY·W|, Σ|dY·Xq·sx|, Σ|dY|.
// Comparisons divide by max(|ref|, magnitude)² instead of ref², the bound BLAS tests use
// (|error| ≤ c·ε·|A|·|B|) and the one the conformance suite uses (docs/TESTING.md): otherwise a
// result that cancels to almost nothing turns one legitimate rounding of its terms into a huge
// relative error, and a correct plugin would be excluded now and then.
//
// Here the products run over |a − za|·|b − zb| per k (an upper bound of |C| per block), which
// is what a kernel's rounding can scale with.
#include <cmath>
#include <cstring>
#include <variant>

#include "accelerator/operands.h"
#include "qforge/dtype.h"

namespace qforge::accel {
namespace {

std::size_t b_pair(const QuantizationParams& b, std::int64_t n, std::int64_t k,
                   std::int64_t depth) {
  switch (b.scheme().granularity) {
    case Granularity::per_tensor: return 0;
    case Granularity::per_channel: return static_cast<std::size_t>(n);
    case Granularity::block: break;
  }
  const std::int64_t bs = b.scheme().block_size;
  return static_cast<std::size_t>(n * ((depth + bs - 1) / bs) + k / bs);
}

std::vector<double> matmul_dequant_magnitude(const MatmulDesc& d, const HostArrays& h) {
  const auto* a = h.inputs[0].data();
  const auto* b = h.inputs[1].data();
  const bool kn = d.b_layout == MatrixLayout::kn;
  const bool blocks = d.b.scheme().granularity == Granularity::block;
  const std::int64_t bs = blocks ? d.b.scheme().block_size : d.k + 1;
  std::vector<double> mag(static_cast<std::size_t>(d.m * d.n), 0.0);
  for (std::int64_t m = 0; m < d.m; ++m) {
    const std::size_t ap = d.a.count() == 1 ? 0 : static_cast<std::size_t>(m);
    const double sa = d.a.scale(ap);
    const std::int32_t za = d.a.zero_point(ap);
    for (std::int64_t n = 0; n < d.n; ++n) {
      double total = 0;
      for (std::int64_t k0 = 0; k0 < d.k; k0 += bs) {
        const std::int64_t k1 = std::min(d.k, k0 + bs);
        const std::size_t bp = b_pair(d.b, n, k0, d.k);
        double block = 0;
        for (std::int64_t k = k0; k < k1; ++k) {
          const auto av = load_element(d.a.dtype(), a, static_cast<std::size_t>(m * d.k + k)) - za;
          const auto bi = static_cast<std::size_t>(kn ? k * d.n + n : n * d.k + k);
          const auto bv = load_element(d.b.dtype(), b, bi) - d.b.zero_point(bp);
          block += std::fabs(static_cast<double>(av)) * std::fabs(static_cast<double>(bv));
        }
        total += block * sa * d.b.scale(bp);
      }
      if (d.has_bias) {
        float bias = 0;
        std::memcpy(&bias, h.inputs[2].data() + n * 4, 4);
        total += std::fabs(bias);
      }
      mag[static_cast<std::size_t>(m * d.n + n)] = total;
    }
  }
  return mag;
}

float f32(const std::vector<std::byte>& v, std::int64_t i) {
  float x = 0;
  std::memcpy(&x, v.data() + i * 4, 4);
  return x;
}

double i8(const std::vector<std::byte>& v, std::int64_t i) {
  return std::fabs(static_cast<double>(static_cast<std::int8_t>(v[static_cast<std::size_t>(i)])));
}

double w_scale(const LinearDesc& d, std::int64_t n) {
  return d.w.scale(d.w.count() == 1 ? 0 : static_cast<std::size_t>(n));
}

}  // namespace

std::vector<std::vector<double>> output_magnitudes(const OpDesc& op, const HostArrays& h) {
  std::vector<std::vector<double>> out(h.outputs.size());
  if (op.op == OpKind::matmul_dequant) {
    out[0] = matmul_dequant_magnitude(std::get<MatmulDesc>(op.desc), h);
  } else if (op.op == OpKind::linear_forward && h.returned) {
    const auto& d = std::get<LinearDesc>(op.desc);
    const double sx = h.returned->scale();
    const auto& xq = h.outputs[0];
    const auto& wq = h.inputs[1];
    out[1].assign(static_cast<std::size_t>(d.m * d.n), 0.0);
    for (std::int64_t m = 0; m < d.m; ++m)
      for (std::int64_t n = 0; n < d.n; ++n) {
        double s = 0;
        for (std::int64_t k = 0; k < d.k; ++k) s += i8(xq, m * d.k + k) * i8(wq, n * d.k + k);
        s = s * sx * w_scale(d, n);
        if (d.has_bias) s += std::fabs(f32(h.inputs[2], n));
        out[1][static_cast<std::size_t>(m * d.n + n)] = s;
      }
  } else if (op.op == OpKind::linear_backward && h.xq_params) {
    const auto& d = std::get<LinearDesc>(op.desc);
    const double sx = h.xq_params->scale();
    const auto &dy = h.inputs[0], &xq = h.inputs[1], &wq = h.inputs[2];
    out[0].assign(static_cast<std::size_t>(d.m * d.k), 0.0);
    out[1].assign(static_cast<std::size_t>(d.n * d.k), 0.0);
    for (std::int64_t m = 0; m < d.m; ++m)
      for (std::int64_t n = 0; n < d.n; ++n) {
        const double g = std::fabs(static_cast<double>(f32(dy, m * d.n + n)));
        const double sw = w_scale(d, n);
        for (std::int64_t k = 0; k < d.k; ++k) {
          out[0][static_cast<std::size_t>(m * d.k + k)] += g * i8(wq, n * d.k + k) * sw;
          out[1][static_cast<std::size_t>(n * d.k + k)] += g * i8(xq, m * d.k + k) * sx;
        }
      }
    if (d.has_bias) {
      out[2].assign(static_cast<std::size_t>(d.n), 0.0);
      for (std::int64_t m = 0; m < d.m; ++m)
        for (std::int64_t n = 0; n < d.n; ++n)
          out[2][static_cast<std::size_t>(n)] +=
              std::fabs(static_cast<double>(f32(dy, m * d.n + n)));
    }
  }
  return out;
}

}  // namespace qforge::accel
