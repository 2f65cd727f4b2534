// The vulkan plugin's own plans (vulkan_plan.cpp): for every op kind it runs, a plan's outputs
// are the per-call op's byte for byte, with the weights passed on each run or fixed when the
// plan is made, for every kernel (the per-call op runs the backend's own kernel; every GEMM
// kernel accumulates in int32, so all give the same bits); plans of different kernels run side by
// side with the per-call ops; and plans (one plan on two threads) with a per-call op beside them
// run from several threads at once, each run on a stream of its own.
#include "qforge/plan.h"

#include <cstring>
#include <thread>

#include "qforge/error.h"
#include "qforge/op_table.h"
#include "test_data.h"
#include "vk_test_support.h"

namespace qforge::vktest {
namespace {

using PlanTest = VulkanTest;

int draw(Rng& rng, int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); }

QuantizationParams codes_params(Rng& rng, DType t, bool per_channel, int axis,
                                std::int64_t channels) {
  const std::size_t n = per_channel ? static_cast<std::size_t>(channels) : 1;
  std::vector<float> scales(n);
  std::vector<std::int32_t> zps(n);
  for (std::size_t i = 0; i < n; ++i) {
    scales[i] = random_scale(rng, -8, -3);
    zps[i] = t == DType::int8 ? draw(rng, -20, 20) : draw(rng, 100, 150);
  }
  return per_channel ? QuantizationParams::per_channel(t, Mapping::affine, axis, scales, zps)
                     : QuantizationParams::per_tensor_affine(t, scales[0], zps[0]);
}

DType code_type(Rng& rng) { return draw(rng, 0, 1) ? DType::int8 : DType::uint8; }

MatmulDesc random_matmul(Rng& rng, OpKind op) {
  const std::int64_t m = draw(rng, 1, 70), n = draw(rng, 1, 90), k = draw(rng, 1, 150);
  const MatrixLayout layout = draw(rng, 0, 1) ? MatrixLayout::kn : MatrixLayout::nk;
  MatmulDesc d = make_matmul(
      m, n, k, codes_params(rng, code_type(rng), false, 0, m),
      codes_params(rng, code_type(rng), draw(rng, 0, 1), layout == MatrixLayout::kn ? 1 : 0, n),
      layout);
  d.has_bias = op == OpKind::matmul_dequant && draw(rng, 0, 1);
  if (op == OpKind::qlinear_matmul) {
    d.y = codes_params(rng, code_type(rng), false, 0, 1);
    d.requant_mode = draw(rng, 0, 1) ? RequantMode::fixed_point : RequantMode::float_multiplier;
  }
  return d;
}

ConvDesc random_conv(Rng& rng, OpKind op) {
  ConvDesc d;
  d.layout = draw(rng, 0, 1) ? ConvLayout::nhwc : ConvLayout::nchw;
  d.groups = draw(rng, 1, 2);
  d.n = draw(rng, 1, 2);
  d.c = d.groups * draw(rng, 1, 4);
  d.out_channels = d.groups * draw(rng, 1, 4);
  d.h = draw(rng, 4, 9);
  d.w = draw(rng, 4, 9);
  d.kernel_h = draw(rng, 1, 3);
  d.kernel_w = draw(rng, 1, 3);
  d.stride_w = draw(rng, 1, 2);
  d.pad_left = draw(rng, 0, 1);
  d.x_params = codes_params(rng, code_type(rng), false, 0, 1);
  d.w_params = codes_params(rng, code_type(rng), true, 0, d.out_channels);
  if (op == OpKind::qlinear_conv) {
    d.y_params = codes_params(rng, DType::uint8, false, 0, 1);
    d.bias = draw(rng, 0, 1) ? ConvBias::int32 : ConvBias::none;
  } else if (op == OpKind::conv_dequant) {
    d.bias = draw(rng, 0, 1) ? ConvBias::f32 : ConvBias::int32;
  }
  return d;
}

// A random descriptor of `op` that the vulkan backend runs.
OpDesc random_op(Rng& rng, OpKind op) {
  switch (op) {
    case OpKind::quantize:
    case OpKind::dequantize: {
      const Shape shape{draw(rng, 1, 7), draw(rng, 1, 300)};
      return {op,
              QuantizeDesc{shape, codes_params(rng, code_type(rng), draw(rng, 0, 1), 0, shape[0])}};
    }
    case OpKind::requantize: {
      RequantizeDesc d;
      d.shape = {draw(rng, 1, 5), draw(rng, 1, 400)};
      d.axis = 0;
      d.multipliers.resize(draw(rng, 0, 1) ? static_cast<std::size_t>(d.shape[0]) : 1);
      for (auto& m : d.multipliers) m = random_scale(rng, -12, -4);
      d.out_dtype = code_type(rng);
      d.out_zero_point = d.out_dtype == DType::int8 ? draw(rng, -5, 5) : draw(rng, 120, 130);
      d.mode = draw(rng, 0, 1) ? RequantMode::fixed_point : RequantMode::float_multiplier;
      return {op, d};
    }
    case OpKind::matmul_integer:
    case OpKind::matmul_dequant:
    case OpKind::qlinear_matmul: return {op, random_matmul(rng, op)};
    default: return {op, random_conv(rng, op)};
  }
}

// Host bytes for an input: codes anywhere in their range; float32 activations and biases of a
// moderate size; int32 accumulators and biases small enough that no sum leaves int32.
std::vector<std::uint8_t> random_input(Rng& rng, const OpDesc& op, const OperandSpec& o) {
  std::vector<std::uint8_t> bytes(o.bytes);
  const bool wide = o.bytes == o.count * 4 && o.count > 0;
  const bool ints = op.op == OpKind::requantize ||
                    (o.name == "bias" && std::holds_alternative<ConvDesc>(op.desc) &&
                     std::get<ConvDesc>(op.desc).bias == ConvBias::int32);
  for (std::size_t i = 0; i < (wide ? o.count : o.bytes); ++i) {
    if (!wide) {
      bytes[i] = static_cast<std::uint8_t>(draw(rng, 0, 255));
    } else if (ints) {
      const std::int32_t v = draw(rng, -(1 << 20), 1 << 20);
      std::memcpy(&bytes[i * 4], &v, 4);
    } else {
      const float v = std::normal_distribution<float>(0.0f, 3.0f)(rng);
      std::memcpy(&bytes[i * 4], &v, 4);
    }
  }
  return bytes;
}

// The per-call op on device pointers, in op_operands() order.
void call(QuantizationOps& ops, const OpDesc& op, const std::vector<void*>& in, void* out) {
  switch (op.op) {
    case OpKind::quantize: ops.quantize(std::get<QuantizeDesc>(op.desc), in[0], out); return;
    case OpKind::dequantize:
      ops.dequantize(std::get<QuantizeDesc>(op.desc), in[0], static_cast<float*>(out));
      return;
    case OpKind::requantize:
      ops.requantize(std::get<RequantizeDesc>(op.desc), static_cast<const std::int32_t*>(in[0]),
                     out);
      return;
    case OpKind::matmul_integer:
      ops.matmul_integer(std::get<MatmulDesc>(op.desc), in[0], in[1],
                         static_cast<std::int32_t*>(out));
      return;
    case OpKind::matmul_dequant: {
      const auto& d = std::get<MatmulDesc>(op.desc);
      ops.matmul_dequant(d, in[0], in[1], d.has_bias ? static_cast<const float*>(in[2]) : nullptr,
                         out);
      return;
    }
    case OpKind::qlinear_matmul:
      ops.qlinear_matmul(std::get<MatmulDesc>(op.desc), in[0], in[1], out);
      return;
    default: {
      const auto& d = std::get<ConvDesc>(op.desc);
      ops.conv(op.op, d, in[0], in[1], d.bias != ConvBias::none ? in[2] : nullptr, out);
    }
  }
}

// One op with its inputs on the device and room for its output.
struct Case {
  OpDesc op;
  OpOperands operands;
  std::vector<std::vector<std::uint8_t>> host_in;
  std::vector<std::unique_ptr<DeviceArray>> in;
  std::unique_ptr<DeviceArray> out;

