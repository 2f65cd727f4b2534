// The onednn plugin's own plans (onednn_plan.cpp): for every op kind it runs here, a plan's
// outputs are the per-call op's byte for byte, with the weights passed on each run or fixed
// when the plan is made, for every kernel (the per-call op runs the backend's own kernel; every
// kernel is exact); a plan keeps its kernel and thread count when the instance's "threads"
// option changes afterwards; and plans, one plan from two threads included, run from several
// threads at once.
// Int8 matmuls run only where oneDNN is exact (VNNI/AMX); elsewhere their cases are left out
// with supports()'s reason and the rest still runs.
#include "qforge/plan.h"

#include <gtest/gtest.h>

#include <cmath>
#include <thread>

#include "qforge/op_table.h"
#include "support.h"

namespace qforge::onednn_test {
namespace {

std::int64_t draw(Rng& rng, std::int64_t lo, std::int64_t hi) {
  return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
}

DType code_type(Rng& rng) { return draw(rng, 0, 1) ? DType::int8 : DType::uint8; }

MatmulDesc random_matmul(Rng& rng, OpKind op) {
  const std::int64_t m = draw(rng, 1, 40), n = draw(rng, 1, 70), k = draw(rng, 1, 200);
  const MatrixLayout layout = draw(rng, 0, 1) ? MatrixLayout::kn : MatrixLayout::nk;
  MatmulDesc d{.m = m,
               .n = n,
               .k = k,
               .a = random_params(rng, code_type(rng), false),
               .b = random_params(rng, DType::int8, true, draw(rng, 0, 1) ? n : 0,
                                  layout == MatrixLayout::kn ? 1 : 0),
               .b_layout = layout};
  d.has_bias = op == OpKind::matmul_dequant && draw(rng, 0, 1);
  if (op == OpKind::qlinear_matmul) {
    d.y = random_params(rng, code_type(rng), false);
    d.requant_mode = draw(rng, 0, 1) ? RequantMode::fixed_point : RequantMode::float_multiplier;
  }
  return d;
}

LinearDesc random_linear(Rng& rng) {
  const std::int64_t m = draw(rng, 1, 9), n = draw(rng, 1, 20), k = draw(rng, 1, 70);
  return LinearDesc{.m = m,
                    .n = n,
                    .k = k,
                    .w = random_params(rng, DType::int8, true, n, 0),
                    .has_bias = draw(rng, 0, 1) == 1};
}

OpDesc random_op(Rng& rng, OpKind op) {
  switch (op) {
    case OpKind::quantize:
    case OpKind::dequantize: {
      const Shape shape{draw(rng, 1, 9), draw(rng, 1, 3000)};
      const bool per_channel = draw(rng, 0, 1);
      return {op, QuantizeDesc{shape, random_params(rng, code_type(rng), false,
                                                    per_channel ? shape[0] : 0, 0)}};
    }
    case OpKind::requantize: {
      RequantizeDesc d;
      d.shape = {draw(rng, 1, 5), draw(rng, 1, 2000)};
      d.axis = 0;
      d.multipliers.resize(draw(rng, 0, 1) ? static_cast<std::size_t>(d.shape[0]) : 1);
      for (auto& m : d.multipliers) m = std::ldexp(random_scale(rng), -8);
      d.out_dtype = code_type(rng);
      d.out_zero_point = d.out_dtype == DType::int8 ? draw(rng, -5, 5) : draw(rng, 120, 130);
      d.mode = draw(rng, 0, 1) ? RequantMode::fixed_point : RequantMode::float_multiplier;
      return {op, d};
    }
    case OpKind::dynamic_quantize_linear:
      return {op, DynamicQuantizeDesc{{draw(rng, 1, 9), draw(rng, 1, 500)}}};
    case OpKind::linear_forward:
    case OpKind::linear_backward: return {op, random_linear(rng)};
    default: return {op, random_matmul(rng, op)};
  }
}

// Inputs in op_operands() order: codes anywhere in their range, floats of moderate size, int32
// accumulators small enough for every requantization, activation scales positive.
std::vector<std::vector<std::uint8_t>> random_inputs(Rng& rng, const OpDesc& op) {
  std::vector<std::vector<std::uint8_t>> in;
  for (const auto& o : op_operands(op).inputs) {
    std::vector<std::uint8_t> bytes(o.bytes);
    const bool wide = o.count > 0 && o.bytes == o.count * 4;
    if (!wide) {
      for (auto& b : bytes) b = static_cast<std::uint8_t>(draw(rng, 0, 255));
    } else if (op.op == OpKind::requantize) {
      for (std::size_t i = 0; i < o.count; ++i) {
        const auto v = static_cast<std::int32_t>(draw(rng, -(1 << 20), 1 << 20));
        std::memcpy(&bytes[i * 4], &v, 4);
      }
    } else {
      for (std::size_t i = 0; i < o.count; ++i) {
        float v = std::normal_distribution<float>(0.0f, 3.0f)(rng);
        if (o.name == "x_scale") v = random_scale(rng);
        std::memcpy(&bytes[i * 4], &v, 4);
      }
    }
    in.push_back(std::move(bytes));
  }
  return in;
}

struct Outputs {
  std::vector<std::vector<std::uint8_t>> bytes;
  std::vector<void*> ptrs() {
    std::vector<void*> p;
    for (auto& b : bytes) p.push_back(b.data());
    return p;
  }
};

Outputs poisoned_outputs(const OpDesc& op) {
  Outputs out;
  for (const auto& o : op_operands(op).outputs) out.bytes.emplace_back(o.bytes, 0xCD);
  return out;
}

std::vector<const void*> pointers(const std::vector<std::vector<std::uint8_t>>& in) {
  std::vector<const void*> p;
  for (const auto& b : in) p.push_back(b.data());
  return p;
}

void put_scale(void* dst, const QuantizationParams& p) {
  const float s = p.scale();
  std::memcpy(dst, &s, sizeof s);
}

// The per-call op on the arrays of op_operands().
void call(QuantizationOps& ops, const OpDesc& op, const std::vector<const void*>& in,
          std::vector<void*> out) {
  auto f32 = [](const void* p) { return static_cast<const float*>(p); };
  auto i8 = [](const void* p) { return static_cast<const std::int8_t*>(p); };
  switch (op.op) {
    case OpKind::quantize: ops.quantize(std::get<QuantizeDesc>(op.desc), in[0], out[0]); return;
    case OpKind::dequantize:
      ops.dequantize(std::get<QuantizeDesc>(op.desc), in[0], static_cast<float*>(out[0]));
      return;
    case OpKind::requantize:
      ops.requantize(std::get<RequantizeDesc>(op.desc), static_cast<const std::int32_t*>(in[0]),
                     out[0]);
      return;
    case OpKind::dynamic_quantize_linear: {
      const auto p = ops.dynamic_quantize_linear(std::get<DynamicQuantizeDesc>(op.desc), f32(in[0]),
                                                 static_cast<std::uint8_t*>(out[0]));
      put_scale(out[1], p);
      *static_cast<std::uint8_t*>(out[2]) = static_cast<std::uint8_t>(p.zero_point());
      return;
    }
    case OpKind::matmul_integer:
      ops.matmul_integer(std::get<MatmulDesc>(op.desc), in[0], in[1],
                         static_cast<std::int32_t*>(out[0]));
      return;
    case OpKind::matmul_dequant: {
      const auto& d = std::get<MatmulDesc>(op.desc);
      ops.matmul_dequant(d, in[0], in[1], d.has_bias ? f32(in[2]) : nullptr, out[0]);
      return;
    }
    case OpKind::qlinear_matmul:
      ops.qlinear_matmul(std::get<MatmulDesc>(op.desc), in[0], in[1], out[0]);
      return;
    case OpKind::linear_forward: {
      const auto& d = std::get<LinearDesc>(op.desc);
      put_scale(out[2],
                ops.linear_forward(d, f32(in[0]), i8(in[1]), d.has_bias ? f32(in[2]) : nullptr,
                                   static_cast<std::int8_t*>(out[0]), static_cast<float*>(out[1])));
      return;
    }
    case OpKind::linear_backward: {
      const auto& d = std::get<LinearDesc>(op.desc);
      float sx;
      std::memcpy(&sx, in[2], sizeof sx);
      ops.linear_backward(d, f32(in[0]), i8(in[1]),
                          QuantizationParams::per_tensor_symmetric(DType::int8, sx), i8(in[3]),
                          static_cast<float*>(out[0]), static_cast<float*>(out[1]),
                          d.has_bias ? static_cast<float*>(out[2]) : nullptr);
      return;
    }
    default: FAIL() << "no per-call form for " << to_string(op.op) << " in this test";
  }
}

// The weights of op_operands() fixed from `in` (PlanRequest::weights).
std::vector<const void*> weights_of(const OpDesc& op,
                                    const std::vector<std::vector<std::uint8_t>>& in) {
  const auto operands = op_operands(op);
  std::vector<const void*> w(operands.inputs.size(), nullptr);
  for (std::size_t i = 0; i < w.size(); ++i)
    if (operands.inputs[i].role == OperandRole::weight) w[i] = in[i].data();
  return w;
}

Outputs run_plan(const Plan& plan, const std::vector<std::vector<std::uint8_t>>& in) {
  Outputs out = poisoned_outputs(plan.desc());
  std::vector<const void*> p = pointers(in);
  for (std::size_t i = 0; i < p.size(); ++i)
    if (!plan.reads_input(i)) p[i] = nullptr;
  plan.run(p, out.ptrs());
  return out;
}

void expect_same(const Outputs& got, const Outputs& want) {
  ASSERT_EQ(got.bytes.size(), want.bytes.size());
  for (std::size_t i = 0; i < got.bytes.size(); ++i)
    EXPECT_TRUE(same_bytes(got.bytes[i].data(), want.bytes[i].data(), want.bytes[i].size()))
        << "output " << i;
}

constexpr OpKind kKinds[] = {OpKind::quantize,       OpKind::dequantize,
                             OpKind::requantize,     OpKind::dynamic_quantize_linear,
                             OpKind::matmul_integer, OpKind::matmul_dequant,
                             OpKind::qlinear_matmul, OpKind::linear_forward,
                             OpKind::linear_backward};

TEST(Plans, EveryOpKindMatchesThePerCallOp) {
  ONEDNN_OR_SKIP(ops);
  Rng rng = test_rng();
  int compared = 0;
  for (OpKind kind : kKinds)
    for (int repeat = 0; repeat < 3; ++repeat) {
      const OpDesc op = random_op(rng, kind);
      SCOPED_TRACE(describe(op));
      const Support s = ops.supports(op);
      if (!s.supported) continue;  // int8 matmuls where oneDNN is not exact
      const auto in = random_inputs(rng, op);
      Outputs want = poisoned_outputs(op);
      call(ops, op, pointers(in), want.ptrs());
      for (const auto& kernel : s.kernels) {
        SCOPED_TRACE("kernel " + kernel);
        for (const bool fix : {false, true}) {
          SCOPED_TRACE(fix ? "weights fixed" : "weights passed");
          const auto plan =
              ops.plan(op, {0, kernel, fix ? weights_of(op, in) : std::vector<const void*>{}});
          EXPECT_EQ(plan->kernel(), kernel);
          EXPECT_EQ(plan->concurrency(), PlanConcurrency::concurrent);
          expect_same(run_plan(*plan, in), want);
          expect_same(run_plan(*plan, in), want);  // a second run on the same worker
          ++compared;
        }
      }
    }
  EXPECT_GT(compared, 0);
}

TEST(Plans, PlanKeepsItsKernelAndThreadsWhenTheInstanceChanges) {
  ONEDNN_OR_SKIP(ops);
  Rng rng = test_rng();
  // Dequantize has two kernels everywhere it can use the reorder: per-tensor int8.
  const OpDesc op{OpKind::dequantize,
                  QuantizeDesc{{7, 1000}, random_params(rng, DType::int8, false)}};
  const auto kernels = ops.supports(op).kernels;
  ASSERT_GE(kernels.size(), 2u) << "expected the reorder and the loop";
  const auto in = random_inputs(rng, op);
  ops.set_option("threads", "2");
  const auto plan = ops.plan(op, {0, kernels.front(), {}});
  const Outputs want = run_plan(*plan, in);
  ops.set_option("threads", "1");
  const auto other = ops.plan(op, {0, kernels.back(), {}});
  Outputs by_instance = poisoned_outputs(op);
  call(ops, op, pointers(in), by_instance.ptrs());
  expect_same(run_plan(*plan, in), want);
  expect_same(run_plan(*other, in), want);  // dequantize is exact whichever kernel runs
  expect_same(by_instance, want);
  EXPECT_EQ(plan->kernel(), kernels.front());
  EXPECT_EQ(other->kernel(), kernels.back());
  ops.set_option("threads", "0");
}

TEST(Plans, RunFromSeveralThreadsAtOnce) {
  ONEDNN_OR_SKIP(ops);
  Rng rng = test_rng();
  struct Job {
    OpDesc op;
    std::vector<std::vector<std::uint8_t>> in;
    Outputs want;
    std::shared_ptr<const Plan> plan;
  };
  std::vector<Job> jobs;
  for (OpKind kind :
       {OpKind::quantize, OpKind::dequantize, OpKind::linear_backward,
        OpKind::dynamic_quantize_linear, OpKind::matmul_integer, OpKind::qlinear_matmul}) {
    const OpDesc op = random_op(rng, kind);
    if (!ops.supports(op).supported) continue;
    Job j{op, random_inputs(rng, op), poisoned_outputs(op), nullptr};
    call(ops, op, pointers(j.in), j.want.ptrs());
    j.plan = ops.plan(op, {0, "", weights_of(op, j.in)});
    jobs.push_back(std::move(j));
  }
  ASSERT_GE(jobs.size(), 2u);
  // Every plan on a thread of its own, and the first plan on a second thread too.
  std::vector<std::size_t> job_of;
  for (std::size_t j = 0; j < jobs.size(); ++j) job_of.push_back(j);
  job_of.push_back(0);
  std::vector<std::string> errors(job_of.size());
  std::vector<int> mismatches(job_of.size(), 0);
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < job_of.size(); ++t)
    threads.emplace_back([&, t] {
      const Job& j = jobs[job_of[t]];
      try {
        for (int run = 0; run < 20; ++run) {
          const Outputs got = run_plan(*j.plan, j.in);
          if (got.bytes != j.want.bytes) ++mismatches[t];
        }
      } catch (const std::exception& e) {
        errors[t] = e.what();
      }
    });
  for (auto& th : threads) th.join();
  for (std::size_t t = 0; t < job_of.size(); ++t) {
    EXPECT_EQ(errors[t], "") << "thread " << t << ": " << describe(jobs[job_of[t]].op);
    EXPECT_EQ(mismatches[t], 0) << "thread " << t << ": " << describe(jobs[job_of[t]].op);
  }
}

TEST(Plans, BadRequestsAreClearErrors) {
  ONEDNN_OR_SKIP(ops);
  const OpDesc op{OpKind::quantize,
                  QuantizeDesc{{4}, QuantizationParams::per_tensor_symmetric(DType::int8, 0.5f)}};
  try {
    ops.plan(op, {1, "", {}});
    ADD_FAILURE() << "device 1 was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("device 1"), std::string::npos) << e.what();
  }
  try {
    ops.plan(op, {0, "loop_dequantize", {}});
    ADD_FAILURE() << "a dequantize kernel was accepted for quantize";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::unsupported);
    EXPECT_NE(std::string(e.what()).find("loop_dequantize"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace qforge::onednn_test
