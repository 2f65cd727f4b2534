// Plans of matmul_dequant with A's params given at run (MatmulDesc::a_params_at_run; docs/CUDA.md,
// "Plans"): one plan per case, B fixed and packed once, then several runs each with fresh A codes
// and a fresh A scale and zero point (host values after the other inputs), against the reference
// on the run's values within the conformance tolerance for float32 output (NMSE 1e-12). Every
// kernel the plugin lists for the shape runs (tensor-core GEMM, skinny-M GEMV, split-K where the
// depth asks for it, the block-wise GEMM and GEMV); B per tensor, per column and block-wise; bias
// on and off; uint8 and int8 A (affine, and symmetric, whose zero point is fixed at 0). Bad run
// values and the flag on a per-call op are clear errors.
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "qforge/error.h"
#include "qforge/op_table.h"
#include "qforge/plan.h"
#include "qforge/reference.h"
#include "support.h"

namespace qforge::cuda_test {
namespace {

using Bytes = std::vector<std::byte>;

// matmul_dequant's float32 tolerance in the conformance suite (tests/conformance/harness/
// tolerances.h): an exact int32 sum, then a few float roundings whose order is free.
constexpr double kNmse = 1e-12;

enum class BKind { per_tensor, per_column, block_symmetric, block_affine };

const char* name(BKind b) {
  switch (b) {
    case BKind::per_tensor: return "B per tensor";
    case BKind::per_column: return "B per column";
    case BKind::block_symmetric: return "B block-wise symmetric";
    default: return "B block-wise affine";
  }
}

class CudaAParamsAtRun : public CudaTest {
 protected:
  int uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  float scale() { return std::exp2(std::uniform_real_distribution<float>(-10.0f, -2.0f)(rng_)); }

  Bytes codes(DType t, std::int64_t count) {
    Bytes b(static_cast<std::size_t>(count));
    const auto& tr = traits(t);
    for (auto& v : b)
      v = static_cast<std::byte>(static_cast<std::uint8_t>(uniform(tr.qmin, tr.qmax)));
    return b;
  }

