#include "epilogue.h"

#include <string>

#include "qforge/error.h"
#include "qforge/half.h"
#include "qforge/reference.h"
#include "rounding.h"
#include "threads.h"
#include "vector_loops.h"

namespace qforge::onednn {
namespace {

// Rows per thread so that each thread gets at least ~16K elements.
std::int64_t min_rows(std::int64_t n) {
  return std::max<std::int64_t>(1, 16384 / std::max<std::int64_t>(1, n));
}

float scale_of(const QuantizationParams& p, std::int64_t i) {
  return p.count() == 1 ? p.scale(0) : p.scale(static_cast<std::size_t>(i));
}

std::int32_t saturate64(std::int64_t v, std::int32_t lo, std::int32_t hi) {
  return static_cast<std::int32_t>(v < lo ? lo : v > hi ? hi : v);
}

void store_code(DType t, void* y, std::int64_t i, std::int32_t q) {
  if (t == DType::int8) static_cast<std::int8_t*>(y)[i] = static_cast<std::int8_t>(q);
  else static_cast<std::uint8_t*>(y)[i] = static_cast<std::uint8_t>(q);
}

// Runs body(row_begin, row_end) on threads, collecting the first qforge::Error a row throws
// (exceptions must not leave an OpenMP region) and rethrowing it on the calling thread.
template <class Body>
void rows_rethrowing(std::int64_t m, std::int64_t n, int threads, const Body& body) {
  std::string error;
  ErrorCode code = ErrorCode::internal;
  bool failed = false;
  parallel_ranges(m, 1, threads, min_rows(n), [&](std::int64_t r0, std::int64_t r1) {
    try {
      body(r0, r1);
    } catch (const Error& e) {
#pragma omp critical(qforge_onednn_epilogue_error)
      if (!failed) {
        failed = true;
        code = e.code();
        error = e.what();
      }
    }
  });
  if (failed) throw Error(code, error);
}

}  // namespace

void compensate(std::int32_t* c, std::int64_t m, std::int64_t n, const Compensation& comp,
                int threads) {
  const bool has_za = !comp.za.empty(), has_zb = !comp.zb.empty();
  if (!has_za && !has_zb) return;
  const auto k32 = static_cast<std::uint32_t>(comp.k);
  parallel_ranges(m, 1, threads, min_rows(n), [&](std::int64_t r0, std::int64_t r1) {
    for (std::int64_t r = r0; r < r1; ++r) {
      std::int32_t* row = c + r * n;
      // Unsigned arithmetic: well defined modulo 2^32.
      const std::uint32_t za =
          has_za ? static_cast<std::uint32_t>(comp.za[static_cast<std::size_t>(r)]) : 0u;
      const std::uint32_t rt =
          has_zb ? static_cast<std::uint32_t>(comp.row_term[static_cast<std::size_t>(r)]) : 0u;
      for (std::int64_t j = 0; j < n; ++j) {
        std::uint32_t v = static_cast<std::uint32_t>(row[j]);
        const std::uint32_t zb =
            has_zb ? static_cast<std::uint32_t>(comp.zb[static_cast<std::size_t>(j)]) : 0u;
        const std::uint32_t ct =
            has_za ? static_cast<std::uint32_t>(comp.col_term[static_cast<std::size_t>(j)]) : 0u;
        v = v - zb * rt - za * ct + k32 * za * zb;
        row[j] = static_cast<std::int32_t>(v);
      }
    }
  });
}

void dequant_epilogue(const std::int32_t* c, const MatmulDesc& d, const float* bias, void* y,
                      int threads) {
  const std::int64_t n = d.n;
  const bool per_col = d.b.count() != 1;
  parallel_ranges(d.m, 1, threads, min_rows(n), [&](std::int64_t r0, std::int64_t r1) {
    std::vector<float> row_out(d.out_type == FloatType::f32 ? 0 : static_cast<std::size_t>(n));
    for (std::int64_t r = r0; r < r1; ++r) {
      const float sa = scale_of(d.a, r);
      const std::int32_t* cr = c + r * n;
      float* out = d.out_type == FloatType::f32 ? static_cast<float*>(y) + r * n : row_out.data();
      const float* sb = d.b.scales().data();
      if (per_col) {
        for (std::int64_t j = 0; j < n; ++j) out[j] = (static_cast<float>(cr[j]) * sa) * sb[j];
      } else {
        const float s = sb[0];
        for (std::int64_t j = 0; j < n; ++j) out[j] = (static_cast<float>(cr[j]) * sa) * s;
      }
      if (d.has_bias)
        for (std::int64_t j = 0; j < n; ++j) out[j] = out[j] + bias[j];
      if (d.out_type == FloatType::f16) {
        auto* o = static_cast<Float16*>(y) + r * n;
        for (std::int64_t j = 0; j < n; ++j) o[j] = to_float16(out[j]);
      } else if (d.out_type == FloatType::bf16) {
        auto* o = static_cast<BFloat16*>(y) + r * n;
        for (std::int64_t j = 0; j < n; ++j) o[j] = to_bfloat16(out[j]);
      }
    }
  });
}

void requant_epilogue(const std::int32_t* c, const MatmulDesc& d, void* y, int threads) {
  const QuantizationParams& yp = *d.y;
  const float sy = yp.scale();
  const std::int32_t zy = yp.zero_point(), qmin = yp.qmin(), qmax = yp.qmax();
  const DType out = yp.dtype();
  const std::int64_t n = d.n;
  const bool fixed = d.requant_mode == RequantMode::fixed_point;
  rows_rethrowing(d.m, n, threads, [&](std::int64_t r0, std::int64_t r1) {
    std::vector<float> mult(static_cast<std::size_t>(n));
    std::vector<reference::FixedPointMultiplier> fm(fixed ? static_cast<std::size_t>(n) : 0);
    std::vector<std::int32_t> codes(static_cast<std::size_t>(n));
    bool have_row_params = false;
    for (std::int64_t r = r0; r < r1; ++r) {
      // The multipliers depend on the row only through a per-row sa.
      if (!have_row_params || d.a.count() != 1) {
        const float sa = scale_of(d.a, r);
        for (std::int64_t j = 0; j < n; ++j) {
          mult[static_cast<std::size_t>(j)] = (sa * scale_of(d.b, j)) / sy;  // float32, this order
          if (fixed)
            fm[static_cast<std::size_t>(j)] =
                reference::quantize_multiplier(mult[static_cast<std::size_t>(j)]);
        }
        have_row_params = true;
      }
      const std::int32_t* cr = c + r * n;
      if (fixed) {
        for (std::int64_t j = 0; j < n; ++j)
          codes[static_cast<std::size_t>(j)] =
              saturate64(static_cast<std::int64_t>(reference::multiply_by_quantized_multiplier(
                             cr[j], fm[static_cast<std::size_t>(j)])) +
                             zy,
                         qmin, qmax);
        for (std::int64_t j = 0; j < n; ++j)
          store_code(out, y, r * n + j, codes[static_cast<std::size_t>(j)]);
      } else if (out == DType::int8) {
        requantize_s8(cr, mult.data(), static_cast<std::int8_t*>(y) + r * n, n, zy, qmin, qmax);
      } else {
        requantize_u8(cr, mult.data(), static_cast<std::uint8_t*>(y) + r * n, n, zy, qmin, qmax);
      }
    }
  });
}

void requantize_loop(const RequantizeDesc& d, const std::int32_t* c, void* y, int threads) {
  const std::int64_t count = element_count(d.shape);
  const auto& tr = traits(d.out_dtype);
  std::int64_t stride = 1, extent = 1;
  if (d.multipliers.size() > 1) {
    const int rank = static_cast<int>(d.shape.size());
    const int axis = d.axis < 0 ? d.axis + rank : d.axis;
    extent = d.shape[static_cast<std::size_t>(axis)];
    for (std::size_t i = static_cast<std::size_t>(axis) + 1; i < d.shape.size(); ++i)
      stride *= d.shape[i];
  }
  // Converted once, on this thread: quantize_multiplier throws for multipliers >= 2^31.
  std::vector<reference::FixedPointMultiplier> fixed;
  if (d.mode == RequantMode::fixed_point)
    for (const float m : d.multipliers) fixed.push_back(reference::quantize_multiplier(m));
  const std::int32_t z = d.out_zero_point;
  parallel_ranges(count, 1, threads, 65536, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t i = begin; i < end;) {
      // A run of elements sharing one multiplier.
      const std::int64_t block = i / stride;
      const auto ch = static_cast<std::size_t>(block % extent);
      const std::int64_t run_end = std::min(end, (block + 1) * stride);
      if (d.mode == RequantMode::fixed_point) {
        for (; i < run_end; ++i)
          store_code(d.out_dtype, y, i,
                     saturate64(static_cast<std::int64_t>(
                                    reference::multiply_by_quantized_multiplier(c[i], fixed[ch])) +
                                    z,
                                tr.qmin, tr.qmax));
      } else {
        const float m = d.multipliers[ch];
        if (d.out_dtype == DType::int8)
          requantize_s8(c + i, m, static_cast<std::int8_t*>(y) + i, run_end - i, z, tr.qmin,
                        tr.qmax);
        else
          requantize_u8(c + i, m, static_cast<std::uint8_t*>(y) + i, run_end - i, z, tr.qmin,
                        tr.qmax);
        i = run_end;
      }
    }
  });
}

}  // namespace qforge::onednn
