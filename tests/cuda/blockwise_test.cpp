// matmul_integer and matmul_dequant with block-wise B (the s8_qbw_gemm kernels) on every kernel
// the plugin lists, run through plans of each: int32 results equal to qforge::reference exactly;
// float results within the conformance tolerance (NMSE against the size of the per-block terms)
// and within a few float32 ulps of that size element by element. Shapes cover M = 1, odd M and
// N, K with a partial last block, several split-K factors; operands int8/uint8 A per tensor or
// per row with zero points, B int4/uint4 (two codes per byte, unpacked in registers) and
// int8/uint8, symmetric and affine, blocks of 16, 32, 64, 96, 128 and 256; packed weights; the
// int32 bound; refusals for what is not implemented.
#include <algorithm>
#include <cmath>

#include "qforge/error.h"
#include "qforge/reference.h"
#include "support.h"

namespace qforge::cuda_test {
namespace {

struct Shape3 {
  std::int64_t m, n, k;
};

MatmulDesc make_desc(std::int64_t m, std::int64_t n, std::int64_t k, QuantizationParams a,
                     QuantizationParams b, MatrixLayout layout) {
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

class CudaBlockwise : public CudaTest {
 protected:
  QuantizationParams a_params(DType t, bool per_row, std::int64_t m, bool zero_point) {
    const std::size_t c = per_row ? static_cast<std::size_t>(m) : 1;
    std::vector<float> scales(c);
    for (auto& s : scales)
      s = std::exp2(std::uniform_real_distribution<float>(-10.0f, -4.0f)(rng_));
    if (!zero_point)
      return per_row ? QuantizationParams::per_channel(t, Mapping::symmetric, 0, scales)
                     : QuantizationParams::per_tensor_symmetric(t, scales[0]);
    std::vector<std::int32_t> zps(c);
    std::uniform_int_distribution<std::int32_t> z(traits(t).qmin, traits(t).qmax);
    for (auto& v : zps) v = z(rng_);
    return per_row ? QuantizationParams::per_channel(t, Mapping::affine, 0, scales, zps)
                   : QuantizationParams::per_tensor_affine(t, scales[0], zps[0]);
  }
  QuantizationParams b_params(DType t, Mapping map, std::int64_t block, std::int64_t n,
                              std::int64_t k) {
    const auto count = static_cast<std::size_t>(n * ((k + block - 1) / block));
    std::vector<float> scales(count);
    // Scales keep every output inside float16's range.
    for (auto& s : scales)
      s = std::exp2(std::uniform_real_distribution<float>(-12.0f, -4.0f)(rng_));
    std::vector<std::int32_t> zps;
    if (map == Mapping::affine) {
      zps.resize(count);
      std::uniform_int_distribution<std::int32_t> z(traits(t).qmin, traits(t).qmax);
      for (auto& v : zps) v = z(rng_);
      zps[0] = traits(t).qmin;  // the ends of the range
      zps[count - 1] = traits(t).qmax;
    }
    return QuantizationParams::blockwise(t, map, block, scales, zps);
  }
  std::vector<std::uint8_t> random_bytes(std::size_t count) {
    std::vector<std::uint8_t> v(count);
    std::uniform_int_distribution<int> d(0, 255);
    for (auto& b : v) b = static_cast<std::uint8_t>(d(rng_));
    return v;
  }

  // Per element of Y, the size of what the epilogue rounds: sum over blocks of |C_j sa sb_j|
  // plus |bias| (the conformance suite's measure).
  std::vector<double> magnitudes(const MatmulDesc& d, const std::vector<std::uint8_t>& a,
                                 const std::vector<std::uint8_t>& b,
                                 const std::vector<float>& bias) {
    const std::int64_t bs = d.b.scheme().block_size, nb = (d.k + bs - 1) / bs;
    std::vector<double> mag(static_cast<std::size_t>(d.m * d.n));
    for (std::int64_t m = 0; m < d.m; ++m) {
      const std::size_t ap =
          d.a.scheme().granularity == Granularity::per_tensor ? 0 : static_cast<std::size_t>(m);
      for (std::int64_t n = 0; n < d.n; ++n) {
        double total =
            d.has_bias ? std::fabs(static_cast<double>(bias[static_cast<std::size_t>(n)])) : 0.0;
        for (std::int64_t j = 0; j < nb; ++j) {
          const auto bp = static_cast<std::size_t>(n * nb + j);
          std::int64_t c = 0;
          for (std::int64_t k = j * bs; k < std::min(d.k, (j + 1) * bs); ++k)
            c += static_cast<std::int64_t>(
                     load_element(d.a.dtype(), a.data(), static_cast<std::size_t>(m * d.k + k)) -
                     d.a.zero_point(ap)) *
                 (load_element(d.b.dtype(), b.data(), static_cast<std::size_t>(n * d.k + k)) -
                  d.b.zero_point(bp));
          total += std::fabs(static_cast<double>(c)) * d.a.scale(ap) * d.b.scale(bp);
        }
        mag[static_cast<std::size_t>(m * d.n + n)] = total;
      }
    }
    return mag;
  }

  // Runs matmul_integer and matmul_dequant (every output type) on every listed kernel.
  void check(const MatmulDesc& base, const std::vector<std::uint8_t>& a,
             const std::vector<std::uint8_t>& b) {
    SCOPED_TRACE(describe({OpKind::matmul_dequant, base}));
    std::vector<float> bias(static_cast<std::size_t>(base.n));
    std::normal_distribution<float> normal(0.0f, 2.0f);
    for (auto& v : bias) v = normal(rng_);
    DeviceArray da(ops(), a.size()), db(ops(), b.size()), dbias(ops(), bias.size() * 4),
        dout(ops(), static_cast<std::size_t>(base.m * base.n) * 4);
    da.write(a);
    db.write(b);
    dbias.write(bias);

    const Support si = ops().supports({OpKind::matmul_integer, base});
    ASSERT_TRUE(si.supported) << si.reason;
    std::vector<std::int32_t> c_ref(static_cast<std::size_t>(base.m * base.n));
    reference::matmul_integer(base, a.data(), b.data(), c_ref.data());
    for (const auto& kernel : si.kernels) {
      SCOPED_TRACE("matmul_integer on " + kernel);
      dout.poison(0xCD);
      EXPECT_EQ(run_plan(ops(), {OpKind::matmul_integer, base}, kernel, {da.data(), db.data()},
                         {dout.data()}),
                kernel);
      const auto got = dout.read_as<std::int32_t>();
      std::size_t bad = 0, first = 0;
      for (std::size_t i = 0; i < got.size(); ++i)
        if (got[i] != c_ref[i] && bad++ == 0) first = i;
      EXPECT_EQ(bad, 0u) << "first at (" << first / base.n << ", " << first % base.n << "): got "
                         << got[first] << ", expected " << c_ref[first];
      EXPECT_TRUE(dout.guards_intact());
    }

    MatmulDesc d = base;
    d.has_bias = true;
    const std::vector<double> mag = magnitudes(d, a, b, bias);
    for (const FloatType out : {FloatType::f32, FloatType::f16, FloatType::bf16}) {
      d.out_type = out;
      d.has_bias = out != FloatType::f16;
      const std::vector<double> mag_here = d.has_bias ? mag : magnitudes(d, a, b, bias);
      std::vector<std::byte> y_ref(static_cast<std::size_t>(d.m * d.n) *
                                   static_cast<std::size_t>(size_of(out)));
      reference::matmul_dequant(d, a.data(), b.data(), bias.data(), y_ref.data());
      const Support sd = ops().supports({OpKind::matmul_dequant, d});
      ASSERT_TRUE(sd.supported) << sd.reason;
      for (const auto& kernel : sd.kernels) {
        SCOPED_TRACE(std::string("matmul_dequant ") + name(out) + " on " + kernel);
        dout.poison(0xCD);
        std::vector<const void*> in{da.data(), db.data()};
        if (d.has_bias) in.push_back(dbias.data());
        EXPECT_EQ(run_plan(ops(), {OpKind::matmul_dequant, d}, kernel, in, {dout.data()}), kernel);
        const auto got = dout.read();
        double err = 0, size = 0;
        std::size_t worst = 0;
        double worst_ratio = 0;
        // float16 outputs below its smallest normal are spaced 2^-24 apart whatever their size.
        const double floor = out == FloatType::f16 ? 0x1p-14 : 1e-30;
        for (std::size_t i = 0; i < mag_here.size(); ++i) {
          const double g = load_float(out, got.data(), i), r = load_float(out, y_ref.data(), i);
          const double diff = g == r ? 0.0 : g - r;
          err += diff * diff;
          size += mag_here[i] * mag_here[i];
          const double ratio = std::fabs(diff) / std::max(mag_here[i], floor);
          if (!(ratio <= worst_ratio)) {
            worst_ratio = ratio;
            worst = i;
          }
        }
        const double nmse = size > 0 ? err / size : err;
        const double bound = out == FloatType::f32 ? 1e-12 : out == FloatType::f16 ? 1e-6 : 1e-4;
        EXPECT_LE(nmse, bound) << "worst element " << worst << " (" << worst / d.n << ", "
                               << worst % d.n << "): got " << load_float(out, got.data(), worst)
                               << ", expected " << load_float(out, y_ref.data(), worst)
                               << ", magnitude " << mag_here[worst];
        // Element by element: a few float32 roundings of the terms' size (float32 output), one
        // rounding of the output type (plus those) otherwise.
        const double per_element = out == FloatType::f32   ? 1e-5
                                   : out == FloatType::f16 ? 2e-3
                                                           : 2e-2;
        EXPECT_LE(worst_ratio, per_element)
            << "element " << worst << ": got " << load_float(out, got.data(), worst)
            << ", expected " << load_float(out, y_ref.data(), worst);
        EXPECT_TRUE(dout.guards_intact());
      }
    }
  }

  std::vector<std::uint8_t> b_codes(DType t, std::int64_t n, std::int64_t k) {
    return random_bytes(storage_bytes(t, static_cast<std::size_t>(n * k)));
  }
};

const Shape3 kShapes[] = {{1, 1, 32},
                          {1, 37, 100},
                          {5, 7, 33},
                          {16, 129, 256},
                          {17, 64, 96},
                          {33, 255, 1000},
                          {130, 200, 64},
                          {1, 300, 4099},
                          {64, 256, 2048},
                          // M = 2..4: the block-wise GEMV's other row counts, one with a long K
                          {2, 40, 1056},
                          {3, 70, 200},
                          {4, 129, 544},
                          {3, 24, 24000}};

TEST_F(CudaBlockwise, FourBitBOnEveryKernel) {
  for (const auto& sh : kShapes)
    for (const DType tb : {DType::int4, DType::uint4}) {
      const DType ta = std::uniform_int_distribution<int>(0, 1)(rng_) ? DType::int8 : DType::uint8;
      const bool per_row = std::uniform_int_distribution<int>(0, 1)(rng_);
      const bool a_zp = std::uniform_int_distribution<int>(0, 1)(rng_);
      const Mapping map =
          std::uniform_int_distribution<int>(0, 1)(rng_) ? Mapping::affine : Mapping::symmetric;
      MatmulDesc d = make_desc(sh.m, sh.n, sh.k, a_params(ta, per_row, sh.m, a_zp),
                               b_params(tb, map, 32, sh.n, sh.k), MatrixLayout::nk);
      check(d, random_bytes(static_cast<std::size_t>(sh.m * sh.k)), b_codes(tb, sh.n, sh.k));
    }
}

TEST_F(CudaBlockwise, EightBitBOnEveryKernel) {
  for (const auto& sh : kShapes)
    for (const DType tb : {DType::int8, DType::uint8}) {
      const DType ta = std::uniform_int_distribution<int>(0, 1)(rng_) ? DType::int8 : DType::uint8;
      const bool per_row = std::uniform_int_distribution<int>(0, 1)(rng_);
      const Mapping map =
          std::uniform_int_distribution<int>(0, 1)(rng_) ? Mapping::affine : Mapping::symmetric;
      MatmulDesc d = make_desc(sh.m, sh.n, sh.k, a_params(ta, per_row, sh.m, true),
                               b_params(tb, map, 32, sh.n, sh.k), MatrixLayout::nk);
      check(d, random_bytes(static_cast<std::size_t>(sh.m * sh.k)), b_codes(tb, sh.n, sh.k));
    }
}

// Blocks of 16 (two per tensor-core step) and blocks spanning several steps, partial last blocks.
TEST_F(CudaBlockwise, OtherBlockSizes) {
  struct Case {
    DType tb;
    std::int64_t block;
  };
  for (const Case c : {Case{DType::uint4, 16}, Case{DType::int8, 16}, Case{DType::int4, 64},
                       Case{DType::uint8, 64}, Case{DType::uint4, 96}, Case{DType::int4, 128},
                       Case{DType::uint8, 128}, Case{DType::int4, 256}})
    for (const Shape3 sh : {Shape3{1, 40, 300}, Shape3{20, 33, 257}, Shape3{129, 70, 520}}) {
      MatmulDesc d =
          make_desc(sh.m, sh.n, sh.k, a_params(DType::uint8, sh.m % 2 == 1, sh.m, true),
                    b_params(c.tb, Mapping::affine, c.block, sh.n, sh.k), MatrixLayout::nk);
      check(d, random_bytes(static_cast<std::size_t>(sh.m * sh.k)), b_codes(c.tb, sh.n, sh.k));
    }
}

TEST_F(CudaBlockwise, PackedWeightsGiveTheSameResults) {
  for (const DType tb : {DType::uint4, DType::uint8}) {
    const Shape3 sh{19, 77, 333};
    MatmulDesc d = make_desc(sh.m, sh.n, sh.k, a_params(DType::uint8, true, sh.m, true),
                             b_params(tb, Mapping::affine, 32, sh.n, sh.k), MatrixLayout::nk);
    const auto a = random_bytes(static_cast<std::size_t>(sh.m * sh.k));
    const auto b = b_codes(tb, sh.n, sh.k);
    DeviceArray da(ops(), a.size()), db(ops(), b.size()),
        dc(ops(), static_cast<std::size_t>(sh.m * sh.n) * 4),
        dy(ops(), static_cast<std::size_t>(sh.m * sh.n) * 4),
        dy2(ops(), static_cast<std::size_t>(sh.m * sh.n) * 4);
    da.write(a);
    db.write(b);
    ops().matmul_dequant(d, da.data(), db.data(), nullptr, dy.data());
    MatmulDesc pack_desc = d;
    pack_desc.m = 1;
    pack_desc.a = QuantizationParams::per_tensor_symmetric(DType::int8, 0.5f);
    const auto packed = ops().pack_weights(pack_desc, db.data());
    EXPECT_EQ(packed->backend(), "cuda");
    EXPECT_GT(packed->bytes(), 0u);
    db.poison(0x11);  // the packed copy must not read the original any more
    std::vector<std::int32_t> expected(static_cast<std::size_t>(sh.m * sh.n));
    reference::matmul_integer(d, a.data(), b.data(), expected.data());
    ops().matmul_integer_packed(d, da.data(), *packed, static_cast<std::int32_t*>(dc.data()));
    EXPECT_EQ(dc.read_as<std::int32_t>(), expected);
    // The same kernel and arithmetic as the direct call: the same bits.
    ops().matmul_dequant_packed(d, da.data(), *packed, nullptr, dy2.data());
    EXPECT_EQ(dy2.read_as<float>(), dy.read_as<float>());
    MatmulDesc other = d;
    other.k = 332;
    other.b = b_params(tb, Mapping::affine, 32, sh.n, other.k);
    try {
      ops().matmul_integer_packed(other, da.data(), *packed, static_cast<std::int32_t*>(dc.data()));
      ADD_FAILURE() << "packed weights were used with another K";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::shape_mismatch) << e.what();
    }
  }
}

// K at the int32-safe bound the plugin claims, operands at the far ends of their ranges: the
// exact sum sits just below 2^31 in magnitude.
TEST_F(CudaBlockwise, ExactAtTheInt32Bound) {
  MatmulDesc d = make_desc(2, 3, 1, QuantizationParams::per_tensor_symmetric(DType::int8, 0.5f),
                           b_params(DType::int4, Mapping::affine, 32, 3, 1), MatrixLayout::nk);
  // Find the largest K supports() accepts (the bound is K = INT32_MAX / (128 * 15)).
  d.k = std::numeric_limits<std::int32_t>::max() / (128 * 15);
  std::vector<std::int32_t> zps(static_cast<std::size_t>(3 * ((d.k + 31) / 32)), 7);
  d.b = QuantizationParams::blockwise(DType::int4, Mapping::affine, 32,
                                      std::vector<float>(zps.size(), 0.25f), zps);
  ASSERT_TRUE(ops().supports({OpKind::matmul_integer, d}).supported);
  MatmulDesc beyond = d;
  beyond.k += 1;
  beyond.b = QuantizationParams::blockwise(
      DType::int4, Mapping::affine, 32,
      std::vector<float>(static_cast<std::size_t>(3 * ((beyond.k + 31) / 32)), 0.25f),
      std::vector<std::int32_t>(static_cast<std::size_t>(3 * ((beyond.k + 31) / 32)), 7));
  EXPECT_FALSE(ops().supports({OpKind::matmul_integer, beyond}).supported);
  // A = -128 and B = -8 (zero point 7: |b - zb| = 15) everywhere but a few positions.
  std::vector<std::uint8_t> a(static_cast<std::size_t>(d.m * d.k), 0x80);
  std::vector<std::uint8_t> b(storage_bytes(DType::int4, static_cast<std::size_t>(d.n * d.k)),
                              0x88);
  std::uniform_int_distribution<std::size_t> pos(0, a.size() - 1);
  for (int i = 0; i < 50; ++i) a[pos(rng_)] = 0;
  std::vector<std::int32_t> expected(static_cast<std::size_t>(d.m * d.n));
  reference::matmul_integer(d, a.data(), b.data(), expected.data());
  DeviceArray da(ops(), a.size()), db(ops(), b.size()), dc(ops(), expected.size() * 4);
  da.write(a);
  db.write(b);
  for (const auto& kernel : ops().supports({OpKind::matmul_integer, d}).kernels) {
    SCOPED_TRACE(kernel);
    run_plan(ops(), {OpKind::matmul_integer, d}, kernel, {da.data(), db.data()}, {dc.data()});
    EXPECT_EQ(dc.read_as<std::int32_t>(), expected);
  }
}

TEST_F(CudaBlockwise, RefusesWhatIsNotImplemented) {
  const auto a = QuantizationParams::per_tensor_symmetric(DType::int8, 0.5f);
  auto refused = [&](OpKind kind, const MatmulDesc& d, const char* word) {
    const Support s = ops().supports({kind, d});
    EXPECT_FALSE(s.supported) << describe({kind, d});
    EXPECT_NE(s.reason.find(word), std::string::npos) << s.reason;
  };
  // A block size that is neither 16 nor a multiple of 32, and one beyond the 8-bit limit.
  refused(OpKind::matmul_dequant,
          make_desc(4, 8, 96, a, b_params(DType::int4, Mapping::symmetric, 48, 8, 96),
                    MatrixLayout::nk),
          "block_size 48");
  refused(OpKind::matmul_dequant,
          make_desc(4, 8, 512, a, b_params(DType::int8, Mapping::symmetric, 256, 8, 512),
                    MatrixLayout::nk),
          "block_size 256");
  // Layout kn and qlinear_matmul: the reference rejects them too.
  refused(OpKind::matmul_integer,
          make_desc(4, 8, 64, a, b_params(DType::int4, Mapping::symmetric, 32, 8, 64),
                    MatrixLayout::kn),
          "nk");
  MatmulDesc q = make_desc(4, 8, 64, a, b_params(DType::int4, Mapping::symmetric, 32, 8, 64),
                           MatrixLayout::nk);
  q.y = QuantizationParams::per_tensor_symmetric(DType::int8, 1.0f);
  refused(OpKind::qlinear_matmul, q, "requantized");
  DeviceArray da(ops(), 256), db(ops(), 256), dc(ops(), 256);
  MatmulDesc bad = make_desc(4, 8, 96, a, b_params(DType::int4, Mapping::symmetric, 48, 8, 96),
                             MatrixLayout::nk);
  try {
    ops().matmul_dequant(bad, da.data(), db.data(), nullptr, dc.data());
    ADD_FAILURE() << "block_size 48 was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::unsupported) << e.what();
  }
}

}  // namespace
}  // namespace qforge::cuda_test
