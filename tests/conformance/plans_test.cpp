// Plans (plan.h) beyond the plan launches every conformance case already makes (op_case.h):
//   - the ops that compute or read params (dynamic_quantize_linear, linear_forward,
//     linear_backward), whose plan operands carry those params as arrays in host memory on
//     every device (the other arrays in the plugin's memory);
//   - plans of backends that declare them concurrent, run from several threads at once;
//   - the errors of plan() and run().
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "harness/compare.h"
#include "harness/fixture.h"
#include "harness/guarded_buffer.h"
#include "harness/random_data.h"
#include "qforge/op_table.h"
#include "qforge/plan.h"
#include "qforge/reference.h"

namespace qforge::conformance {
namespace {

struct PlanParam {
  std::string plugin;
  std::string name() const { return plugin; }
  friend void PrintTo(const PlanParam& p, std::ostream* os) { *os << p.name(); }
};

std::vector<PlanParam> grid() {
  std::vector<PlanParam> out;
  for (const auto& plugin : plugins_under_test()) out.push_back({plugin});
  return out;
}

// Host arrays for one run of `op`, inputs filled by `fill`, outputs poisoned.
struct Arrays {
  std::vector<std::vector<std::byte>> in, out;
  std::vector<const void*> in_ptrs() const {
    std::vector<const void*> p;
    for (const auto& a : in) p.push_back(a.data());
    return p;
  }
  std::vector<void*> out_ptrs() {
    std::vector<void*> p;
    for (auto& a : out) p.push_back(a.data());
    return p;
  }
};

Arrays allocate(const OpOperands& operands) {
  Arrays a;
  for (const auto& o : operands.inputs) a.in.emplace_back(o.bytes);
  for (const auto& o : operands.outputs) a.out.emplace_back(o.bytes, std::byte{0xCD});
  return a;
}

template <class T>
void put(std::vector<std::byte>& dst, const std::vector<T>& values) {
  ASSERT_EQ(dst.size(), values.size() * sizeof(T));
  std::memcpy(dst.data(), values.data(), dst.size());
}

OutputSpec spec_of(const OperandSpec& o) {
  if (o.comparison == Comparison::nmse)
    return OutputSpec::floating(std::string(o.name), Shape{static_cast<std::int64_t>(o.count)},
                                o.float_type, o.tolerance);
  // Compared byte for byte, whatever the element type.
  return OutputSpec::quantized(std::string(o.name), Shape{static_cast<std::int64_t>(o.bytes)},
                               DType::uint8);
}

// Fresh inputs for the three ops with params operands.
OpDesc dynamic_quantize_case(Rng& rng, Arrays& a) {
  OpDesc op{OpKind::dynamic_quantize_linear, DynamicQuantizeDesc{{3, 29}}};
  a = allocate(op_operands(op));
  put(a.in[0], normal_floats(rng, 3 * 29, uniform_real(rng, 0.1, 10)));
  return op;
}

LinearDesc linear_desc(Rng& rng) {
  const std::int64_t m = uniform_int(rng, 1, 9), n = uniform_int(rng, 1, 20),
                     k = uniform_int(rng, 1, 70);
  return LinearDesc{.m = m,
                    .n = n,
                    .k = k,
                    .w = random_params(rng, DType::int8, Scheme::per_channel_symmetric(0), {n, k}),
                    .has_bias = chance(rng, 0.5)};
}

OpDesc linear_forward_case(Rng& rng, Arrays& a) {
  const LinearDesc d = linear_desc(rng);
  OpDesc op{OpKind::linear_forward, d};
  a = allocate(op_operands(op));
  put(a.in[0], normal_floats(rng, d.m * d.k, 2.0));
  a.in[1] = random_codes(rng, DType::int8, d.n * d.k, -127, 127);
  if (d.has_bias) put(a.in[2], normal_floats(rng, d.n, 1.0));
  return op;
}

OpDesc linear_backward_case(Rng& rng, Arrays& a) {
  const LinearDesc d = linear_desc(rng);
  OpDesc op{OpKind::linear_backward, d};
  a = allocate(op_operands(op));
  put(a.in[0], normal_floats(rng, d.m * d.n, 1.0));
  a.in[1] = random_codes(rng, DType::int8, d.m * d.k, -127, 127);
  put(a.in[2], std::vector<float>{random_scale(rng)});
  a.in[3] = random_codes(rng, DType::int8, d.n * d.k, -127, 127);
  return op;
}

// Runs `plan` on `a`: arrays in the plugin's memory (guarded), params in host memory on every
// device (op_table.h, host_resident); outputs read back into `a`.
void run_placed(QuantizationOps& ops, const Plan& plan, Arrays& a) {
  const OpOperands operands = op_operands(plan.desc());
  std::vector<std::unique_ptr<GuardedBuffer>> in_buffers, out_buffers;
  std::vector<const void*> in;
  std::vector<void*> out;
  for (std::size_t i = 0; i < a.in.size(); ++i) {
    if (operands.inputs[i].host_resident) {
      in.push_back(a.in[i].data());
      continue;
    }
    in_buffers.push_back(std::make_unique<GuardedBuffer>(
        ops, a.in[i].size(), "input " + std::string(operands.inputs[i].name)));
    in_buffers.back()->write(a.in[i]);
    in.push_back(in_buffers.back()->payload());
  }
  for (std::size_t i = 0; i < a.out.size(); ++i) {
    if (operands.outputs[i].host_resident) {
      std::fill(a.out[i].begin(), a.out[i].end(), std::byte{0xCD});
      out_buffers.push_back(nullptr);
      out.push_back(a.out[i].data());
      continue;
    }
    out_buffers.push_back(std::make_unique<GuardedBuffer>(
        ops, a.out[i].size(), "output " + std::string(operands.outputs[i].name)));
    out_buffers.back()->poison(std::vector<std::byte>{std::byte{0xCD}});
    out.push_back(out_buffers.back()->payload());
  }
  plan.run(in, out);
  ops.synchronize();
  for (std::size_t i = 0; i < a.out.size(); ++i)
    if (out_buffers[i]) {
      a.out[i] = out_buffers[i]->read();
      EXPECT_TRUE(out_buffers[i]->guards_intact());
    }
}

class Plans : public PluginTest<PlanParam> {};

TEST_P(Plans, ParamsOperandsMatchReference) {
  QuantizationOps& ops = *target_.ops;
  using Make = OpDesc (*)(Rng&, Arrays&);
  int compared = 0;
  std::string refused;
  for (Make make :
       {Make{&dynamic_quantize_case}, Make{&linear_forward_case}, Make{&linear_backward_case}})
    for (int repeat = 0; repeat < 3; ++repeat) {
      Arrays got;
      const OpDesc op = make(rng_, got);
      SCOPED_TRACE(describe(op));
      Arrays want = got;
      run_reference(op, want.in_ptrs().data(), want.out_ptrs().data());
      const Support s = ops.supports(op);
      if (!s.supported) {
        refused = s.reason;
        continue;
      }
      for (const auto& kernel : s.kernels) {
        SCOPED_TRACE("kernel " + kernel);
        std::shared_ptr<const Plan> plan;
        try {
          plan = ops.plan(op, {0, kernel, {}});
        } catch (const Error& e) {
          ASSERT_EQ(e.code(), ErrorCode::unsupported) << e.what();
          ASSERT_FALSE(ops.host_memory()) << "a host-memory backend refused a plan it supports";
          refused = e.what();
          continue;
        }
        run_placed(ops, *plan, got);
        const OpOperands operands = op_operands(op);
        for (std::size_t i = 0; i < operands.outputs.size(); ++i)
          EXPECT_TRUE(compare_output(spec_of(operands.outputs[i]), got.out[i], want.out[i]))
              << "output " << operands.outputs[i].name;
        ++compared;
      }
    }
  if (compared == 0) GTEST_SKIP() << target_.name << " makes no plan of these ops: " << refused;
}

// Distinct plans of matmul_integer (B fixed) run at once from four threads, each many times.
TEST_P(Plans, ConcurrentPlansRunAtOnce) {
  QuantizationOps& ops = *target_.ops;
  if (!ops.host_memory()) GTEST_SKIP() << target_.name << " keeps data in device memory";
  struct Job {
    OpDesc op;
    Arrays arrays, expected;
    std::shared_ptr<const Plan> plan;
  };
  std::vector<Job> jobs;
  for (int t = 0; t < 4; ++t) {
    const std::int64_t m = uniform_int(rng_, 1, 40), n = uniform_int(rng_, 1, 70),
                       k = uniform_int(rng_, 1, 300);
    const MatmulDesc d{
        .m = m,
        .n = n,
        .k = k,
        .a = random_params(rng_, DType::uint8, Scheme::per_tensor_affine(), {m, k}),
        .b = random_params(rng_, DType::int8, Scheme::per_tensor_symmetric(), {k, n})};
    jobs.push_back(Job{OpDesc{OpKind::matmul_integer, d}, {}, {}, nullptr});
    Job& j = jobs.back();
    j.arrays = allocate(op_operands(j.op));
    j.arrays.in[0] = random_codes(rng_, DType::uint8, d.m * d.k, 0, 255);
    j.arrays.in[1] = random_codes(rng_, DType::int8, d.k * d.n, -127, 127);
    j.expected = j.arrays;
    run_reference(j.op, j.expected.in_ptrs().data(), j.expected.out_ptrs().data());
    const Support s = ops.supports(j.op);
    if (!s.supported) GTEST_SKIP() << s.reason;
    j.plan = ops.plan(j.op, {0, "", {nullptr, j.arrays.in[1].data()}});
  }
  if (jobs[0].plan->concurrency() != PlanConcurrency::concurrent)
    GTEST_SKIP() << target_.name << "'s plans are " << to_string(jobs[0].plan->concurrency());
  std::vector<int> mismatches(jobs.size(), 0);
  std::vector<std::string> errors(jobs.size());
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < jobs.size(); ++t)
    threads.emplace_back([&, t] {
      Job& j = jobs[t];
      try {
        for (int run = 0; run < 25; ++run) {
          std::fill(j.arrays.out[0].begin(), j.arrays.out[0].end(), std::byte{0xCD});
          const std::vector<const void*> in{j.arrays.in[0].data(), nullptr};
          j.plan->run(in, j.arrays.out_ptrs());
          if (j.arrays.out[0] != j.expected.out[0]) ++mismatches[t];
        }
      } catch (const std::exception& e) {
        errors[t] = e.what();
      }
    });
  for (auto& t : threads) t.join();
  for (std::size_t t = 0; t < jobs.size(); ++t) {
    EXPECT_EQ(errors[t], "") << "thread " << t;
    EXPECT_EQ(mismatches[t], 0) << "thread " << t << ": " << describe(jobs[t].op);
  }
}

template <class F>
void expect_error(F&& f, ErrorCode code, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "no error; expected ErrorCode::" << to_string(code) << " mentioning \""
                  << needle << "\"";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

// A plan of matmul_dequant with A's params given at run (MatmulDesc::a_params_at_run) checks
// the values of every run: a non-finite or non-positive scale, a zero point outside A's dtype.
TEST_P(Plans, AParamsAtRunAreCheckedOnEveryRun) {
  QuantizationOps& ops = *target_.ops;
  if (!ops.host_memory()) GTEST_SKIP() << target_.name << " keeps data in device memory";
  const MatmulDesc d{.m = 3,
                     .n = 4,
                     .k = 5,
                     .a = QuantizationParams::per_tensor_affine(DType::uint8, 1.0f, 128),
                     .b = QuantizationParams::per_tensor_symmetric(DType::int8, 0.25f),
                     .a_params_at_run = true};
  const OpDesc op{OpKind::matmul_dequant, d};
  const Support s = ops.supports(op);
  if (!s.supported) GTEST_SKIP() << s.reason;
  const std::vector<std::byte> a(15, std::byte{7}), b(20, std::byte{3});
  std::vector<float> y(12);
  const auto plan = ops.plan(op, {0, "", {nullptr, b.data(), nullptr, nullptr}});
  auto run = [&](float scale, std::int32_t zero_point) {
    plan->run({a.data(), nullptr, &scale, &zero_point}, {y.data()});
  };
  run(0.5f, 7);
  std::vector<float> want(12);
  MatmulDesc plain = d;
  plain.a = QuantizationParams::per_tensor_affine(DType::uint8, 0.5f, 7);
  plain.a_params_at_run = false;
  reference::matmul_dequant(plain, a.data(), b.data(), nullptr, want.data());
  EXPECT_EQ(y, want);
  expect_error([&] { run(std::numeric_limits<float>::quiet_NaN(), 7); },
               ErrorCode::invalid_argument, "a_scale = nan");
  expect_error([&] { run(-1.0f, 7); }, ErrorCode::invalid_argument, "a_scale = -1");
  expect_error([&] { run(0.0f, 7); }, ErrorCode::invalid_argument, "expected a finite value > 0");
  expect_error([&] { run(0.5f, 256); }, ErrorCode::invalid_argument,
               "a_zero_point = 256 (A's params given at run); expected a value in the uint8 range "
               "[0, 255]");
  expect_error([&] { run(0.5f, -1); }, ErrorCode::invalid_argument, "a_zero_point = -1");
  // Per-row A has no single pair a run could bring: supports() says no, or plan() throws.
  MatmulDesc per_row = d;
  per_row.a = QuantizationParams::per_channel(DType::uint8, Mapping::affine, 0, {1.0f, 1.0f, 1.0f},
                                              {1, 2, 3});
  const OpDesc refused{OpKind::matmul_dequant, per_row};
  if (ops.supports(refused).supported)
    expect_error([&] { ops.plan(refused, {}); }, ErrorCode::invalid_argument, "per_tensor A");
}

TEST_P(Plans, BadRequestsAndRunsAreClearErrors) {
  QuantizationOps& ops = *target_.ops;
  const MatmulDesc d{.m = 3,
                     .n = 4,
                     .k = 5,
                     .a = QuantizationParams::per_tensor_affine(DType::uint8, 0.5f, 7),
                     .b = QuantizationParams::per_tensor_symmetric(DType::int8, 0.25f)};
  const OpDesc op{OpKind::matmul_integer, d};
  if (!ops.supports(op).supported) GTEST_SKIP() << ops.supports(op).reason;
  const std::vector<std::byte> a(15), b(20);
  expect_error([&] { ops.plan(op, {99, "", {}}); }, ErrorCode::invalid_argument, "device 99");
  expect_error(
      [&] {
        ops.plan(op, {0, "no_such_kernel", {}});
      },
      ErrorCode::unsupported, "no_such_kernel");
  expect_error(
      [&] {
        ops.plan(op, {0, "", {a.data(), nullptr}});
      },
      ErrorCode::invalid_argument, "not a weight");
  expect_error(
      [&] {
        ops.plan(op, {0, "", {nullptr}});
      },
      ErrorCode::invalid_argument, "one per input");
  MatmulDesc bad = d;
  bad.k = -1;
  try {
    ops.plan({OpKind::matmul_integer, bad}, {});
    ADD_FAILURE() << "plan() accepted K = -1";
  } catch (const Error& e) {
    // supports() refusing it (unsupported) or the reference's own check (shape_mismatch)
    EXPECT_NE(std::string(e.what()).find("-1"), std::string::npos) << e.what();
  }
  if (!ops.host_memory()) return;  // run() below passes host pointers
  const auto plan = ops.plan(op, {0, "", {nullptr, b.data()}});
  EXPECT_FALSE(plan->reads_input(1));
  EXPECT_TRUE(plan->reads_input(0));
  std::vector<std::int32_t> c(12);
  expect_error([&] { plan->run({a.data()}, {c.data()}); }, ErrorCode::invalid_argument,
               "got 1 inputs");
  expect_error(
      [&] {
        plan->run({nullptr, nullptr}, {c.data()});
      },
      ErrorCode::invalid_argument, "input 0 (a");
  expect_error(
      [&] {
        plan->run({a.data(), nullptr}, {nullptr});
      },
      ErrorCode::invalid_argument, "output 0 (c");
  plan->run({a.data(), nullptr}, {c.data()});  // the fixed B needs no pointer
}

INSTANTIATE_TEST_SUITE_P(Conformance, Plans, ::testing::ValuesIn(grid()), param_name<PlanParam>);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(Plans);

}  // namespace
}  // namespace qforge::conformance
