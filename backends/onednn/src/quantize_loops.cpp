#include "quantize_loops.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>

#include "qforge/error.h"
#include "qforge/half.h"
#include "qforge/reference.h"
#include "rounding.h"
#include "threads.h"
#include "vector_loops.h"

namespace qforge::onednn {
namespace {

constexpr std::int64_t kMinPerThread = 1 << 16;
constexpr std::int64_t kChunk = 256;

// Which (scale, zero point) pair element i uses and where the run of elements sharing it ends:
// QuantizationParams::param_index, a run at a time.
class ParamRuns {
 public:
  ParamRuns(const QuantizationParams& p, const Shape& shape) : g_(p.scheme().granularity) {
    n_ = element_count(shape);
    if (g_ == Granularity::per_channel) {
      const int axis = p.channel_axis(shape.size());
      extent_ = shape[static_cast<std::size_t>(axis)];
      for (std::size_t i = static_cast<std::size_t>(axis) + 1; i < shape.size(); ++i)
        inner_ *= shape[i];
    } else if (g_ == Granularity::block) {
      last_ = shape.back();
      block_ = p.scheme().block_size;
      blocks_ = (last_ + block_ - 1) / block_;
    }
  }
  // Pair of element i; *run_end receives the end of its run.
  std::size_t at(std::int64_t i, std::int64_t* run_end) const {
    switch (g_) {
      case Granularity::per_tensor: *run_end = n_; return 0;
      case Granularity::per_channel: {
        const std::int64_t outer = i / inner_;
        *run_end = (outer + 1) * inner_;
        return static_cast<std::size_t>(outer % extent_);
      }
      case Granularity::block: {
        const std::int64_t row = i / last_, j = (i % last_) / block_;
        *run_end = row * last_ + std::min((j + 1) * block_, last_);
        return static_cast<std::size_t>(row * blocks_ + j);
      }
    }
    *run_end = n_;
    return 0;
  }

