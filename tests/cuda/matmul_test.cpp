// The three matmuls on every GEMM kernel the plugin lists (through plans of each), against
// qforge::reference bit for bit: int32 results exactly, and the float epilogue too, since the
// kernels evaluate ((float(C) * sa) * sb) + bias in the reference's order without FMA.
// Shapes walk 1, primes, powers of two +/- 1 and K not a multiple of any tile; operands mix
// int8/uint8, per-tensor/per-row/per-column params, kn/nk layouts and zero points; K reaches
// reference::int32_safe_k with extreme operand values.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>

#include "qforge/error.h"
#include "qforge/reference.h"
#include "support.h"

namespace qforge::cuda_test {
namespace {

struct Shape3 {
  std::int64_t m, n, k;
};

::testing::AssertionResult same_bytes(const std::vector<std::byte>& got,
                                      const std::vector<std::byte>& want, std::size_t element,
                                      std::int64_t n_cols) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure() << "size " << got.size() << " vs " << want.size();
  std::size_t bad = 0, first = 0;
  for (std::size_t i = 0; i < got.size(); i += element)
    if (std::memcmp(got.data() + i, want.data() + i, element) != 0) {
      if (bad++ == 0) first = i / element;
    }
  if (bad == 0) return ::testing::AssertionSuccess();
  auto hex = [&](const std::vector<std::byte>& v) {
    std::string s;
    char buf[4];
    for (std::size_t b = 0; b < element; ++b) {
      std::snprintf(buf, sizeof buf, "%02x",
                    static_cast<unsigned>(v[first * element + element - 1 - b]));
      s += buf;
    }
    return s;
  };
  return ::testing::AssertionFailure()
         << bad << " of " << got.size() / element << " elements differ; first at ("
         << first / n_cols << ", " << first % n_cols << "): got 0x" << hex(got) << ", expected 0x"
         << hex(want);
}

class CudaMatmul : public CudaTest {
 protected:
  QuantizationParams operand_params(DType t, bool per_channel, int axis, std::int64_t count,
                                    bool zero_point) {
    const auto& tr = traits(t);
    const std::size_t c = per_channel ? static_cast<std::size_t>(count) : 1;
    std::vector<float> scales(c);
    for (auto& s : scales) s = std::exp2(std::uniform_real_distribution<float>(-10.0f, 0.0f)(rng_));
    if (!zero_point)
      return per_channel ? QuantizationParams::per_channel(t, Mapping::symmetric, axis, scales)
                         : QuantizationParams::per_tensor_symmetric(t, scales[0]);
    std::vector<std::int32_t> zps(c);
    std::uniform_int_distribution<std::int32_t> z(tr.qmin, tr.qmax);
    for (auto& v : zps) v = z(rng_);
    return per_channel ? QuantizationParams::per_channel(t, Mapping::affine, axis, scales, zps)
                       : QuantizationParams::per_tensor_affine(t, scales[0], zps[0]);
  }
  std::vector<std::uint8_t> random_codes(DType t, std::int64_t count, int lo, int hi) {
    std::vector<std::uint8_t> v(static_cast<std::size_t>(count));
    std::uniform_int_distribution<int> d(lo, hi);
    for (auto& b : v) b = static_cast<std::uint8_t>(d(rng_) & 0xFF);
    (void)t;
    return v;
  }
  std::vector<std::uint8_t> random_codes(DType t, std::int64_t count) {
    return random_codes(t, count, traits(t).qmin, traits(t).qmax);
  }

