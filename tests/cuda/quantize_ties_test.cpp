// The quantize kernels multiply by a precomputed reciprocal and fall back to the exact division
// only near a rounding tie (kernels/numerics.cuh proves the window). These tests aim at exactly
// those places and compare with qforge::reference bit for bit: x = (k + 1/2) s built to be an
// exact tie in the input type, its neighbours one ulp away, values whose quotient x / s rounds
// to a tie in float32 although x * (1/s) does not (0.05f / 0.02f), tiny, huge, subnormal and
// power-of-two scales, NaN, infinities and signed zeros; per-tensor quantize through the
// plugin for every dtype and input type, and the per-row absmax kernel.
#include <cuda_runtime_api.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "kernels/rowwise.h"
#include "qforge/half.h"
#include "qforge/reference.h"
#include "support.h"

namespace qforge::cuda_test {
namespace {

// Significand bits of each input type (implicit bit included).
int significand_bits(FloatType t) {
  return t == FloatType::f32 ? 24 : t == FloatType::f16 ? 11 : 8;
}

// Raw element i of an array of type t, and the same with its bit pattern moved by `delta`
// (a neighbour one ulp away in magnitude; across zero or into inf/NaN it is still a valid input).
std::uint32_t raw_bits(FloatType t, const std::vector<std::byte>& v, std::size_t i) {
  std::uint32_t b = 0;
  std::memcpy(&b, v.data() + i * static_cast<std::size_t>(size_of(t)),
              static_cast<std::size_t>(size_of(t)));
  return b;
}
void push_raw(FloatType t, std::vector<std::byte>& v, std::uint32_t bits) {
  const auto size = static_cast<std::size_t>(size_of(t));
  v.resize(v.size() + size);
  std::memcpy(v.data() + v.size() - size, &bits, size);
}

class CudaQuantizeTies : public CudaTest {
 protected:
  // A scale m * 2^e with an odd m of `bits` significant bits (bits == 1: a power of two).
  float short_scale(int bits, int lo_exp, int hi_exp) {
    const int m =
        bits <= 1
            ? 1
            : (std::uniform_int_distribution<int>(1 << (bits - 2), (1 << (bits - 1)) - 1)(rng_) *
                   2 +
               1);
    return std::ldexp(static_cast<float>(m),
                      std::uniform_int_distribution<int>(lo_exp, hi_exp)(rng_));
  }

  // Inputs of type t around the quantization grid of scale s with zero point z: for every k
  // whose code matters (a margin beyond [qmin, qmax]) the value (k + 1/2) s rounded to t, and
  // its two neighbours; a few far values; the special values.
  std::vector<std::byte> tie_inputs(FloatType t, float s, std::int32_t z, std::int32_t qmin,
                                    std::int32_t qmax) {
    std::vector<std::byte> centres;
    std::int64_t count = 0;
    auto add = [&](float x) {
      centres.resize(centres.size() + static_cast<std::size_t>(size_of(t)));
      store_float(t, centres.data(), static_cast<std::size_t>(count++), x);
    };
    const std::int64_t lo = static_cast<std::int64_t>(qmin) - z - 3,
                       hi = static_cast<std::int64_t>(qmax) - z + 3;
    const std::int64_t step =
        std::max<std::int64_t>(1, (hi - lo) / 700);  // int16: a sample of the ks
    for (std::int64_t k = lo; k <= hi; k += step) add((static_cast<float>(k) + 0.5f) * s);
    for (const float far : {1e3f, 1e6f, 3e7f, -4e9f}) add(far * s);
    for (const float x :
         {0.0f, -0.0f, std::numeric_limits<float>::infinity(),
          -std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN(),
          std::numeric_limits<float>::max(), -std::numeric_limits<float>::max(),
          std::numeric_limits<float>::denorm_min(), std::numeric_limits<float>::min(), 0.05f,
          0.21f})
      add(x);
    std::vector<std::byte> out;
    for (std::int64_t i = 0; i < count; ++i) {
      const std::uint32_t b = raw_bits(t, centres, static_cast<std::size_t>(i));
      push_raw(t, out, b);
      push_raw(t, out, b + 1);
      push_raw(t, out, b - 1);
    }
    return out;
  }

  // Quantizes x per tensor through the plugin (at a pointer `offset` bytes into the array, so
  // that vector and element paths both run) and compares with the reference byte for byte.
  std::int32_t random_zero_point(DType dtype) {
    return std::uniform_int_distribution<std::int32_t>(traits(dtype).qmin,
                                                       traits(dtype).qmax)(rng_);
  }