  QuantizationParams b_params(BKind kind, MatrixLayout layout, std::int64_t n, std::int64_t k) {
    const DType t = DType::int8;
    switch (kind) {
      case BKind::per_tensor:
        return QuantizationParams::per_tensor_affine(t, scale(), uniform(-20, 20));
      case BKind::per_column: {
        std::vector<float> s(static_cast<std::size_t>(n));
        std::vector<std::int32_t> z(s.size());
        for (auto& v : s) v = scale();
        for (auto& v : z) v = uniform(-20, 20);
        return QuantizationParams::per_channel(t, Mapping::affine,
                                               layout == MatrixLayout::kn ? 1 : 0, s, z);
      }
      default: {
        const std::size_t blocks = static_cast<std::size_t>(n * ((k + 31) / 32));
        std::vector<float> s(blocks);
        for (auto& v : s) v = scale();
        if (kind == BKind::block_symmetric)
          return QuantizationParams::blockwise(t, Mapping::symmetric, 32, s);
        std::vector<std::int32_t> z(blocks);
        for (auto& v : z) v = uniform(-20, 20);
        return QuantizationParams::blockwise(t, Mapping::affine, 32, s, z);
      }
    }
  }
};

double nmse(const std::vector<float>& got, const std::vector<float>& want) {
  double num = 0.0, den = 0.0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    const double d = static_cast<double>(got[i]) - want[i];
    num += d * d;
    den += static_cast<double>(want[i]) * want[i];
  }
  return den == 0.0 ? num : num / den;
}

// A plan request's weights: B (input 1) fixed, every other input passed on each run.
std::vector<const void*> fixed_b(const OpDesc& op, const Bytes& b) {
  std::vector<const void*> w(op_operands(op).inputs.size(), nullptr);
  w[1] = b.data();
  return w;
}

struct Shape3 {
  std::int64_t m, n, k;
};

TEST_F(CudaAParamsAtRun, RunsMatchTheReferenceAsParamsChange) {
  // M = 1 and small M reach the skinny and block-wise GEMV kernels, large K with few outputs the
  // split-K path, the rest the tensor-core GEMMs; sizes off the tile multiples.
  const std::vector<Shape3> shapes = {{1, 67, 300},  {3, 130, 96},   {1, 40, 4096},
                                      {8, 24, 3000}, {37, 150, 200}, {129, 70, 517}};
  int runs = 0;
  for (const Shape3& sh : shapes)
    for (const DType ta : {DType::uint8, DType::int8})
      for (const BKind bk :
           {BKind::per_tensor, BKind::per_column, BKind::block_symmetric, BKind::block_affine})
        for (const bool bias_on : {false, true}) {
          const bool block = bk == BKind::block_symmetric || bk == BKind::block_affine;
          const MatrixLayout layout = block || uniform(0, 1) ? MatrixLayout::nk : MatrixLayout::kn;
          // int8 A symmetric now and then: its zero point is fixed at 0.
          const bool a_symmetric = ta == DType::int8 && uniform(0, 2) == 0;
          MatmulDesc d{.m = sh.m,
                       .n = sh.n,
                       .k = sh.k,
                       .a = a_symmetric ? QuantizationParams::per_tensor_symmetric(ta, 1.0f)
                                        : QuantizationParams::per_tensor_affine(ta, 1.0f, 0),
                       .b = b_params(bk, layout, sh.n, sh.k),
                       .b_layout = layout,
                       .has_bias = bias_on,
                       .a_params_at_run = true};
          const OpDesc op{OpKind::matmul_dequant, d};
          const std::string what = describe(op) + ", " + name(bk);
          SCOPED_TRACE(what);
          const Support s = ops().supports(op);
          ASSERT_TRUE(s.supported) << s.reason;
          const Bytes b = codes(DType::int8, sh.n * sh.k);
          std::vector<float> bias(static_cast<std::size_t>(sh.n));
          for (auto& v : bias) v = std::uniform_real_distribution<float>(-4.0f, 4.0f)(rng_);
          DeviceArray a_dev(ops(), static_cast<std::size_t>(sh.m * sh.k));
          DeviceArray bias_dev(ops(), bias.size() * sizeof(float));
          bias_dev.write(bias);
          DeviceArray y_dev(ops(), static_cast<std::size_t>(sh.m * sh.n) * sizeof(float));
          for (const std::string& kernel : s.kernels) {
            SCOPED_TRACE("kernel " + kernel);
            // B fixed: the plan packs it once; A's params change on every run below.
            const auto plan =
                ops().plan(op, PlanRequest{ops().default_device(), kernel, fixed_b(op, b)});
            for (int r = 0; r < 3; ++r) {
              const Bytes a = codes(ta, sh.m * sh.k);
              a_dev.write(a.data(), a.size());
              const float sa = scale();
              const auto& tr = traits(ta);
              // The first run's zero point is the one the kernels store codes against (no
              // compensation term), the others anywhere in A's range.
              const std::int32_t shift = ta == DType::uint8 ? 128 : 0;
              const std::int32_t za = a_symmetric ? 0 : r == 0 ? shift : uniform(tr.qmin, tr.qmax);
              y_dev.poison(0x5A);
              const void* bias_ptr = bias_on ? bias_dev.data() : nullptr;
              std::vector<const void*> in = {a_dev.data(), nullptr};
              if (bias_on) in.push_back(bias_ptr);
              in.push_back(&sa);
              in.push_back(&za);
              std::vector<void*> out = {y_dev.data()};
              plan->run(std::span<const void* const>(in), std::span<void* const>(out));
              std::vector<float> want(static_cast<std::size_t>(sh.m * sh.n));
              reference::matmul_dequant(reference::with_a_params_at_run(d, sa, za), a.data(),
                                        b.data(), bias_on ? bias.data() : nullptr, want.data());
              const auto got = y_dev.read_as<float>();
              const double e = nmse(got, want);
              EXPECT_LE(e, kNmse) << "run " << r << ": sa " << sa << ", za " << za;
              EXPECT_TRUE(y_dev.guards_intact());
              ++runs;
            }
          }
        }
  EXPECT_GT(runs, 0);
}

TEST_F(CudaAParamsAtRun, BadRunValuesAndPerCallUseAreClearErrors) {
  const MatmulDesc d{.m = 3,
                     .n = 4,
                     .k = 5,
                     .a = QuantizationParams::per_tensor_affine(DType::uint8, 1.0f, 128),
                     .b = QuantizationParams::per_tensor_symmetric(DType::int8, 0.25f),
                     .a_params_at_run = true};
  const OpDesc op{OpKind::matmul_dequant, d};
  const Bytes b = codes(DType::int8, 20);
  DeviceArray a_dev(ops(), 15), y_dev(ops(), 12 * sizeof(float));
  a_dev.write(codes(DType::uint8, 15));
  const auto plan = ops().plan(op, PlanRequest{ops().default_device(), "", fixed_b(op, b)});
  auto expect_error = [&](float sa, std::int32_t za, const std::string& needle) {
    const std::vector<const void*> in = {a_dev.data(), nullptr, &sa, &za};
    const std::vector<void*> out = {y_dev.data()};
    try {
      plan->run(std::span<const void* const>(in), std::span<void* const>(out));
      ADD_FAILURE() << "no error for a_scale " << sa << ", a_zero_point " << za;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::invalid_argument) << e.what();
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_error(std::numeric_limits<float>::quiet_NaN(), 7, "a_scale = nan");
  expect_error(-1.0f, 7, "a_scale = -1");
  expect_error(0.0f, 7, "expected a finite value > 0");
  expect_error(0.5f, 256, "a_zero_point = 256");
  expect_error(0.5f, -1, "a_zero_point = -1");
  // Symmetric int8 A: the mapping fixes the zero point at 0.
  MatmulDesc sym = d;
  sym.a = QuantizationParams::per_tensor_symmetric(DType::int8, 1.0f);
  const OpDesc sym_op{OpKind::matmul_dequant, sym};
  const auto sym_plan =
      ops().plan(sym_op, PlanRequest{ops().default_device(), "", fixed_b(sym_op, b)});
  {
    const float sa = 0.5f;
    const std::int32_t za = 3;
    const std::vector<const void*> in = {a_dev.data(), nullptr, &sa, &za};
    const std::vector<void*> out = {y_dev.data()};
    EXPECT_THROW(sym_plan->run(std::span<const void* const>(in), std::span<void* const>(out)),
                 Error);
  }
  // Per-row A has no single pair a run could bring.
  MatmulDesc per_row = d;
  per_row.a = QuantizationParams::per_channel(DType::uint8, Mapping::affine, 0, {1.0f, 1.0f, 1.0f},
                                              {1, 2, 3});
  EXPECT_FALSE(ops().supports(OpDesc{OpKind::matmul_dequant, per_row}).supported);
  // The per-call op has no place for the values.
  try {
    ops().matmul_dequant(d, a_dev.data(), b.data(), nullptr, y_dev.data());
    ADD_FAILURE() << "per-call matmul_dequant took a_params_at_run";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument) << e.what();
    EXPECT_NE(std::string(e.what()).find("a_params_at_run"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace qforge::cuda_test