  Case(QuantizationOps& ops, Rng& rng, OpDesc d) : op(std::move(d)), operands(op_operands(op)) {
    for (const auto& o : operands.inputs) {
      host_in.push_back(random_input(rng, op, o));
      in.push_back(std::make_unique<DeviceArray>(ops, host_in.back(), draw(rng, 0, 3) * 4));
    }
    out = std::make_unique<DeviceArray>(ops, operands.outputs.at(0).bytes);
  }
  std::vector<void*> ptrs() const {
    std::vector<void*> p;
    for (const auto& a : in) p.push_back(a->ptr());
    return p;
  }
  // The weights of op_operands() fixed from the host copies (PlanRequest::weights).
  std::vector<const void*> weights() const {
    std::vector<const void*> w(operands.inputs.size(), nullptr);
    for (std::size_t i = 0; i < w.size(); ++i)
      if (operands.inputs[i].role == OperandRole::weight) w[i] = host_in[i].data();
    return w;
  }
  // Runs `plan`, passing only the inputs it reads; returns the output bytes.
  std::vector<std::uint8_t> run(const Plan& plan) {
    out->fill(0xCD);
    std::vector<const void*> p;
    for (std::size_t i = 0; i < in.size(); ++i)
      p.push_back(plan.reads_input(i) ? in[i]->ptr() : nullptr);
    void* o = out->ptr();
    plan.run(p, std::span<void* const>(&o, 1));
    return out->read<std::uint8_t>();
  }
  std::vector<std::uint8_t> run_call(QuantizationOps& ops) {
    out->fill(0xCD);
    call(ops, op, ptrs(), out->ptr());
    return out->read<std::uint8_t>();
  }
};

constexpr OpKind kKinds[] = {OpKind::quantize,       OpKind::dequantize,     OpKind::requantize,
                             OpKind::matmul_integer, OpKind::matmul_dequant, OpKind::qlinear_matmul,
                             OpKind::conv_integer,   OpKind::qlinear_conv,   OpKind::conv_dequant};

TEST_F(PlanTest, EveryOpKindMatchesThePerCallOp) {
  for (OpKind kind : kKinds)
    for (int repeat = 0; repeat < 3; ++repeat) {
      Case c(ops(), rng(), random_op(rng(), kind));
      SCOPED_TRACE(describe(c.op));
      const Support s = ops().supports(c.op);
      ASSERT_TRUE(s.supported) << s.reason;
      const auto want = c.run_call(ops());
      for (const auto& kernel : s.kernels) {
        SCOPED_TRACE("kernel " + kernel);
        for (const bool fix : {false, true}) {
          SCOPED_TRACE(fix ? "weights fixed" : "weights passed");
          const auto plan = ops().plan(c.op, {ops().default_device(), kernel,
                                              fix ? c.weights() : std::vector<const void*>{}});
          EXPECT_EQ(plan->kernel(), kernel);
          EXPECT_EQ(plan->concurrency(), PlanConcurrency::concurrent);
          EXPECT_EQ(c.run(*plan), want);
          EXPECT_EQ(c.run(*plan), want) << "second run";
        }
      }
    }
}

TEST_F(PlanTest, PlansOfDifferentKernelsRunBesideThePerCallOp) {
  const OpDesc op = random_op(rng(), OpKind::matmul_integer);
  Case c(ops(), rng(), op);
  SCOPED_TRACE(describe(op));
  const auto kernels = ops().supports(op).kernels;
  ASSERT_FALSE(kernels.empty());
  const std::string mine = kernels.back(), other = kernels.front();
  const auto plan = ops().plan(op, {ops().default_device(), mine, c.weights()});
  const auto want = c.run(*plan);
  const auto second = ops().plan(op, {ops().default_device(), other, {}});
  const auto by_call = c.run_call(ops());
  EXPECT_EQ(c.run(*second), want);  // integer outputs: every kernel gives the same bits
  EXPECT_EQ(c.run(*plan), want);
  EXPECT_EQ(by_call, want);
  EXPECT_EQ(plan->kernel(), mine);
  EXPECT_EQ(second->kernel(), other);
}

TEST_F(PlanTest, PlansAndPerCallOpsRunFromSeveralThreads) {
  std::vector<std::unique_ptr<Case>> cases;
  std::vector<std::shared_ptr<const Plan>> plans;
  std::vector<std::vector<std::uint8_t>> want;
  for (OpKind kind : {OpKind::qlinear_matmul, OpKind::conv_integer, OpKind::quantize}) {
    cases.push_back(std::make_unique<Case>(ops(), rng(), random_op(rng(), kind)));
    want.push_back(cases.back()->run_call(ops()));
    plans.push_back(
        ops().plan(cases.back()->op, {ops().default_device(), "", cases.back()->weights()}));
  }
  // The first plan once more on operands of its own but the same (fixed) weights: one plan run
  // from two threads at once.
  cases.push_back(std::make_unique<Case>(ops(), rng(), cases.front()->op));
  for (std::size_t i = 0; i < cases.back()->operands.inputs.size(); ++i)
    if (cases.back()->operands.inputs[i].role == OperandRole::weight) {
      cases.back()->host_in[i] = cases.front()->host_in[i];
      cases.back()->in[i]->write(cases.back()->host_in[i].data(), cases.back()->host_in[i].size());
    }
  want.push_back(cases.back()->run_call(ops()));
  plans.push_back(plans.front());
  // The per-call op shares the device with the plans: a thread of its own calls it.
  Case percall(ops(), rng(), random_op(rng(), OpKind::dequantize));
  const auto want_percall = percall.run_call(ops());
  std::vector<std::string> errors(cases.size() + 1);
  std::vector<int> mismatches(cases.size() + 1, 0);
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t <= cases.size(); ++t)
    threads.emplace_back([&, t] {
      try {
        for (int run = 0; run < 15; ++run) {
          const auto got = t < cases.size() ? cases[t]->run(*plans[t]) : percall.run_call(ops());
          if (got != (t < cases.size() ? want[t] : want_percall)) ++mismatches[t];
        }
      } catch (const std::exception& e) {
        errors[t] = e.what();
      }
    });
  for (auto& th : threads) th.join();
  for (std::size_t t = 0; t <= cases.size(); ++t) {
    EXPECT_EQ(errors[t], "") << "thread " << t;
    EXPECT_EQ(mismatches[t], 0) << "thread " << t;
  }
}

TEST_F(PlanTest, BadRequestsAreClearErrors) {
  const OpDesc op = random_op(rng(), OpKind::quantize);
  try {
    ops().plan(op, {0, "vk_no_such_kernel", {}});
    ADD_FAILURE() << "an unknown kernel was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::unsupported);
    EXPECT_NE(std::string(e.what()).find("vk_no_such_kernel"), std::string::npos) << e.what();
  }
  try {
    ops().plan(op, {0, "vk_gemm_q8_s32acc_plain_64x64", {}});
    ADD_FAILURE() << "a GEMM kernel was accepted for quantize";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::unsupported);
    EXPECT_NE(std::string(e.what()).find("cannot run"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace qforge::vktest
