// The GEMM kernels against qforge::reference: every kernel the device lists, every op
// (matmul_integer, matmul_dequant with and without bias, qlinear_matmul in both requantization
// modes), both B layouts, int8/uint8 operands with per-tensor or per-channel params, shapes
// that are not multiples of any tile, through plans of each kernel with B per run or fixed (and
// through the per-call ops, directly and through pack_weights). Integer outputs and
// float outputs are compared bit for bit (the epilogue evaluates in the reference's order).
#include <bit>
#include <cstring>
#include <string>
#include <vector>

#include "qforge/reference.h"
#include "test_data.h"
#include "vk_test_support.h"

namespace qforge::vktest {
namespace {

using GemmTest = VulkanTest;

QuantizationParams operand_params(Rng& rng, DType dtype, bool per_channel, int axis,
                                  std::int64_t count) {
  const auto& tr = traits(dtype);
  std::uniform_int_distribution<std::int32_t> z(tr.qmin, tr.qmax);
  std::uniform_real_distribution<float> s(0.001f, 0.05f);
  const std::size_t n = per_channel ? static_cast<std::size_t>(count) : 1;
  std::vector<float> scales(n);
  std::vector<std::int32_t> zps(n);
  for (std::size_t i = 0; i < n; ++i) {
    scales[i] = s(rng);
    zps[i] = z(rng);
  }
  const Scheme scheme =
      per_channel ? Scheme::per_channel_affine(axis) : Scheme::per_tensor_affine();
  return QuantizationParams(dtype, scheme, scales, zps);
}

std::vector<std::uint8_t> random_bytes(Rng& rng, std::size_t n) {
  std::uniform_int_distribution<int> b(0, 255);
  std::vector<std::uint8_t> v(n);
  for (auto& x : v) x = static_cast<std::uint8_t>(b(rng));
  return v;
}

struct Shape3 {
  std::int64_t m, n, k;
};

// Runs op through a plan of `kernel` (B fixed when `packed`), or through the per-call ops (the
// backend's own kernel; pack_weights and the *_packed op when `packed`) when `kernel` is empty.
void run_case(QuantizationOps& ops, Rng& rng, OpKind op, Shape3 s, MatrixLayout layout, bool packed,
              const std::string& kernel = "") {
  std::uniform_int_distribution<int> coin(0, 1);
  const DType da = coin(rng) ? DType::int8 : DType::uint8;
  const DType db = coin(rng) ? DType::int8 : DType::uint8;
  MatmulDesc d = make_matmul(
      s.m, s.n, s.k, operand_params(rng, da, coin(rng), 0, s.m),
      operand_params(rng, db, coin(rng), layout == MatrixLayout::kn ? 1 : 0, s.n), layout);
  d.has_bias = op == OpKind::matmul_dequant && coin(rng);
  if (op == OpKind::qlinear_matmul) {
    const DType dy = coin(rng) ? DType::int8 : DType::uint8;
    std::uniform_int_distribution<std::int32_t> z(traits(dy).qmin, traits(dy).qmax);
    // An output scale that keeps most results inside the range, some saturating.
    const float sy =
        0.02f * 0.02f * std::sqrt(static_cast<float>(std::max<std::int64_t>(s.k, 1))) * 40.0f;
    d.y = QuantizationParams::per_tensor_affine(dy, sy, z(rng));
    d.requant_mode = coin(rng) ? RequantMode::fixed_point : RequantMode::float_multiplier;
  }
  SCOPED_TRACE(describe({op, d}) + (packed ? " (prepacked)" : "") + " kernel " +
               (!kernel.empty()                         ? kernel
                : ops.supports({op, d}).kernels.empty() ? "?"
                                                        : ops.supports({op, d}).kernels.front()));
  const Support sup = ops.supports({op, d});
  ASSERT_TRUE(sup.supported) << sup.reason;

  const auto a = random_bytes(rng, static_cast<std::size_t>(s.m * s.k));
  const auto b = random_bytes(rng, static_cast<std::size_t>(s.n * s.k));
  std::vector<float> bias(static_cast<std::size_t>(s.n));
  std::uniform_real_distribution<float> bv(-2.0f, 2.0f);
  for (auto& v : bias) v = bv(rng);
  const std::size_t outs = static_cast<std::size_t>(s.m * s.n);
  const std::size_t elt = op == OpKind::qlinear_matmul ? 1 : 4;
  std::vector<std::uint8_t> expected(outs * elt);
  if (op == OpKind::matmul_integer)
    reference::matmul_integer(d, a.data(), b.data(),
                              reinterpret_cast<std::int32_t*>(expected.data()));
  else if (op == OpKind::matmul_dequant)
    reference::matmul_dequant(d, a.data(), b.data(), d.has_bias ? bias.data() : nullptr,
                              expected.data());
  else reference::qlinear_matmul(d, a.data(), b.data(), expected.data());

  std::uniform_int_distribution<int> pad(0, 5);
  DeviceArray da_(ops, a, static_cast<std::size_t>(pad(rng)));
  DeviceArray db_(ops, b, static_cast<std::size_t>(pad(rng)));
  DeviceArray dbias(ops, bias, 4);
  DeviceArray dout(ops, outs * elt, elt == 1 ? 3 : 8);
  dout.fill(0xCD);
  const float* bias_ptr = d.has_bias ? static_cast<const float*>(dbias.ptr()) : nullptr;
  std::shared_ptr<PackedWeights> w;
  if (!kernel.empty()) {
    std::vector<const void*> in{da_.ptr(), packed ? nullptr : db_.ptr()};
    PlanRequest request{ops.default_device(), kernel, {}};
    if (d.has_bias) in.push_back(bias_ptr);
    if (packed) {
      request.weights.assign(in.size(), nullptr);
      request.weights[1] = b.data();
    }
    const auto plan = ops.plan({op, d}, request);
    ASSERT_EQ(plan->kernel(), kernel);
    plan->run(in, std::vector<void*>{dout.ptr()});
  } else if (packed) {
    w = ops.pack_weights(d, db_.ptr());
  }
  if (kernel.empty()) switch (op) {
      case OpKind::matmul_integer:
        if (packed)
          ops.matmul_integer_packed(d, da_.ptr(), *w, static_cast<std::int32_t*>(dout.ptr()));
        else ops.matmul_integer(d, da_.ptr(), db_.ptr(), static_cast<std::int32_t*>(dout.ptr()));
        break;
      case OpKind::matmul_dequant:
        if (packed) ops.matmul_dequant_packed(d, da_.ptr(), *w, bias_ptr, dout.ptr());
        else ops.matmul_dequant(d, da_.ptr(), db_.ptr(), bias_ptr, dout.ptr());
        break;
      default:
        if (packed) ops.qlinear_matmul_packed(d, da_.ptr(), *w, dout.ptr());
        else ops.qlinear_matmul(d, da_.ptr(), db_.ptr(), dout.ptr());
        break;
    }
  const auto raw = dout.raw();
  for (std::size_t i = 0; i < dout.pad(); ++i)
    ASSERT_EQ(raw[i], 0xCD) << "canary before the output";
  for (std::size_t i = 0; i < outs; ++i) {
    const std::uint8_t* g = raw.data() + dout.pad() + i * elt;
    const std::uint8_t* e = expected.data() + i * elt;
    if (std::memcmp(g, e, elt) == 0) continue;
    std::int32_t gi = 0, ei = 0;
    std::memcpy(&gi, g, elt);
    std::memcpy(&ei, e, elt);
    FAIL() << "output (" << i / static_cast<std::size_t>(s.n) << ", "
           << i % static_cast<std::size_t>(s.n) << "): got 0x" << std::hex << gi << " expected 0x"
           << ei << std::dec
           << (elt == 4 && op == OpKind::matmul_dequant
                   ? " (" + std::to_string(std::bit_cast<float>(gi)) + " vs " +
                         std::to_string(std::bit_cast<float>(ei)) + ")"
                   : std::string());
  }
}

// Fatal failures of the running test so far: a kernel that fails stops its own cases only, so
// one run reports every kernel that is wrong, not just the first.
int fatal_failures() {
  const ::testing::TestResult* r =
      ::testing::UnitTest::GetInstance()->current_test_info()->result();
  int n = 0;
  for (int i = 0; i < r->total_part_count(); ++i)
    n += r->GetTestPartResult(i).fatally_failed() ? 1 : 0;
  return n;
}

const std::vector<Shape3> kShapes = {{1, 1, 1},    {4, 2, 3},    {7, 13, 65}, {65, 33, 129},
                                     {1, 70, 300}, {130, 67, 5}, {3, 5, 0},   {129, 129, 64}};

TEST_F(GemmTest, EveryKernelMatchesTheReference) {
  const auto p = QuantizationParams::per_tensor_affine(DType::int8, 1.0f, 0);
  const MatmulDesc probe = make_matmul(1, 1, 1, p, p);
  const Support all = ops().supports({OpKind::matmul_integer, probe});
  ASSERT_TRUE(all.supported) << all.reason;
  std::vector<std::string> kernels = all.kernels;
  kernels.emplace_back();  // and the per-call ops
  for (const auto& kernel : kernels) {
    SCOPED_TRACE(kernel.empty() ? "per call" : kernel);
    const int before = fatal_failures();
    for (OpKind op : {OpKind::matmul_integer, OpKind::matmul_dequant, OpKind::qlinear_matmul})
      for (MatrixLayout layout : {MatrixLayout::kn, MatrixLayout::nk})
        for (std::size_t i = 0; i < kShapes.size() && fatal_failures() == before; ++i)
          run_case(ops(), rng(), op, kShapes[i], layout, /*packed=*/i % 2 == 1, kernel);
  }
}

// The cooperative-matrix kernels (GPU only: lavapipe has none) on shapes that span several
// workgroup tiles of every kernel in both directions (more than 8 tile rows: the grouped launch
// order's last, partial group), with K from one K step (of 128 bytes) to many, so every stage of
// the pipelines and the epilogue's edges run.
TEST_F(GemmTest, CooperativeMatrixKernelsOnManyTiles) {
  const auto p = QuantizationParams::per_tensor_affine(DType::int8, 1.0f, 0);
  const Support all = ops().supports({OpKind::matmul_integer, make_matmul(1, 1, 1, p, p)});
  ASSERT_TRUE(all.supported) << all.reason;
  std::vector<std::string> coop;
  for (const auto& k : all.kernels)
    if (k.find("coopmat") != std::string::npos) coop.push_back(k);
  if (coop.empty()) GTEST_SKIP() << "the device has no cooperative-matrix kernel";
  const Shape3 shapes[] = {{1157, 300, 400}, {300, 777, 20}, {260, 300, 300}};
  for (const auto& kernel : coop) {
    SCOPED_TRACE(kernel);
    const int before = fatal_failures();
    for (std::size_t i = 0; i < std::size(shapes) && fatal_failures() == before; ++i)
      run_case(ops(), rng(), i == 1 ? OpKind::matmul_integer : OpKind::matmul_dequant, shapes[i],
               MatrixLayout::nk, /*packed=*/i != 2, kernel);
    if (fatal_failures() == before)
      run_case(ops(), rng(), OpKind::qlinear_matmul, shapes[2], MatrixLayout::kn, true, kernel);
  }
}

// Shapes above one workgroup tile in every direction, with K at the largest value int32 allows
// for int8 x int8 with zero points at the ends of the range (the accumulator wraps on the way and
// the zero-point correction must still land exactly).
TEST_F(GemmTest, LargestSafeKWithExtremeZeroPoints) {
  MatmulDesc d =
      make_matmul(3, 5, 1, QuantizationParams::per_tensor_affine(DType::uint8, 0.5f, 255),
                  QuantizationParams::per_tensor_affine(DType::int8, 0.5f, 127));
  d.k = reference::int32_safe_k(d);
  const Support all = ops().supports({OpKind::matmul_integer, d});
  ASSERT_TRUE(all.supported) << all.reason;
  // A all 0 and B all -128: every product is (0 - 255) * (-128 - 127) = 65025, the largest.
  std::vector<std::uint8_t> a(static_cast<std::size_t>(d.m * d.k), 0);
  std::vector<std::uint8_t> b(static_cast<std::size_t>(d.n * d.k), 0x80);
  std::vector<std::int32_t> expected(static_cast<std::size_t>(d.m * d.n));
  reference::matmul_integer(d, a.data(), b.data(), expected.data());
  for (const auto& kernel : all.kernels) {
    SCOPED_TRACE(kernel);
    DeviceArray da(ops(), a), db(ops(), b), dc(ops(), expected.size() * 4);
    ops()
        .plan({OpKind::matmul_integer, d}, PlanRequest{ops().default_device(), kernel, {}})
        ->run({da.ptr(), db.ptr()}, {dc.ptr()});
    EXPECT_EQ(dc.read<std::int32_t>(), expected);
  }
}

}  // namespace
}  // namespace qforge::vktest