 private:
  Granularity g_;
  std::int64_t n_ = 0, inner_ = 1, extent_ = 1, last_ = 1, block_ = 1, blocks_ = 1;
};

template <class T>
void dequantize_run(const T* q, float* x, std::int64_t n, float s, std::int32_t z) {
  for (std::int64_t i = 0; i < n; ++i)
    x[i] = dequantize_linear(static_cast<std::int32_t>(q[i]), s, z);
}

// Packed stores for 4-bit and binary: the caller zeroed the bytes of its range first.
void store_packed(DType t, std::uint8_t* q, std::int64_t i, std::int32_t v) {
  if (t == DType::binary) {
    if (v >= 0) q[i >> 3] = static_cast<std::uint8_t>(q[i >> 3] | (1u << (i & 7)));
  } else {
    const auto nib = static_cast<std::uint8_t>(v & 0xF);
    q[i >> 1] = static_cast<std::uint8_t>(q[i >> 1] | ((i & 1) ? nib << 4 : nib));
  }
}

std::int32_t load_packed(DType t, const std::uint8_t* q, std::int64_t i) {
  if (t == DType::binary) return ((q[i >> 3] >> (i & 7)) & 1) ? 1 : -1;
  const std::int32_t nib = (i & 1) ? q[i >> 1] >> 4 : q[i >> 1] & 0xF;
  return t == DType::int4 ? (nib ^ 8) - 8 : nib;
}

std::size_t packed_byte(DType t, std::int64_t i) {
  return static_cast<std::size_t>(t == DType::binary ? i >> 3 : i >> 1);
}

// Elements [begin, end) of any desc, run by run.
void quantize_range(const QuantizeDesc& d, const ParamRuns& runs, const void* x, void* q,
                    std::int64_t begin, std::int64_t end) {
  const QuantizationParams& p = d.params;
  const DType t = p.dtype();
  const bool log = p.scheme().mapping == Mapping::logarithmic;
  const bool f32 = d.float_type == FloatType::f32;
  const int bits = traits(t).bits;
  if (bits < 8) {  // zero our bytes: padding bits stay 0, the ORs below need a clean slate
    auto* bytes = static_cast<std::uint8_t*>(q);
    const std::size_t b0 = packed_byte(t, begin), b1 = packed_byte(t, end - 1) + 1;
    std::memset(bytes + b0, 0, b1 - b0);
  }
  float buf[kChunk];
  std::int32_t codes[kChunk];
  for (std::int64_t i = begin; i < end;) {
    std::int64_t run_end = 0;
    const std::size_t pi = runs.at(i, &run_end);
    run_end = std::min(run_end, end);
    const float s = p.scale(pi);
    const std::int32_t z = p.zero_point(pi);
    if (f32 && !log && t == DType::int8) {
      quantize_f32_s8(static_cast<const float*>(x) + i, static_cast<std::int8_t*>(q) + i,
                      run_end - i, s, z, p.qmin(), p.qmax());
      i = run_end;
      continue;
    }
    if (f32 && !log && t == DType::uint8) {
      quantize_f32_u8(static_cast<const float*>(x) + i, static_cast<std::uint8_t*>(q) + i,
                      run_end - i, s, z, p.qmin(), p.qmax());
      i = run_end;
      continue;
    }
    while (i < run_end) {
      const std::int64_t len = std::min(kChunk, run_end - i);
      const float* v = f32 ? static_cast<const float*>(x) + i : buf;
      if (!f32)
        for (std::int64_t j = 0; j < len; ++j)
          buf[j] = load_float(d.float_type, x, static_cast<std::size_t>(i + j));
      if (log) {
        for (std::int64_t j = 0; j < len; ++j) codes[j] = reference::quantize_log_value(v[j], s, t);
      } else if (t == DType::binary) {
        for (std::int64_t j = 0; j < len; ++j) codes[j] = quantize_binary(v[j]);
      } else {
        const std::int32_t qmin = p.qmin(), qmax = p.qmax();
        for (std::int64_t j = 0; j < len; ++j) codes[j] = quantize_linear(v[j], s, z, qmin, qmax);
      }
      switch (t) {
        case DType::int8:
          for (std::int64_t j = 0; j < len; ++j)
            static_cast<std::int8_t*>(q)[i + j] = static_cast<std::int8_t>(codes[j]);
          break;
        case DType::uint8:
          for (std::int64_t j = 0; j < len; ++j)
            static_cast<std::uint8_t*>(q)[i + j] = static_cast<std::uint8_t>(codes[j]);
          break;
        case DType::int16:
          for (std::int64_t j = 0; j < len; ++j)
            static_cast<std::int16_t*>(q)[i + j] = static_cast<std::int16_t>(codes[j]);
          break;
        case DType::uint16:
          for (std::int64_t j = 0; j < len; ++j)
            static_cast<std::uint16_t*>(q)[i + j] = static_cast<std::uint16_t>(codes[j]);
          break;
        default:
          for (std::int64_t j = 0; j < len; ++j)
            store_packed(t, static_cast<std::uint8_t*>(q), i + j, codes[j]);
          break;
      }
      i += len;
    }
  }
}

void dequantize_range(const QuantizeDesc& d, const ParamRuns& runs, const void* q, float* x,
                      std::int64_t begin, std::int64_t end) {
  const QuantizationParams& p = d.params;
  const DType t = p.dtype();
  const bool log = p.scheme().mapping == Mapping::logarithmic;
  for (std::int64_t i = begin; i < end;) {
    std::int64_t run_end = 0;
    const std::size_t pi = runs.at(i, &run_end);
    run_end = std::min(run_end, end);
    const float s = p.scale(pi);
    const std::int32_t z = p.zero_point(pi);
    const std::int64_t len = run_end - i;
    if (log) {
      for (std::int64_t j = i; j < run_end; ++j)
        x[j] = reference::dequantize_log_value(load_element(t, q, static_cast<std::size_t>(j)), s);
    } else {
      switch (t) {
        case DType::int8:
          dequantize_s8_f32(static_cast<const std::int8_t*>(q) + i, x + i, len, s, z);
          break;
        case DType::uint8:
          dequantize_u8_f32(static_cast<const std::uint8_t*>(q) + i, x + i, len, s, z);
          break;
        case DType::int16:
          dequantize_run(static_cast<const std::int16_t*>(q) + i, x + i, len, s, z);
          break;
        case DType::uint16:
          dequantize_run(static_cast<const std::uint16_t*>(q) + i, x + i, len, s, z);
          break;
        default:
          for (std::int64_t j = i; j < run_end; ++j)
            x[j] = dequantize_linear(load_packed(t, static_cast<const std::uint8_t*>(q), j), s, z);
          break;
      }
    }
    i = run_end;
  }
}

}  // namespace

void quantize_loop(const QuantizeDesc& d, const void* x, void* q, int threads) {
  d.params.validate_for(d.shape);
  const std::int64_t n = element_count(d.shape);
  if (n == 0) return;
  const ParamRuns runs(d.params, d.shape);
  parallel_ranges(n, 8, threads, kMinPerThread,
                  [&](std::int64_t b, std::int64_t e) { quantize_range(d, runs, x, q, b, e); });
}

void dequantize_loop(const QuantizeDesc& d, const void* q, float* x, int threads) {
  d.params.validate_for(d.shape);
  const std::int64_t n = element_count(d.shape);
  if (n == 0) return;
  const ParamRuns runs(d.params, d.shape);
  parallel_ranges(n, 8, threads, kMinPerThread,
                  [&](std::int64_t b, std::int64_t e) { dequantize_range(d, runs, q, x, b, e); });
}

namespace {

// The first non-finite (or, with nan_ok, infinite) element, or -1.
struct Scan {
  float lo = 0.0f, hi = 0.0f;  // min(0, min x), max(0, max x) over the values taken
  float amax = 0.0f;           // max |x|
  std::int64_t bad = -1;
};

Scan scan(const float* x, std::int64_t n, int threads, bool nan_ok) {
  const int t = std::max(1, threads);
  std::vector<Scan> parts(static_cast<std::size_t>(t));
  const std::int64_t per = (n + t - 1) / t;
  parallel_ranges(n, per, t, kMinPerThread, [&](std::int64_t b, std::int64_t e) {
    Scan s;
    for (std::int64_t i = b; i < e; ++i) {
      const float v = x[i];
      if (std::isinf(v) || (!nan_ok && std::isnan(v))) {
        s.bad = i;
        break;
      }
      if (std::isnan(v)) continue;
      s.lo = std::min(s.lo, v);
      s.hi = std::max(s.hi, v);
      s.amax = std::max(s.amax, std::fabs(v));
    }
    parts[static_cast<std::size_t>(b / per)] = s;
  });
  Scan all;
  for (const Scan& s : parts) {  // ranges are in order: the first bad element wins
    if (all.bad < 0 && s.bad >= 0) all.bad = s.bad;
    all.lo = std::min(all.lo, s.lo);
    all.hi = std::max(all.hi, s.hi);
    all.amax = std::max(all.amax, s.amax);
  }
  return all;
}

std::string float_text(float v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(v));
  return buf;
}

}  // namespace