  // Runs `kind` on every kernel supports() lists and compares with the reference.
  void check_all_kernels(OpKind kind, const MatmulDesc& d, const std::vector<std::uint8_t>& a,
                         const std::vector<std::uint8_t>& b, const std::vector<float>& bias) {
    SCOPED_TRACE(describe({kind, d}));
    const Support s = ops().supports({kind, d});
    ASSERT_TRUE(s.supported) << s.reason;
    ASSERT_FALSE(s.kernels.empty());
    std::size_t element = 4;
    if (kind == OpKind::qlinear_matmul) element = 1;
    if (kind == OpKind::matmul_dequant) element = static_cast<std::size_t>(size_of(d.out_type));
    std::vector<std::byte> expected(static_cast<std::size_t>(d.m * d.n) * element);
    const float* bias_host = d.has_bias ? bias.data() : nullptr;
    if (kind == OpKind::matmul_integer)
      reference::matmul_integer(d, a.data(), b.data(),
                                reinterpret_cast<std::int32_t*>(expected.data()));
    else if (kind == OpKind::matmul_dequant)
      reference::matmul_dequant(d, a.data(), b.data(), bias_host, expected.data());
    else reference::qlinear_matmul(d, a.data(), b.data(), expected.data());

    DeviceArray da(ops(), a.size()), db(ops(), b.size()), dbias(ops(), bias.size() * 4),
        dout(ops(), expected.size());
    da.write(a);
    db.write(b);
    dbias.write(bias);
    // The per-call op (the plugin's own kernel), then a plan of every kernel listed.
    dout.poison(0xCD);
    if (kind == OpKind::matmul_integer)
      ops().matmul_integer(d, da.data(), db.data(), static_cast<std::int32_t*>(dout.data()));
    else if (kind == OpKind::matmul_dequant)
      ops().matmul_dequant(d, da.data(), db.data(),
                           d.has_bias ? static_cast<const float*>(dbias.data()) : nullptr,
                           dout.data());
    else ops().qlinear_matmul(d, da.data(), db.data(), dout.data());
    EXPECT_TRUE(same_bytes(dout.read(), expected, element, d.n));
    EXPECT_TRUE(dout.guards_intact());
    std::vector<const void*> in{da.data(), db.data()};
    if (kind == OpKind::matmul_dequant && d.has_bias) in.push_back(dbias.data());
    for (const auto& kernel : s.kernels) {
      SCOPED_TRACE("kernel " + kernel);
      dout.poison(0xCD);
      EXPECT_EQ(run_plan(ops(), {kind, d}, kernel, in, {dout.data()}), kernel);
      EXPECT_TRUE(same_bytes(dout.read(), expected, element, d.n));
      EXPECT_TRUE(dout.guards_intact());
    }
  }
};

const Shape3 kShapes[] = {{1, 1, 1},      {1, 37, 100},    {5, 7, 3},       {16, 64, 64},
                          {33, 65, 17},   {127, 129, 255}, {64, 256, 1024}, {130, 200, 48},
                          {3, 300, 4099}, {257, 31, 160},  {2, 2, 0}};

TEST_F(CudaMatmul, MatmulIntegerOnEveryKernel) {
  for (const auto& sh : kShapes)
    for (const DType ta : {DType::int8, DType::uint8})
      for (const DType tb : {DType::int8, DType::uint8}) {
        const bool kn = std::uniform_int_distribution<int>(0, 1)(rng_);
        const bool a_rows = std::uniform_int_distribution<int>(0, 1)(rng_);
        const bool b_cols = std::uniform_int_distribution<int>(0, 1)(rng_);
        MatmulDesc d{sh.m,
                     sh.n,
                     sh.k,
                     operand_params(ta, a_rows, 0, sh.m, true),
                     operand_params(tb, b_cols, kn ? 1 : 0, sh.n, true),
                     kn ? MatrixLayout::kn : MatrixLayout::nk};
        check_all_kernels(OpKind::matmul_integer, d, random_codes(ta, sh.m * sh.k),
                          random_codes(tb, sh.n * sh.k), {});
      }
}

TEST_F(CudaMatmul, MatmulDequantEveryOutputTypeOnEveryKernel) {
  for (const auto& sh : kShapes)
    for (const FloatType out : {FloatType::f32, FloatType::f16, FloatType::bf16}) {
      const DType ta = std::uniform_int_distribution<int>(0, 1)(rng_) ? DType::int8 : DType::uint8;
      const bool zp = std::uniform_int_distribution<int>(0, 1)(rng_);
      MatmulDesc d{sh.m,
                   sh.n,
                   sh.k,
                   operand_params(ta, true, 0, sh.m, zp),
                   operand_params(DType::int8, true, 0, sh.n, false),
                   MatrixLayout::nk};
      d.out_type = out;
      d.has_bias = sh.n % 2 == 1 || out == FloatType::f32;
      std::vector<float> bias(static_cast<std::size_t>(sh.n));
      std::normal_distribution<float> normal(0.0f, 3.0f);
      for (auto& v : bias) v = normal(rng_);
      check_all_kernels(OpKind::matmul_dequant, d, random_codes(ta, sh.m * sh.k),
                        random_codes(DType::int8, sh.n * sh.k, -127, 127), bias);
    }
}

TEST_F(CudaMatmul, QLinearMatmulBothModesOnEveryKernel) {
  for (const auto& sh : kShapes)
    for (const RequantMode mode : {RequantMode::float_multiplier, RequantMode::fixed_point})
      for (const DType ty : {DType::int8, DType::uint8}) {
        const bool kn = std::uniform_int_distribution<int>(0, 1)(rng_);
        MatmulDesc d{sh.m,
                     sh.n,
                     sh.k,
                     operand_params(DType::uint8, sh.m % 2 == 1, 0, sh.m, true),
                     operand_params(DType::int8, sh.n % 2 == 0, kn ? 1 : 0, sh.n, sh.k % 2 == 1),
                     kn ? MatrixLayout::kn : MatrixLayout::nk};
        // An output scale near the typical |C| * sa * sb, so that results spread over the range
        // rather than all saturating.
        const float typical =
            std::sqrt(static_cast<float>(std::max<std::int64_t>(sh.k, 1))) * 64.0f * 100.0f;
        const float sy = d.a.scale(0) * d.b.scale(0) * typical / 127.0f;
        d.y = ty == DType::int8 ? QuantizationParams::per_tensor_affine(ty, sy, -3)
                                : QuantizationParams::per_tensor_affine(ty, sy, 131);
        d.requant_mode = mode;
        check_all_kernels(OpKind::qlinear_matmul, d, random_codes(DType::uint8, sh.m * sh.k),
                          random_codes(DType::int8, sh.n * sh.k), {});
      }
}

// Skinny M with N wide enough that the skinny kernel runs without splitting K across CTAs (one
// CTA per 32 columns reaches every SM), M at the ends of its one- and two-tile variants, K with a
// partial last 64-byte step; zero points on both sides exercise the compensated epilogue.
TEST_F(CudaMatmul, SkinnyShapesOnEveryKernel) {
  for (const auto& sh : {Shape3{1, 8200, 2048}, Shape3{16, 4416, 1040}, Shape3{17, 4500, 528},
                         Shape3{32, 4400, 1024}}) {
    const bool zp = std::uniform_int_distribution<int>(0, 1)(rng_);
    MatmulDesc d{sh.m,
                 sh.n,
                 sh.k,
                 operand_params(DType::uint8, true, 0, sh.m, zp),
                 operand_params(DType::int8, true, 0, sh.n, !zp),
                 MatrixLayout::nk};
    check_all_kernels(OpKind::matmul_integer, d, random_codes(DType::uint8, sh.m * sh.k),
                      random_codes(DType::int8, sh.n * sh.k), {});
    MatmulDesc q{sh.m,
                 sh.n,
                 sh.k,
                 operand_params(DType::int8, true, 0, sh.m, false),
                 operand_params(DType::int8, true, 0, sh.n, false),
                 MatrixLayout::nk};
    q.has_bias = true;
    std::vector<float> bias(static_cast<std::size_t>(sh.n));
    std::normal_distribution<float> normal(0.0f, 3.0f);
    for (auto& v : bias) v = normal(rng_);
    check_all_kernels(OpKind::matmul_dequant, q, random_codes(DType::int8, sh.m * sh.k),
                      random_codes(DType::int8, sh.n * sh.k, -127, 127), bias);
  }
  // The skinny kernel's other ring depths (QFORGE_CUDA_SKINNY_STAGES, read at every launch).
  for (const char* stages : {"2", "3", "4", "6"}) {
    SCOPED_TRACE(std::string("QFORGE_CUDA_SKINNY_STAGES=") + stages);
    setenv("QFORGE_CUDA_SKINNY_STAGES", stages, 1);
    for (const auto& sh : {Shape3{3, 4500, 528}, Shape3{31, 4420, 336}}) {
      MatmulDesc d{sh.m,
                   sh.n,
                   sh.k,
                   operand_params(DType::int8, true, 0, sh.m, true),
                   operand_params(DType::uint8, true, 0, sh.n, true),
                   MatrixLayout::nk};
      check_all_kernels(OpKind::matmul_integer, d, random_codes(DType::int8, sh.m * sh.k),
                        random_codes(DType::uint8, sh.n * sh.k), {});
    }
  }
  unsetenv("QFORGE_CUDA_SKINNY_STAGES");
}

// The wgmma kernel's split-K reduction in the kernel (partial slots, the last item of a tile
// adds them): forced split counts (QFORGE_CUDA_WGMMA_SPLITS, read at every launch), including
// more splits than there are K tiles (1040 bytes = 9 tiles in 8 splits of 2: the last three are
// empty; K = 128 is one tile) and several tiles per CTA, with every epilogue kind. The kernel list
// decides whether the wgmma kernel runs here (sm_90 only); the other kernels ignore the switch.
TEST_F(CudaMatmul, WgmmaSplitKOnEveryKernel) {
  for (const char* splits : {"2", "3", "8", "16"}) {
    SCOPED_TRACE(std::string("QFORGE_CUDA_WGMMA_SPLITS=") + splits);
    setenv("QFORGE_CUDA_WGMMA_SPLITS", splits, 1);
    for (const auto& sh :
         {Shape3{16, 4416, 1040}, Shape3{130, 600, 2100}, Shape3{140, 34000, 128}}) {
      MatmulDesc d{sh.m,
                   sh.n,
                   sh.k,
                   operand_params(DType::uint8, true, 0, sh.m, true),
                   operand_params(DType::int8, true, 0, sh.n, true),
                   MatrixLayout::nk};
      check_all_kernels(OpKind::matmul_integer, d, random_codes(DType::uint8, sh.m * sh.k),
                        random_codes(DType::int8, sh.n * sh.k), {});
      MatmulDesc q{sh.m,
                   sh.n,
                   sh.k,
                   operand_params(DType::int8, true, 0, sh.m, false),
                   operand_params(DType::int8, true, 0, sh.n, false),
                   MatrixLayout::nk};
      q.has_bias = true;
      q.out_type = FloatType::bf16;
      std::vector<float> bias(static_cast<std::size_t>(sh.n));
      std::normal_distribution<float> normal(0.0f, 3.0f);
      for (auto& v : bias) v = normal(rng_);
      check_all_kernels(OpKind::matmul_dequant, q, random_codes(DType::int8, sh.m * sh.k),
                        random_codes(DType::int8, sh.n * sh.k, -127, 127), bias);
    }
  }
  unsetenv("QFORGE_CUDA_WGMMA_SPLITS");
}

// 4-bit operands (two codes per byte) are unpacked to int8 before the GEMM: every byte is a
// valid pair of int4 or uint4 codes, so random bytes cover the whole range.
TEST_F(CudaMatmul, FourBitOperandsOnEveryKernel) {
  for (const auto& sh : {Shape3{5, 7, 3}, Shape3{33, 65, 129}, Shape3{1, 40, 256}})
    for (const bool kn : {false, true}) {
      MatmulDesc d{sh.m,
                   sh.n,
                   sh.k,
                   operand_params(DType::int4, true, 0, sh.m, true),
                   operand_params(DType::uint4, false, kn ? 1 : 0, sh.n, true),
                   kn ? MatrixLayout::kn : MatrixLayout::nk};
      const auto a = random_codes(
          DType::int4, static_cast<std::int64_t>(storage_bytes(DType::int4, sh.m * sh.k)), 0, 255);
      const auto b =
          random_codes(DType::uint4,
                       static_cast<std::int64_t>(storage_bytes(DType::uint4, sh.n * sh.k)), 0, 255);
      check_all_kernels(OpKind::matmul_integer, d, a, b, {});
    }
}

// K at the int32-safe bound with operands at the ends of their ranges: the exact result sits
// right below 2^31 in magnitude, so any lost carry or wrong compensation shows.
TEST_F(CudaMatmul, ExactAtTheInt32Bound) {
  struct Case {
    DType ta, tb;
    int za, zb;
  };
  for (const Case c :
       {Case{DType::uint8, DType::int8, 0, 0}, Case{DType::int8, DType::int8, 0, 0},
        Case{DType::uint8, DType::uint8, 255, 0}, Case{DType::int8, DType::uint8, 127, 7}}) {
    MatmulDesc d{3,
                 5,
                 1,
                 QuantizationParams::per_tensor_affine(c.ta, 0.5f, c.za),
                 QuantizationParams::per_tensor_affine(c.tb, 0.25f, c.zb),
                 MatrixLayout::nk};
    d.k = reference::int32_safe_k(d);
    const auto& ta = traits(c.ta);
    const auto& tb = traits(c.tb);
    // The operand value farthest from its zero point, everywhere but a few random positions.
    const int a_far = std::abs(ta.qmin - c.za) >= std::abs(ta.qmax - c.za) ? ta.qmin : ta.qmax;
    const int b_far = std::abs(tb.qmin - c.zb) >= std::abs(tb.qmax - c.zb) ? tb.qmin : tb.qmax;
    std::vector<std::uint8_t> a(static_cast<std::size_t>(d.m * d.k),
                                static_cast<std::uint8_t>(a_far & 0xFF));
    std::vector<std::uint8_t> b(static_cast<std::size_t>(d.n * d.k),
                                static_cast<std::uint8_t>(b_far & 0xFF));
    std::uniform_int_distribution<std::size_t> pos(0, a.size() - 1);
    for (int i = 0; i < 50; ++i) a[pos(rng_)] = static_cast<std::uint8_t>(c.za & 0xFF);
    check_all_kernels(OpKind::matmul_integer, d, a, b, {});
  }
}

TEST_F(CudaMatmul, PackedWeightsGiveTheSameResults) {
  for (const bool kn : {false, true}) {
    const Shape3 sh{19, 77, 333};
    MatmulDesc d{sh.m,
                 sh.n,
                 sh.k,
                 operand_params(DType::uint8, false, 0, sh.m, true),
                 operand_params(DType::uint8, true, kn ? 1 : 0, sh.n, true),
                 kn ? MatrixLayout::kn : MatrixLayout::nk};
    const auto a = random_codes(DType::uint8, sh.m * sh.k);
    const auto b = random_codes(DType::uint8, sh.n * sh.k);
    DeviceArray da(ops(), a.size()), db(ops(), b.size()),
        dc(ops(), static_cast<std::size_t>(sh.m * sh.n) * 4);
    da.write(a);
    db.write(b);
    // Packed for another M and another A: only B may matter to the packing.
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

    std::vector<float> yf(expected.size());
    reference::matmul_dequant(d, a.data(), b.data(), nullptr, yf.data());
    DeviceArray dy(ops(), yf.size() * 4);
    ops().matmul_dequant_packed(d, da.data(), *packed, nullptr, dy.data());
    const auto got = dy.read_as<float>();
    EXPECT_EQ(0, std::memcmp(got.data(), yf.data(), yf.size() * 4));

    MatmulDesc other = d;
    other.k = 332;
    try {
      ops().matmul_integer_packed(other, da.data(), *packed, static_cast<std::int32_t*>(dc.data()));
      ADD_FAILURE() << "packed weights were used with another K";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::shape_mismatch) << e.what();
    }
  }
}

TEST_F(CudaMatmul, NonFiniteRequantMultiplierIsRefused) {
  MatmulDesc d{2, 2, 2, QuantizationParams::per_tensor_symmetric(DType::int8, 3e38f),
               QuantizationParams::per_tensor_symmetric(DType::int8, 3e38f)};
  d.y = QuantizationParams::per_tensor_symmetric(DType::int8, 1.0f);
  DeviceArray a(ops(), 4), b(ops(), 4), y(ops(), 4);
  try {
    ops().qlinear_matmul(d, a.data(), b.data(), y.data());
    ADD_FAILURE() << "an infinite multiplier was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument) << e.what();
  }
}

}  // namespace
}  // namespace qforge::cuda_test
