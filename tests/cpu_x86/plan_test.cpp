// cpu_x86's plans beyond the conformance suite: distinct plans of every vector path run at once
// from several threads while the backend itself runs several threads, each output equal to the
// reference bit for bit; and a plan keeps what was decided when it was made (kernel, threads,
// ISA tiers) whatever the instance is told afterwards.
#include "qforge/plan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <thread>

#include "gemm_cases.h"
#include "qforge/error.h"
#include "qforge/op_table.h"
#include "qforge/reference.h"

namespace qforge::cpu_x86_test {
namespace {

using Bytes = std::vector<std::uint8_t>;

// One op with its operands in op_operands() order and the reference's outputs.
struct Job {
  OpDesc op;
  std::vector<Bytes> in, want;
  std::vector<bool> fix;  // per input: fixed when the plan is made
  std::shared_ptr<const Plan> plan;

  void make_plan(QuantizationOps& ops, const std::string& kernel = "") {
    const OpOperands operands = op_operands(op);
    want.clear();
    for (const auto& o : operands.outputs) want.emplace_back(o.bytes);
    std::vector<const void*> in_ptrs;
    std::vector<void*> out_ptrs;
    for (auto& b : in) in_ptrs.push_back(b.data());
    for (auto& b : want) out_ptrs.push_back(b.data());
    run_reference(op, in_ptrs.data(), out_ptrs.data());
    PlanRequest request{0, kernel, {}};
    fix.resize(in.size(), false);
    if (std::find(fix.begin(), fix.end(), true) != fix.end())
      for (std::size_t i = 0; i < in.size(); ++i)
        request.weights.push_back(fix[i] ? in[i].data() : nullptr);
    plan = ops.plan(op, request);
  }
  // Runs the plan on fresh outputs; "" or what differed.
  std::string run_and_compare() const {
    std::vector<Bytes> got;
    for (const auto& w : want) got.emplace_back(w.size(), 0xCD);
    std::vector<const void*> in_ptrs;
    std::vector<void*> out_ptrs;
    for (std::size_t i = 0; i < in.size(); ++i)
      in_ptrs.push_back(plan->reads_input(i) ? in[i].data() : nullptr);
    for (auto& b : got) out_ptrs.push_back(b.data());
    plan->run(in_ptrs, out_ptrs);
    for (std::size_t i = 0; i < got.size(); ++i)
      if (got[i] != want[i])
        return "output " + std::to_string(i) + " differs from the reference: " + describe(op) +
               " (kernel " + plan->kernel() + ")";
    return "";
  }
};

Bytes as_bytes(const std::vector<float>& v) {
  Bytes b(v.size() * sizeof(float));
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

std::vector<float> random_floats(Rng& rng, std::int64_t n, float lo, float hi) {
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(static_cast<std::size_t>(n));
  for (auto& x : v) x = u(rng);
  return v;
}

Job matmul_job(Rng& rng, OpKind op, std::int64_t m, std::int64_t n, std::int64_t k, bool blocked,
               bool fix_b) {
  const MatmulProblem p =
      random_problem(rng, m, n, k, {blocked, false, op == OpKind::qlinear_matmul});
  Job j{OpDesc{op, p.desc}, {p.a, p.b}, {}, {}, nullptr};
  if (op == OpKind::matmul_dequant && p.desc.has_bias) j.in.push_back(as_bytes(p.bias));
  if (op != OpKind::matmul_dequant) std::get<MatmulDesc>(j.op.desc).has_bias = false;
  j.fix.assign(j.in.size(), false);
  j.fix[1] = fix_b;
  return j;
}

Job linear_job(Rng& rng, std::int64_t m, std::int64_t n, std::int64_t k, bool fix_w) {
  const LinearDesc d{m, n, k, random_params(rng, DType::int8, Granularity::per_channel, true, n, 0),
                     true};
  Job j{OpDesc{OpKind::linear_forward, d},
        {as_bytes(random_floats(rng, m * k, -2, 2)), random_codes(rng, DType::int8, n * k),
         as_bytes(random_floats(rng, n, -1, 1))},
        {},
        {},
        nullptr};
  j.fix = {false, fix_w, fix_w};
  return j;
}

Job dynamic_quantize_job(Rng& rng, std::int64_t rows, std::int64_t cols) {
  return Job{OpDesc{OpKind::dynamic_quantize_linear, DynamicQuantizeDesc{{rows, cols}}},
             {as_bytes(random_floats(rng, rows * cols, -3, 5))},
             {},
             {},
             nullptr};
}

Job quantize_job(Rng& rng, std::int64_t rows, std::int64_t cols) {
  const QuantizeDesc d{{rows, cols},
                       random_params(rng, DType::int8, Granularity::per_channel, false, rows, 0)};
  return Job{OpDesc{OpKind::quantize, d},
             {as_bytes(random_floats(rng, rows * cols, -100, 100))},
             {},
             {},
             nullptr};
}

TEST(CpuX86Plans, DistinctPlansRunAtOnceWithSeveralBackendThreads) {
  auto l = load_plugin();
  SKIP_UNLESS_USABLE(l);
  SCOPED_TRACE(seed_text());
  Rng rng = test_rng();
  QuantizationOps& ops = *l.ops;
  ops.set_option("threads", "3");
  std::vector<Job> jobs;
  jobs.push_back(matmul_job(rng, OpKind::matmul_integer, 1, 700, 300, false, true));    // GEMV
  jobs.push_back(matmul_job(rng, OpKind::matmul_dequant, 37, 300, 200, false, false));  // B per run
  jobs.push_back(matmul_job(rng, OpKind::qlinear_matmul, 70, 129, 257, false, true));
  jobs.push_back(matmul_job(rng, OpKind::matmul_dequant, 5, 200, 256, true, true));  // block-wise
  jobs.push_back(matmul_job(rng, OpKind::matmul_integer, 64, 96, 100, false, false));
  jobs.push_back(linear_job(rng, 24, 150, 70, true));
  jobs.push_back(linear_job(rng, 3, 40, 90, false));
  jobs.push_back(dynamic_quantize_job(rng, 300, 517));  // several pool tasks
  jobs.push_back(quantize_job(rng, 5, 40000));
  for (Job& j : jobs) {
    j.make_plan(ops);
    ASSERT_EQ(j.plan->concurrency(), PlanConcurrency::concurrent) << describe(j.op);
  }
  // Each thread runs every plan, starting at a different one, so that distinct plans (and the
  // same plan) overlap in time.
  constexpr int kThreads = 4, kRounds = 6;
  std::vector<std::string> failures(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      try {
        for (int r = 0; r < kRounds; ++r)
          for (std::size_t i = 0; i < jobs.size(); ++i) {
            const std::string why =
                jobs[(i + static_cast<std::size_t>(t) * 2) % jobs.size()].run_and_compare();
            if (!why.empty() && failures[static_cast<std::size_t>(t)].empty())
              failures[static_cast<std::size_t>(t)] = why;
          }
      } catch (const std::exception& e) {
        failures[static_cast<std::size_t>(t)] = e.what();
      }
    });
  for (auto& t : threads) t.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(failures[static_cast<std::size_t>(t)], "");
}

// The plans of one instance lend their GEMM scratch (the packed A) from one pool: on one thread
// they all pack into the same scratch, which grows for a large plan and then serves smaller
// ones with other layouts (GEMV, block-wise, B per run, Linear's int8 A). Each output stays
// equal to the reference whatever plan packed into the scratch before it.
TEST(CpuX86Plans, PlansOfOneInstanceShareScratchAcrossShapes) {
  auto l = load_plugin();
  SKIP_UNLESS_USABLE(l);
  SCOPED_TRACE(seed_text());
  Rng rng = test_rng();
  QuantizationOps& ops = *l.ops;
  ops.set_option("threads", "2");
  std::vector<Job> jobs;
  jobs.push_back(matmul_job(rng, OpKind::matmul_dequant, 130, 160, 520, false, true));  // large
  jobs.push_back(matmul_job(rng, OpKind::matmul_integer, 1, 300, 130, false, true));    // GEMV
  jobs.push_back(matmul_job(rng, OpKind::qlinear_matmul, 17, 33, 700, false, true));    // deeper
  jobs.push_back(matmul_job(rng, OpKind::matmul_dequant, 9, 64, 256, true, true));    // block-wise
  jobs.push_back(matmul_job(rng, OpKind::matmul_integer, 40, 50, 60, false, false));  // B per run
  jobs.push_back(linear_job(rng, 20, 48, 70, true));
  for (Job& j : jobs) j.make_plan(ops);
  for (int r = 0; r < 3; ++r) {
    for (const Job& j : jobs) EXPECT_EQ(j.run_and_compare(), "");
    std::reverse(jobs.begin(), jobs.end());
  }
}

// A plan made with kernel X runs X, with the thread count and ISA tiers it was made with, after
// the instance's options change; the instance's per-call ops follow the new settings.
TEST(CpuX86Plans, PlanTimeChoicesSurviveLaterInstanceSettings) {
  auto l = load_plugin();
  SKIP_UNLESS_USABLE(l);
  SCOPED_TRACE(seed_text());
  Rng rng = test_rng();
  QuantizationOps& ops = *l.ops;
  ops.set_option("threads", "2");
  // Symmetric int8 B without -128, so both AVX2 kernels can run it.
  MatmulProblem p{
      MatmulDesc{.m = 40,
                 .n = 64,
                 .k = 96,
                 .a = random_params(rng, DType::uint8, Granularity::per_tensor, false, 1),
                 .b = random_params(rng, DType::int8, Granularity::per_channel, true, 64, 1)},
      random_codes(rng, DType::uint8, 40 * 96),
      random_codes(rng, DType::int8, 96 * 64, -127, 127),
      {}};
  const OpDesc op{OpKind::matmul_integer, p.desc};
  const std::string x = "q8_gemm_2x16c4__avx2_maddwd", y = "q8_gemm_4x16c4__avx2_maddubs";
  const Support s = ops.supports(op);
  ASSERT_TRUE(s.supported) << s.reason;
  for (const std::string& k : {x, y})
    if (std::find(s.kernels.begin(), s.kernels.end(), k) == s.kernels.end())
      GTEST_SKIP() << k << " cannot run " << describe(op) << " here";
  for (bool fix_b : {false, true}) {
    Job j{op, {p.a, p.b}, {}, {false, fix_b}, nullptr};
    j.make_plan(ops, x);
    EXPECT_EQ(j.plan->kernel(), x);
    ops.set_option("threads", "1");
    ops.set_option("isa", "avx2");
    EXPECT_EQ(j.run_and_compare(), "");
    EXPECT_EQ(j.plan->kernel(), x);
    // A plan of Y made now runs next to it; the per-call op follows the new settings.
    Job k{op, {p.a, p.b}, {}, {false, fix_b}, nullptr};
    k.make_plan(ops, y);
    EXPECT_EQ(k.plan->kernel(), y);
    EXPECT_EQ(k.run_and_compare(), "");
    EXPECT_EQ(ops.devices()[0].properties.at("isa_used"), "avx2");
    std::vector<std::int32_t> c(static_cast<std::size_t>(p.desc.m * p.desc.n)), want(c.size());
    reference::matmul_integer(p.desc, p.a.data(), p.b.data(), want.data());
    ops.matmul_integer(p.desc, p.a.data(), p.b.data(), c.data());
    EXPECT_EQ(c, want);
    EXPECT_EQ(j.run_and_compare(), "");
    ops.set_option("threads", "3");
    ops.set_option("isa", "all");
  }
}

// A plan whose automatic choice is a maddubs kernel, given a B holding -128 on a run, still
// matches the reference (that run takes the exact maddwd kernel, as the per-call ops do); with
// such a B fixed, the plan names maddwd from the start.
TEST(CpuX86Plans, MaddubsPlansStayExactForWeightsHoldingMinusOneTwentyEight) {
  auto l = load_plugin();
  SKIP_UNLESS_USABLE(l);
  SCOPED_TRACE(seed_text());
  Rng rng = test_rng();
  QuantizationOps& ops = *l.ops;
  const std::string maddubs = "q8_gemm_4x16c4__avx2_maddubs";
  MatmulDesc d{.m = 33,
               .n = 40,
               .k = 70,
               .a = random_params(rng, DType::uint8, Granularity::per_tensor, false, 1),
               .b = QuantizationParams::per_tensor_symmetric(DType::int8, 0.01f)};
  const OpDesc op{OpKind::matmul_integer, d};
  const Support s = ops.supports(op);
  if (std::find(s.kernels.begin(), s.kernels.end(), maddubs) == s.kernels.end())
    GTEST_SKIP() << maddubs << " cannot run " << describe(op) << " here";
  Bytes b = random_codes(rng, DType::int8, d.n * d.k);
  b[static_cast<std::size_t>(rng() % b.size())] = 0x80;  // -128
  for (bool fix_b : {false, true}) {
    Job j{op, {random_codes(rng, DType::uint8, d.m * d.k), b}, {}, {false, fix_b}, nullptr};
    j.make_plan(ops, maddubs);
    EXPECT_EQ(j.plan->kernel(), fix_b ? "q8_gemm_2x16c4__avx2_maddwd" : maddubs);
    EXPECT_EQ(j.run_and_compare(), "");
  }
}

// With B fixed, a plan's automatic kernel is chosen for B's values (never maddubs on a B holding
// -128), and the plan and the per-call op (which chooses for B on each call) both match the
// reference.
TEST(CpuX86Plans, AutomaticChoiceWithBFixedFollowsItsValues) {
  auto l = load_plugin();
  SKIP_UNLESS_USABLE(l);
  SCOPED_TRACE(seed_text());
  Rng rng = test_rng();
  QuantizationOps& ops = *l.ops;
  for (int i = 0; i < 12; ++i) {
    const std::int64_t m = i % 3 == 0 ? 1 + i : 17 + 9 * i;
    const bool blocked = i % 4 == 3;
    Job j = matmul_job(rng, i % 2 ? OpKind::matmul_dequant : OpKind::matmul_integer, m, 40, 64 + i,
                       blocked, true);
    // int8 B without -128 whatever its scheme: the choice then depends on B's values.
    if (i % 2 == 0 && std::get<MatmulDesc>(j.op.desc).b.dtype() == DType::int8)
      j.in[1] = random_codes(rng, DType::int8, 40 * (64 + i), -127, 127);
    j.make_plan(ops);
    const auto& d = std::get<MatmulDesc>(j.op.desc);
    std::vector<std::uint8_t> out(j.want[0].size());
    if (j.op.op == OpKind::matmul_integer)
      ops.matmul_integer(d, j.in[0].data(), j.in[1].data(),
                         reinterpret_cast<std::int32_t*>(out.data()));
    else
      ops.matmul_dequant(d, j.in[0].data(), j.in[1].data(),
                         d.has_bias ? reinterpret_cast<const float*>(j.in[2].data()) : nullptr,
                         out.data());
    EXPECT_EQ(out, j.want[0]) << describe(j.op);
    const auto& b = j.in[1];
    const bool holds_min =
        d.b.dtype() == DType::int8 && std::find(b.begin(), b.end(), 0x80) != b.end();
    if (holds_min) EXPECT_EQ(j.plan->kernel().find("maddubs"), std::string::npos) << describe(j.op);
    EXPECT_EQ(j.run_and_compare(), "");
  }
}

}  // namespace
}  // namespace qforge::cpu_x86_test