QuantizationParams dynamic_quantize_loop(const DynamicQuantizeDesc& d, const float* x,
                                         std::uint8_t* y, int threads) {
  const std::int64_t n = element_count(d.shape);
  if (n > 0 && (x == nullptr || y == nullptr))
    throw Error(ErrorCode::invalid_argument, "onednn: dynamic_quantize_linear: null x or y for " +
                                                 std::to_string(n) +
                                                 " elements; expected host pointers");
  const Scan s = scan(x, n, threads, /*nan_ok=*/true);
  if (s.bad >= 0)
    throw Error(ErrorCode::invalid_argument,
                "onednn: dynamic_quantize_linear: x[" + std::to_string(s.bad) +
                    "] = " + float_text(x[s.bad]) +
                    "; expected finite values (an infinite range has no uint8 scale)");
  // The reference's own expressions for (s, z), so the params are identical.
  const QuantizationParams p =
      reference::params_from_range(DType::uint8, Mapping::affine, s.lo, s.hi);
  const float scale = p.scale();
  const std::int32_t z = p.zero_point();
  parallel_ranges(n, 64, threads, kMinPerThread, [&](std::int64_t b, std::int64_t e) {
    quantize_f32_u8(x + b, y + b, e - b, scale, z, 0, 255);
  });
  return p;
}

float absmax_finite(const float* x, std::int64_t n, int threads, const char* op, const char* why) {
  const Scan s = scan(x, n, threads, /*nan_ok=*/false);
  if (s.bad >= 0)
    throw Error(ErrorCode::invalid_argument,
                std::string("onednn: ") + op + ": x[" + std::to_string(s.bad) +
                    "] = " + float_text(x[s.bad]) + "; expected finite inputs (" + why + ")");
  return s.amax;
}

void quantize_int8(const float* x, std::int8_t* q, std::int64_t n, float s, std::int32_t qmin,
                   std::int32_t qmax, int threads) {
  parallel_ranges(n, 64, threads, kMinPerThread, [&](std::int64_t b, std::int64_t e) {
    quantize_f32_s8(x + b, q + b, e - b, s, 0, qmin, qmax);
  });
}

}  // namespace qforge::onednn