  void check(FloatType t, DType dtype, float s, std::int32_t z, const std::vector<std::byte>& x,
             std::size_t offset) {
    const QuantizationParams p = QuantizationParams::per_tensor_affine(dtype, s, z);
    const std::int64_t n = static_cast<std::int64_t>(x.size()) / size_of(t);
    const QuantizeDesc desc{{n}, p, t};
    SCOPED_TRACE(describe({OpKind::quantize, desc}) + " offset " + std::to_string(offset));
    const std::size_t qbytes = storage_bytes(dtype, static_cast<std::size_t>(n));
    std::vector<std::byte> expected(qbytes);
    reference::quantize(desc, x.data(), expected.data());
    DeviceArray dx(ops(), x.size() + offset), dq(ops(), qbytes);
    std::vector<std::byte> shifted(offset);
    shifted.insert(shifted.end(), x.begin(), x.end());
    dx.write(shifted.data(), shifted.size());
    ops().quantize(desc, static_cast<std::byte*>(dx.data()) + offset, dq.data());
    const auto got = dq.read();
    std::size_t bad = 0, first = 0;
    for (std::size_t i = 0; i < qbytes; ++i)
      if (got[i] != expected[i] && bad++ == 0) first = i;
    EXPECT_EQ(bad, 0u) << "first differing byte " << first << ": got "
                       << static_cast<int>(got[first]) << ", expected "
                       << static_cast<int>(expected[first]) << " (input element "
                       << (traits(dtype).bits == 4 ? 2 * first : first / (traits(dtype).bits / 8))
                       << " = "
                       << load_float(t, x.data(),
                                     traits(dtype).bits == 4 ? 2 * first
                                                             : first / (traits(dtype).bits / 8))
                       << ")";
    EXPECT_TRUE(dq.guards_intact());
  }
};

TEST_F(CudaQuantizeTies, PerTensorTiesAndNeighboursMatchTheReference) {
  for (const FloatType t : {FloatType::f32, FloatType::f16, FloatType::bf16})
    for (const DType dtype :
         {DType::int8, DType::uint8, DType::int16, DType::uint16, DType::int4, DType::uint4}) {
      // Exact ties need (2k + 1) * m to fit the input's significand, |k| <= qmax - qmin + 3.
      const int k_bits = traits(dtype).bits + 2;
      const int m_bits = std::max(1, significand_bits(t) - k_bits);
      // float16 has exponents -24..15; keep (k + 1/2) s inside them.
      const bool narrow = t == FloatType::f16;
      std::vector<float> scales = {
          short_scale(m_bits, narrow ? -14 : -40, narrow ? -4 : 20),  // exact ties
          short_scale(1, narrow ? -14 : -60, narrow ? -6 : 60),       // power of two: no window
          std::exp2(
              std::uniform_real_distribution<float>(-20.0f, 10.0f)(rng_)),  // full significand
          0.02f,  // 0.05f / 0.02f: a tie only after the division rounds
          0.14f,
          1e-30f,    // x * r overflows for ordinary x: the exact path
          1e30f,     // quotients underflow to zero
          1e-40f,    // subnormal: 1 / s is infinite, the whole call takes the exact path
          0x1p126f,  // the largest scale whose reciprocal is normal
          0x1p127f,  // reciprocal subnormal: exact path
          0x1.fffffep127f};
      for (const float s : scales) {
        const std::int32_t z = random_zero_point(dtype);
        check(t, dtype, s, z, tie_inputs(t, s, z, traits(dtype).qmin, traits(dtype).qmax), 0);
      }
      // Unaligned input: the element-by-element path.
      const float s = short_scale(m_bits, narrow ? -14 : -10, narrow ? -4 : 10);
      const std::int32_t z = random_zero_point(dtype);
      check(t, dtype, s, z, tie_inputs(t, s, z, traits(dtype).qmin, traits(dtype).qmax),
            static_cast<std::size_t>(size_of(t)));
    }
}

// Exact ties for every k of int8, with zero points: (k + 1/2) s with s of few significant bits.
TEST_F(CudaQuantizeTies, EveryInt8TieWithZeroPoints) {
  for (int round = 0; round < 20; ++round) {
    const float s = short_scale(12, -30, 30);
    std::vector<float> v;
    for (int k = -300; k <= 300; ++k) {
      const float x = (static_cast<float>(k) + 0.5f) * s;
      v.push_back(x);
      v.push_back(std::nextafter(x, std::numeric_limits<float>::infinity()));
      v.push_back(std::nextafter(x, -std::numeric_limits<float>::infinity()));
    }
    std::vector<std::byte> x(v.size() * 4);
    std::memcpy(x.data(), v.data(), x.size());
    const DType dtype = round % 2 ? DType::int8 : DType::uint8;
    check(FloatType::f32, dtype, s, random_zero_point(dtype), x, 0);
  }
}

// The per-row absmax kernel: rows whose scale max|x| / 127 is exact, filled with exact ties
// (k + 1/2) s and their neighbours, against reference::quantize_value with the host's scale.
TEST_F(CudaQuantizeTies, RowwiseTiesMatchTheHostEvaluation) {
  for (const FloatType t : {FloatType::f32, FloatType::f16, FloatType::bf16})
    for (const std::int64_t cols : {std::int64_t{4096}, std::int64_t{20000}, std::int64_t{1003}}) {
      const std::int64_t rows = 6;
      SCOPED_TRACE(std::to_string(rows) + "x" + std::to_string(cols) + " " + name(t));
      std::vector<std::byte> x(static_cast<std::size_t>(rows * cols) *
                               static_cast<std::size_t>(size_of(t)));
      for (std::int64_t r = 0; r < rows; ++r) {
        // 127 s exact in the input type: float32 takes s of 16 significant bits, the 16-bit
        // types a power of two (127 has 7 bits, (2k + 1) up to 8).
        const float s = t == FloatType::f32 ? short_scale(16, -40, 40) : short_scale(1, -10, 4);
        std::uniform_int_distribution<int> k(-127, 126), pick(0, 2);
        const std::size_t row0 = static_cast<std::size_t>(r * cols);
        store_float(t, x.data(), row0, 127.0f * s);
        for (std::int64_t c = 1; c < cols; ++c) {
          store_float(t, x.data(), row0 + static_cast<std::size_t>(c),
                      (static_cast<float>(k(rng_)) + 0.5f) * s);
          const int move = pick(rng_) - 1;  // the tie itself or a neighbour
          if (move != 0) {
            std::uint32_t b = raw_bits(t, x, row0 + static_cast<std::size_t>(c));
            b += static_cast<std::uint32_t>(move);
            std::memcpy(x.data() + (row0 + static_cast<std::size_t>(c)) *
                                       static_cast<std::size_t>(size_of(t)),
                        &b, static_cast<std::size_t>(size_of(t)));
          }
        }
        if (r == 2) store_float(t, x.data(), row0 + 5, std::numeric_limits<float>::quiet_NaN());
      }
      const auto n = static_cast<std::size_t>(rows * cols);
      std::vector<std::int8_t> q_ref(n);
      std::vector<float> s_ref(static_cast<std::size_t>(rows));
      for (std::int64_t r = 0; r < rows; ++r) {
        float amax = 0.0f;
        for (std::int64_t c = 0; c < cols; ++c) {
          const float v = load_float(t, x.data(), static_cast<std::size_t>(r * cols + c));
          if (!std::isnan(v)) amax = std::max(amax, std::fabs(v));
        }
        const float s = std::max(amax / 127.0f, 1e-8f);
        s_ref[static_cast<std::size_t>(r)] = s;
        for (std::int64_t c = 0; c < cols; ++c) {
          const auto i = static_cast<std::size_t>(r * cols + c);
          q_ref[i] = static_cast<std::int8_t>(
              reference::quantize_value(load_float(t, x.data(), i), s, 0, -127, 127));
        }
      }
      DeviceArray dx(ops(), x.size()), dq(ops(), n), ds(ops(), s_ref.size() * 4);
      dx.write(x.data(), x.size());
      cuda::launch_rowwise_absmax_quantize(t, dx.data(), rows, cols,
                                           static_cast<std::int8_t*>(dq.data()),
                                           static_cast<float*>(ds.data()), nullptr);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      EXPECT_EQ(ds.read_as<float>(), s_ref);
      const auto got = dq.read_as<std::int8_t>();
      std::size_t bad = 0, first = 0;
      for (std::size_t i = 0; i < n; ++i)
        if (got[i] != q_ref[i] && bad++ == 0) first = i;
      EXPECT_EQ(bad, 0u) << "first at " << first << ": got " << int{got[first]} << ", expected "
                         << int{q_ref[first]} << " for x = " << load_float(t, x.data(), first);
      EXPECT_TRUE(dq.guards_intact());
    }
}

}  // namespace
}  // namespace qforge::cuda_test
