// Op calls through the accelerator give the reference's results, whichever plugin won: a host
// plugin called directly, a device plugin fed through staging copies, and a winner that
// refuses one shape of its bucket (another candidate runs it).
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "qforge/reference.h"
#include "support.h"

namespace {

using namespace qforge;

std::vector<std::byte> codes(std::mt19937_64& rng, DType t, std::size_t n) {
  std::vector<std::byte> out(storage_bytes(t, n));
  std::uniform_int_distribution<int> d(traits(t).qmin, traits(t).qmax);
  for (std::size_t i = 0; i < n; ++i) {
    int v = d(rng);
    if (t == DType::binary) v = v >= 0 ? 1 : -1;
    store_element(t, out.data(), i, v);
  }
  return out;
}

std::vector<float> floats(std::mt19937_64& rng, std::size_t n) {
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

// Runs a representative of every op through `acc` and through the reference; all must match
// (the float outputs too: every plugin here computes with the reference).
void expect_reference_results(Accelerator& acc, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  {
    const QuantizeDesc d{{5, 70},
                         QuantizationParams::blockwise(DType::int4, Mapping::symmetric, 32,
                                                       std::vector<float>(15, 0.1f))};
    const auto x = floats(rng, 350);
    std::vector<std::byte> got(storage_bytes(DType::int4, 350)), want(got.size());
    acc.quantize(d, x.data(), got.data());
    reference::quantize(d, x.data(), want.data());
    EXPECT_EQ(got, want) << "quantize";
    std::vector<float> back(350), back_ref(350);
    acc.dequantize(d, got.data(), back.data());
    reference::dequantize(d, got.data(), back_ref.data());
    EXPECT_EQ(back, back_ref) << "dequantize";
  }
  {
    const RequantizeDesc d{{6, 9}, {0.001f}, -1, DType::uint8, 7, RequantMode::fixed_point};
    std::vector<std::int32_t> c(54);
    for (auto& v : c) v = std::uniform_int_distribution<std::int32_t>(-100000, 100000)(rng);
    std::vector<std::uint8_t> got(54), want(54);
    acc.requantize(d, c.data(), got.data());
    reference::requantize(d, c.data(), want.data());
    EXPECT_EQ(got, want) << "requantize";
  }
  for (OpKind op : {OpKind::matmul_integer, OpKind::matmul_dequant, OpKind::qlinear_matmul}) {
    const Workload w = acc_test::small_matmul(6, op);
    const auto& d = std::get<MatmulDesc>(w.op.desc);
    const auto a = codes(rng, DType::uint8, static_cast<std::size_t>(d.m * d.k));
    const auto b = codes(rng, DType::int8, static_cast<std::size_t>(d.k * d.n));
    const auto bias = floats(rng, static_cast<std::size_t>(d.n));
    const std::size_t mn = static_cast<std::size_t>(d.m * d.n);
    if (op == OpKind::matmul_integer) {
      std::vector<std::int32_t> got(mn), want(mn);
      acc.matmul_integer(d, a.data(), b.data(), got.data());
      reference::matmul_integer(d, a.data(), b.data(), want.data());
      EXPECT_EQ(got, want) << "matmul_integer";
    } else if (op == OpKind::matmul_dequant) {
      std::vector<float> got(mn), want(mn);
      acc.matmul_dequant(d, a.data(), b.data(), bias.data(), got.data());
      reference::matmul_dequant(d, a.data(), b.data(), bias.data(), want.data());
      EXPECT_EQ(got, want) << "matmul_dequant";
    } else {
      std::vector<std::uint8_t> got(mn), want(mn);
      acc.qlinear_matmul(d, a.data(), b.data(), got.data());
      reference::qlinear_matmul(d, a.data(), b.data(), want.data());
      EXPECT_EQ(got, want) << "qlinear_matmul";
    }
  }
  {
    const DynamicQuantizeDesc d{{3, 17}};
    const auto x = floats(rng, 51);
    std::vector<std::uint8_t> got(51), want(51);
    const auto p = acc.dynamic_quantize_linear(d, x.data(), got.data());
    const auto q = reference::dynamic_quantize_linear(d, x.data(), want.data());
    EXPECT_EQ(got, want);
    EXPECT_EQ(p, q);
  }
  {
    const LinearDesc d{4, 6, 10,
                       QuantizationParams::per_channel(DType::int8, Mapping::symmetric, 0,
                                                       std::vector<float>(6, 0.03f)),
                       true};
    const auto x = floats(rng, 40);
    const auto wq = codes(rng, DType::int8, 60);
    const auto bias = floats(rng, 6);
    std::vector<std::int8_t> xq(40), xq_ref(40);
    std::vector<float> y(24), y_ref(24);
    const auto* w8 = reinterpret_cast<const std::int8_t*>(wq.data());
    const auto p = acc.linear_forward(d, x.data(), w8, bias.data(), xq.data(), y.data());
    const auto q =
        reference::linear_forward(d, x.data(), w8, bias.data(), xq_ref.data(), y_ref.data());
    EXPECT_EQ(p, q);
    EXPECT_EQ(xq, xq_ref);
    EXPECT_EQ(y, y_ref);
    const auto dy = floats(rng, 24);
    std::vector<float> dx(40), dw(60), db(6), dx_ref(40), dw_ref(60), db_ref(6);
    acc.linear_backward(d, dy.data(), xq.data(), p, w8, dx.data(), dw.data(), db.data());
    reference::linear_backward(d, dy.data(), xq.data(), p, w8, dx_ref.data(), dw_ref.data(),
                               db_ref.data());
    EXPECT_EQ(dx, dx_ref);
    EXPECT_EQ(dw, dw_ref);
    EXPECT_EQ(db, db_ref);
  }
}

TEST(Dispatch, HostWinnerGivesReferenceResults) {
  const auto seed = acc_test::test_seed();
  SCOPED_TRACE("QFORGE_TEST_SEED=" + std::to_string(seed));
  Accelerator acc(acc_test::plugins({"cpu_scalar"}),
                  acc_test::options(acc_test::scratch_dir("c") / "t.json"));
  expect_reference_results(acc, seed);
  EXPECT_EQ(acc.stats().dispatches, 9u);
  EXPECT_EQ(acc.stats().buckets_tuned, 9u);  // one bucket per op
}

TEST(Dispatch, DeviceWinnerIsFedThroughCopies) {
  const auto seed = acc_test::test_seed();
  SCOPED_TRACE("QFORGE_TEST_SEED=" + std::to_string(seed));
  auto o = acc_test::options(acc_test::scratch_dir("c") / "t.json");
  o.test_hooks = acc_test::injected({{"acc_device[0]/only", 1e-6}});
  Accelerator acc(acc_test::plugins({"cpu_scalar", "acc_device"}), o);
  expect_reference_results(acc, seed);
  EXPECT_EQ(acc.decide(acc_test::small_matmul(6)).id.plugin, "acc_device");
}

TEST(Dispatch, AWinnerThatRefusesAShapeOfItsBucketIsStandedInFor) {
  const auto seed = acc_test::test_seed();
  SCOPED_TRACE("QFORGE_TEST_SEED=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  auto o = acc_test::options(acc_test::scratch_dir("c") / "t.json");
  o.test_hooks = acc_test::injected({{"acc_picky[0]/only", 1e-6}});
  Accelerator acc(acc_test::plugins({"cpu_scalar", "acc_picky"}), o);
  EXPECT_EQ(acc.tune(acc_test::small_matmul(8)).winner.plugin, "acc_picky");
  // M = 7 shares the bucket (M <= 8) but acc_picky refuses odd M.
  const Workload w = acc_test::small_matmul(7);
  const auto& d = std::get<MatmulDesc>(w.op.desc);
  const auto a = codes(rng, DType::uint8, static_cast<std::size_t>(d.m * d.k));
  const auto b = codes(rng, DType::int8, static_cast<std::size_t>(d.k * d.n));
  std::vector<std::int32_t> got(static_cast<std::size_t>(d.m * d.n)), want(got.size());
  acc.matmul_integer(d, a.data(), b.data(), got.data());
  reference::matmul_integer(d, a.data(), b.data(), want.data());
  EXPECT_EQ(got, want);
  EXPECT_EQ(acc.stats().unsupported_retries, 1u);
  EXPECT_EQ(acc.stats().buckets_tuned, 1u);  // no retuning for it
}

TEST(Dispatch, DeviceResidentDataThroughADecision) {
  const auto seed = acc_test::test_seed();
  SCOPED_TRACE("QFORGE_TEST_SEED=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  auto o = acc_test::options(acc_test::scratch_dir("c") / "t.json");
  o.test_hooks = acc_test::injected({{"acc_device[0]/only", 1e-6}});
  Accelerator acc(acc_test::plugins({"cpu_scalar", "acc_device"}), o);
  Workload w = acc_test::small_matmul(6);
  w.residency = Residency::device;
  const Decision dec = acc.decide(w);
  ASSERT_EQ(dec.id.plugin, "acc_device");
  const auto& d = std::get<MatmulDesc>(w.op.desc);
  const auto a = codes(rng, DType::uint8, static_cast<std::size_t>(d.m * d.k));
  const auto b = codes(rng, DType::int8, static_cast<std::size_t>(d.k * d.n));
  auto da = dec.ops->allocate(a.size()), db = dec.ops->allocate(b.size());
  auto dc = dec.ops->allocate(static_cast<std::size_t>(d.m * d.n) * 4);
  dec.ops->copy_to_device(*da, 0, a.data(), a.size());
  dec.ops->copy_to_device(*db, 0, b.data(), b.size());
  const auto plan = dec.plan(w.op);
  EXPECT_EQ(plan->backend(), "acc_device");
  plan->run({da->data(), db->data()}, {dc->data()});
  std::vector<std::int32_t> got(static_cast<std::size_t>(d.m * d.n)), want(got.size());
  dec.ops->copy_to_host(got.data(), *dc, 0, got.size() * 4);
  reference::matmul_integer(d, a.data(), b.data(), want.data());
  EXPECT_EQ(got, want);
}

TEST(Dispatch, EachCallRunsItsBucketsKernelOnASharedPlugin) {
  // Two buckets, two kernels of one plugin: alternating calls must run each bucket's kernel
  // (the fixture counts the runs of each).
  auto o = acc_test::options(acc_test::scratch_dir("c") / "t.json");
  o.test_hooks = acc_test::cost_hooks([](const CandidateId& id, const OpDesc& op, CostPhase) {
    const bool small = std::get<MatmulDesc>(op.desc).m <= 8;
    return id.kernel == (small ? "fast" : "slow") ? 1e-6 : 1e-3;
  });
  Accelerator acc(acc_test::plugins({"acc_good"}), o);
  const Workload ws = acc_test::small_matmul(8), wl = acc_test::small_matmul(64);
  const auto& small = std::get<MatmulDesc>(ws.op.desc);
  const auto& large = std::get<MatmulDesc>(wl.op.desc);
  std::vector<std::uint8_t> a(64 * 40, 140);
  std::vector<std::int8_t> b(40 * 24, 2);
  std::vector<std::int32_t> c(64 * 24);
  const auto ops = acc.plugins()[0].ops;
  auto runs = [&](const char* kernel) {
    return std::stol(ops->devices()[0].properties.at(kernel));
  };
  // The first calls decide the buckets (verification runs the candidates' plans too).
  acc.matmul_integer(small, a.data(), b.data(), c.data());
  acc.matmul_integer(large, a.data(), b.data(), c.data());
  for (int round = 0; round < 3; ++round) {
    long fast = runs("runs_fast"), slow = runs("runs_slow");
    acc.matmul_integer(small, a.data(), b.data(), c.data());
    EXPECT_EQ(runs("runs_fast"), fast + 1);
    EXPECT_EQ(runs("runs_slow"), slow);
    fast = runs("runs_fast");
    acc.matmul_integer(large, a.data(), b.data(), c.data());
    EXPECT_EQ(runs("runs_slow"), slow + 1);
    EXPECT_EQ(runs("runs_fast"), fast);
  }
  EXPECT_EQ(acc.stats().buckets_tuned, 2u);
}

// Dynamic quantization brings new activation params on every call: per-tensor matmul_dequant
// calls that differ only in A's values run one plan with A's params given at run
// (MatmulDesc::a_params_at_run) instead of making a plan per call.
TEST(Dispatch, NewActivationParamsOnEveryCallReuseOnePlan) {
  const auto seed = acc_test::test_seed();
  SCOPED_TRACE("QFORGE_TEST_SEED=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  Accelerator acc(acc_test::plugins({"cpu_scalar"}),
                  acc_test::options(acc_test::scratch_dir("c") / "t.json"));
  MatmulDesc d = std::get<MatmulDesc>(acc_test::small_matmul(6, OpKind::matmul_dequant).op.desc);
  d.has_bias = true;
  d.b = QuantizationParams::per_channel(DType::int8, Mapping::symmetric, 1,
                                        std::vector<float>(static_cast<std::size_t>(d.n), 0.02f));
  const auto b = codes(rng, DType::int8, static_cast<std::size_t>(d.k * d.n));
  const auto bias = floats(rng, static_cast<std::size_t>(d.n));
  const std::size_t mn = static_cast<std::size_t>(d.m * d.n);
  for (int call = 0; call < 20; ++call) {
    d.a = QuantizationParams::per_tensor_affine(
        DType::uint8, std::uniform_real_distribution<float>(1e-3f, 1.0f)(rng),
        std::uniform_int_distribution<std::int32_t>(0, 255)(rng));
    const auto a = codes(rng, DType::uint8, static_cast<std::size_t>(d.m * d.k));
    std::vector<float> got(mn), want(mn);
    acc.matmul_dequant(d, a.data(), b.data(), bias.data(), got.data());
    reference::matmul_dequant(d, a.data(), b.data(), bias.data(), want.data());
    EXPECT_EQ(got, want) << "call " << call << ", A " << d.a.to_string();
  }
  EXPECT_EQ(acc.stats().dispatches, 20u);
  EXPECT_EQ(acc.stats().plans_made, 1u);
  // Another shape of the bucket gets a plan of its own, which its calls then reuse.
  d.m = 5;
  for (int call = 0; call < 3; ++call) {
    d.a = QuantizationParams::per_tensor_affine(DType::uint8, 0.01f * (call + 1), 100 + call);
    const auto a = codes(rng, DType::uint8, static_cast<std::size_t>(d.m * d.k));
    std::vector<float> got(static_cast<std::size_t>(d.m * d.n)), want(got.size());
    acc.matmul_dequant(d, a.data(), b.data(), bias.data(), got.data());
    reference::matmul_dequant(d, a.data(), b.data(), bias.data(), want.data());
    EXPECT_EQ(got, want) << "m = 5, call " << call;
  }
  EXPECT_EQ(acc.stats().plans_made, 2u);
  // The per-call op has no place for run-time values: the flag itself is refused.
  d.a_params_at_run = true;
  std::vector<float> y(static_cast<std::size_t>(d.m * d.n));
  const auto a = codes(rng, DType::uint8, static_cast<std::size_t>(d.m * d.k));
  try {
    acc.matmul_dequant(d, a.data(), b.data(), bias.data(), y.data());
    ADD_FAILURE() << "the per-call matmul_dequant accepted a_params_at_run";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("a_params_at_run"), std::string::npos) << e.what();
  }
}

TEST(Dispatch, OpErrorsPropagateUnchanged) {
  Accelerator acc(acc_test::plugins({"cpu_scalar"}),
                  acc_test::options(acc_test::scratch_dir("c") / "t.json"));
  // A matmul whose result leaves int32: the plugin's overflow error, not "unsupported".
  const MatmulDesc d{1,
                     1,
                     4,
                     QuantizationParams::per_tensor_affine(DType::int16, 1.0f, 0),
                     QuantizationParams::per_tensor_affine(DType::int16, 1.0f, 0),
                     MatrixLayout::kn,
                     false,
                     FloatType::f32,
                     std::nullopt,
                     RequantMode::float_multiplier};
  const std::int16_t a[4] = {-32768, -32768, -32768, -32768},
                     b[4] = {-32768, -32768, -32768, -32768};
  std::int32_t c = 0;
  try {
    acc.matmul_integer(d, a, b, &c);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::overflow) << e.what();
  }
}

}  // namespace
