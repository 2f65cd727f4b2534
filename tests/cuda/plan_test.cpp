// Plans of the cuda plugin (docs/CUDA.md, "Plans"): for every op kind plans serve, a plan's
// output equals the per-call op's (bit for bit for integer outputs) on random descriptors and
// inputs, with weights given on each run or fixed when the plan is made; a plan keeps its
// device and kernel whatever the instance selects afterwards, and leaves the instance's
// selection alone; distinct plans (and one plan) run from several threads at once; fixed
// convolution weights are packed once, when the plan is made, not on each run.
#include "qforge/plan.h"

#include <dlfcn.h>

#include <cmath>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "qforge/error.h"
#include "qforge/op_table.h"
#include "support.h"

namespace qforge::cuda_test {
namespace {

using Bytes = std::vector<std::byte>;

bool is_conv(OpKind k) {
  return k == OpKind::conv_integer || k == OpKind::qlinear_conv || k == OpKind::conv_dequant;
}

// The per-call op on device pointers in op_operands() order.
void call(QuantizationOps& ops, const OpDesc& op, const std::vector<const void*>& in, void* out) {
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
    case OpKind::conv_integer:
    case OpKind::qlinear_conv:
    case OpKind::conv_dequant: {
      const auto& d = std::get<ConvDesc>(op.desc);
      ops.conv(op.op, d, in[0], in[1], d.bias != ConvBias::none ? in[2] : nullptr, out);
      return;
    }
    default: break;
  }
  FAIL() << "no per-call op for " << to_string(op.op) << " in this test";
}

// Float outputs of one kernel on the same inputs should agree to the last bit too; this allows
// for a reduction whose order could differ between launches, and nothing more.
::testing::AssertionResult close_floats(const Bytes& got, const Bytes& want) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure() << "size " << got.size() << " vs " << want.size();
  for (std::size_t i = 0; i + 4 <= got.size(); i += 4) {
    float g = 0, w = 0;
    std::memcpy(&g, got.data() + i, 4);
    std::memcpy(&w, want.data() + i, 4);
    if (std::isnan(g) && std::isnan(w)) continue;
    if (std::fabs(g - w) > 1e-6f * std::fmax(1.0f, std::fabs(w)))
      return ::testing::AssertionFailure()
             << "element " << i / 4 << ": got " << g << ", expected " << w;
  }
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult same_output(const OpDesc& op, const Bytes& got, const Bytes& want) {
  const OperandSpec& y = op_operands(op).outputs[0];
  if (y.comparison == Comparison::nmse) return close_floats(got, want);
  if (got == want) return ::testing::AssertionSuccess();
  std::size_t first = 0;
  while (first < got.size() && first < want.size() && got[first] == want[first]) ++first;
  return ::testing::AssertionFailure() << "outputs differ (integer output, expected bit for bit); "
                                       << "first differing byte " << first << " of " << want.size();
}

class CudaPlans : public CudaTest {
 protected:
  int uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  float pow2(float lo, float hi) {
    return std::exp2(std::uniform_real_distribution<float>(lo, hi)(rng_));
  }
  DType eight_bit() { return uniform(0, 1) ? DType::int8 : DType::uint8; }

  QuantizationParams params(DType t, bool per_channel, int axis, std::int64_t count) {
    const auto& tr = traits(t);
    const std::size_t c = per_channel ? static_cast<std::size_t>(count) : 1;
    std::vector<float> scales(c);
    std::vector<std::int32_t> zps(c);
    for (auto& s : scales) s = pow2(-9.0f, -3.0f);
    for (auto& z : zps) z = uniform(tr.qmin, tr.qmax);
    return per_channel ? QuantizationParams::per_channel(t, Mapping::affine, axis, scales, zps)
                       : QuantizationParams::per_tensor_affine(t, scales[0], zps[0]);
  }

  OpDesc random_quantize(OpKind kind) {
    const Shape shape = {uniform(1, 33), uniform(1, 300)};
    return {kind, QuantizeDesc{shape, params(eight_bit(), uniform(0, 1), 1, shape[1])}};
  }

  OpDesc random_requantize() {
    RequantizeDesc d;
    d.shape = {uniform(1, 20), uniform(1, 200)};
    d.multipliers.resize(uniform(0, 1) ? static_cast<std::size_t>(d.shape[1]) : 1);
    if (d.multipliers.size() > 1) d.axis = 1;
    for (auto& m : d.multipliers) m = pow2(-14.0f, -6.0f);
    d.out_dtype = eight_bit();
    d.out_zero_point = uniform(traits(d.out_dtype).qmin, traits(d.out_dtype).qmax);
    d.mode = uniform(0, 1) ? RequantMode::fixed_point : RequantMode::float_multiplier;
    return {OpKind::requantize, d};
  }

  OpDesc random_matmul(OpKind kind, bool blockwise) {
    MatmulDesc d{.m = uniform(1, 70),
                 .n = uniform(1, 150),
                 .k = uniform(1, 300),
                 .a = params(eight_bit(), false, 0, 1),
                 .b = params(DType::int8, false, 0, 1),
                 .b_layout = MatrixLayout::kn,
                 .has_bias = false,
                 .out_type = FloatType::f32,
                 .y = std::nullopt,
                 .requant_mode = RequantMode::float_multiplier};
    if (blockwise) {
      d.b_layout = MatrixLayout::nk;
      const DType tb = uniform(0, 1) ? DType::int4 : DType::int8;
      const std::size_t count = static_cast<std::size_t>(d.n * ((d.k + 31) / 32));
      std::vector<float> scales(count);
      for (auto& s : scales) s = pow2(-12.0f, -4.0f);
      d.b = QuantizationParams::blockwise(tb, Mapping::symmetric, 32, scales);
    } else {
      d.b_layout = uniform(0, 1) ? MatrixLayout::kn : MatrixLayout::nk;
      d.b = params(eight_bit(), uniform(0, 1), d.b_layout == MatrixLayout::kn ? 1 : 0, d.n);
    }
    if (kind == OpKind::matmul_dequant) d.has_bias = uniform(0, 1);
    if (kind == OpKind::qlinear_matmul) {
      const DType ty = eight_bit();
      const float sy =
          d.a.scale() * d.b.scales()[0] * std::sqrt(static_cast<float>(d.k)) * pow2(4.0f, 7.0f);
      d.y = QuantizationParams::per_tensor_affine(
          ty, sy, uniform(traits(ty).qmin + 10, traits(ty).qmax - 10));
      d.requant_mode = uniform(0, 1) ? RequantMode::fixed_point : RequantMode::float_multiplier;
    }
    return {kind, d};
  }

  OpDesc random_conv(OpKind kind, bool depthwise) {
    ConvDesc d;
    d.layout = uniform(0, 1) ? ConvLayout::nhwc : ConvLayout::nchw;
    d.n = uniform(1, 2);
    if (depthwise) {
      d.c = uniform(1, 24);
      d.groups = d.c;
      d.out_channels = d.c * uniform(1, 2);
    } else {
      d.groups = uniform(0, 2) == 0 ? 2 : 1;
      d.c = d.groups * (uniform(0, 1) ? 32 : uniform(1, 20));
      d.out_channels = d.groups * uniform(1, 40);
    }
    d.h = uniform(1, 12);
    d.w = uniform(1, 12);
    d.kernel_h = uniform(1, 3);
    d.kernel_w = uniform(1, 3);
    d.stride_h = uniform(1, 2);
    d.pad_top = uniform(0, 1);
    d.pad_left = uniform(0, 1);
    d.pad_bottom = uniform(0, 1);
    d.pad_right = uniform(0, 1);
    while (d.out_h() < 1) --d.kernel_h;
    while (d.out_w() < 1) --d.kernel_w;
    d.x_params = params(eight_bit(), false, 0, 1);
    d.w_params =
        params(uniform(0, 3) == 0 ? DType::uint8 : DType::int8, uniform(0, 1), 0, d.out_channels);
    if (kind == OpKind::qlinear_conv) {
      d.bias = uniform(0, 1) ? ConvBias::int32 : ConvBias::none;
      const DType ty = eight_bit();
      const float sy = d.x_params.scale() * d.w_params.scale(0) *
                       std::sqrt(static_cast<float>(d.reduction())) * pow2(3.0f, 6.0f);
      d.y_params = QuantizationParams::per_tensor_affine(
          ty, sy, uniform(traits(ty).qmin + 20, traits(ty).qmax - 20));
      d.requant_mode = uniform(0, 1) ? RequantMode::fixed_point : RequantMode::float_multiplier;
      d.activation = static_cast<ConvActivation>(uniform(0, 2));
    } else if (kind == OpKind::conv_dequant) {
      d.bias = static_cast<ConvBias>(uniform(0, 2));
      d.activation = static_cast<ConvActivation>(uniform(0, 2));
    }
    return {kind, d};
  }

  OpDesc random_op(OpKind kind) {
    switch (kind) {
      case OpKind::quantize:
      case OpKind::dequantize: return random_quantize(kind);
      case OpKind::requantize: return random_requantize();
      case OpKind::matmul_integer:
      case OpKind::matmul_dequant:
      case OpKind::qlinear_matmul:
        return random_matmul(kind, kind != OpKind::qlinear_matmul && uniform(0, 2) == 0);
      default: return random_conv(kind, uniform(0, 3) == 0);
    }
  }

  // Host inputs in op_operands() order: floats and int32 values in ranges the op handles
  // without overflow, codes as random bytes.
  std::vector<Bytes> random_inputs(const OpDesc& op) {
    const OpOperands operands = op_operands(op);
    std::vector<Bytes> in;
    for (std::size_t i = 0; i < operands.inputs.size(); ++i) {
      Bytes b(operands.inputs[i].bytes);
      const bool float_input =
          (op.op == OpKind::quantize && i == 0) || (op.op == OpKind::matmul_dequant && i == 2) ||
          (is_conv(op.op) && i == 2 && std::get<ConvDesc>(op.desc).bias == ConvBias::f32);
      const bool int_input =
          (op.op == OpKind::requantize && i == 0) ||
          (is_conv(op.op) && i == 2 && std::get<ConvDesc>(op.desc).bias == ConvBias::int32);
      for (std::size_t e = 0; e + 4 <= b.size() && (float_input || int_input); e += 4) {
        if (float_input) {
          const float v = std::uniform_real_distribution<float>(-4.0f, 4.0f)(rng_);
          std::memcpy(b.data() + e, &v, 4);
        } else {
          const std::int32_t v = uniform(-100000, 100000) / (is_conv(op.op) ? 20 : 1);
          std::memcpy(b.data() + e, &v, 4);
        }
      }
      if (!float_input && !int_input)
        for (auto& x : b) x = static_cast<std::byte>(uniform(0, 255));
      in.push_back(std::move(b));
    }
    return in;
  }
};

// Device copies of one op's inputs and an output array.
struct DeviceOperands {
  DeviceOperands(QuantizationOps& ops, const OpDesc& op, const std::vector<Bytes>& host) {
    for (const auto& h : host) {
      in.push_back(std::make_unique<DeviceArray>(ops, h.size()));
      in.back()->write(h.data(), h.size());
    }
    out = std::make_unique<DeviceArray>(ops, op_operands(op).outputs[0].bytes);
  }
  std::vector<const void*> inputs() const {
    std::vector<const void*> v;
    for (const auto& a : in) v.push_back(a->data());
    return v;
  }
  std::vector<std::unique_ptr<DeviceArray>> in;
  std::unique_ptr<DeviceArray> out;
};

// What the per-call op writes.
Bytes per_call(QuantizationOps& ops, const OpDesc& op, DeviceOperands& d) {
  d.out->poison(0xCD);
  call(ops, op, d.inputs(), d.out->data());
  return d.out->read();
}

// A plan run's output; weights the plan fixed are passed as null.
Bytes plan_run(const Plan& plan, DeviceOperands& d) {
  std::vector<const void*> in = d.inputs();
  for (std::size_t i = 0; i < in.size(); ++i)
    if (!plan.reads_input(i)) in[i] = nullptr;
  void* out = d.out->data();
  d.out->poison(0x3C);
  plan.run(std::span<const void* const>(in), std::span<void* const>(&out, 1));
  return d.out->read();
}

// Fixes every weight operand of `op` to the host bytes in `host`.
PlanRequest fixing_weights(const OpDesc& op, const std::vector<Bytes>& host, std::string kernel) {
  PlanRequest r;
  r.kernel = std::move(kernel);
  const OpOperands operands = op_operands(op);
  for (std::size_t i = 0; i < operands.inputs.size(); ++i)
    r.weights.push_back(operands.inputs[i].role == OperandRole::weight ? host[i].data() : nullptr);
  return r;
}

TEST_F(CudaPlans, EveryOpKindMatchesThePerCallOp) {
  for (const OpKind kind : {OpKind::quantize, OpKind::dequantize, OpKind::requantize,
                            OpKind::matmul_integer, OpKind::matmul_dequant, OpKind::qlinear_matmul,
                            OpKind::conv_integer, OpKind::qlinear_conv, OpKind::conv_dequant}) {
    int tested = 0;
    for (int i = 0; i < 8; ++i) {
      const OpDesc op = random_op(kind);
      SCOPED_TRACE(describe(op));
      const Support s = ops().supports(op);
      if (!s.supported) continue;
      ++tested;
      const auto host = random_inputs(op);
      DeviceOperands d(ops(), op, host);
      // The reference first, for integer outputs: the per-call op is the yardstick below.
      const OpOperands operands = op_operands(op);
      if (operands.outputs[0].comparison == Comparison::exact) {
        std::vector<const void*> hin;
        for (const auto& h : host) hin.push_back(h.data());
        Bytes ref(operands.outputs[0].bytes);
        void* hout = ref.data();
        op_info(kind).reference(op, hin.data(), &hout);
        EXPECT_TRUE(same_output(op, per_call(ops(), op, d), ref)) << "per-call op vs reference";
      }
      for (const auto& kernel : {std::string(), s.kernels.back()}) {
        SCOPED_TRACE("kernel '" + kernel + "'");
        const Bytes want = per_call(ops(), op, d);
        PlanRequest given;
        given.kernel = kernel;
        const auto plain = ops().plan(op, given);
        EXPECT_EQ(plain->kernel(), kernel.empty() ? s.kernels.front() : kernel);
        EXPECT_EQ(plain->backend(), "cuda");
        EXPECT_TRUE(same_output(op, plan_run(*plain, d), want)) << "weights given on each run";
        const auto fixed = ops().plan(op, fixing_weights(op, host, kernel));
        // Run twice: a plan's second run must not depend on state its first one left.
        EXPECT_TRUE(same_output(op, plan_run(*fixed, d), want)) << "weights fixed, first run";
        EXPECT_TRUE(same_output(op, plan_run(*fixed, d), want)) << "weights fixed, second run";
        EXPECT_TRUE(d.out->guards_intact());
      }
    }
    EXPECT_GT(tested, 0) << "no supported descriptor of " << to_string(kind);
  }
}

TEST_F(CudaPlans, PlanKeepsItsKernelAndDeviceBesideThePerCallOps) {
  // A matmul with several kernels, so that the plan's can differ from the per-call op's.
  OpDesc op = random_matmul(OpKind::matmul_integer, false);
  Support s = ops().supports(op);
  for (int i = 0; i < 50 && s.kernels.size() < 2; ++i) {
    op = random_matmul(OpKind::matmul_integer, false);
    s = ops().supports(op);
  }
  if (s.kernels.size() < 2) GTEST_SKIP() << "no matmul with two kernels on this device";
  SCOPED_TRACE(describe(op));
  const auto host = random_inputs(op);
  DeviceOperands d(ops(), op, host);
  const std::string plan_kernel = s.kernels.back();
  const Bytes want = per_call(ops(), op, d);  // integer output: every kernel gives these bits
  const int device = ops().default_device();
  PlanRequest request = fixing_weights(op, host, plan_kernel);
  request.device = device;
  const auto plan = ops().plan(op, request);
  EXPECT_TRUE(same_output(op, plan_run(*plan, d), want));
  // The per-call op (the plugin's own kernel) runs between the plan's runs.
  call(ops(), op, d.inputs(), d.out->data());
  EXPECT_TRUE(same_output(op, plan_run(*plan, d), want));
  EXPECT_EQ(plan->kernel(), plan_kernel);
  EXPECT_EQ(plan->device(), device);

  // With a second usable device: a plan made for it names that device. (Its operands would live
  // in that device's memory, which allocate() does not hand out: it serves the default device.)
  const int count = static_cast<int>(ops().devices().size());
  for (int i = 0; i < count; ++i)
    if (i != device && ops().supports(op, i).supported) {
      PlanRequest r2 = fixing_weights(op, host, {});
      r2.device = i;
      const auto plan2 = ops().plan(op, r2);
      EXPECT_EQ(plan2->device(), i);
      EXPECT_FALSE(plan2->kernel().empty());
    }
}

TEST_F(CudaPlans, DistinctPlansAndOnePlanRunFromSeveralThreads) {
  struct Job {
    OpDesc op;
    std::shared_ptr<const Plan> plan;
    std::unique_ptr<DeviceOperands> d;
    Bytes want;
    std::string error;
  };
  // Two matmuls, a convolution, and a second thread on the convolution's plan.
  std::vector<Job> jobs;
  jobs.push_back({random_matmul(OpKind::qlinear_matmul, false), {}, {}, {}, {}});
  jobs.push_back({random_matmul(OpKind::matmul_integer, uniform(0, 1)), {}, {}, {}, {}});
  jobs.push_back({random_conv(OpKind::qlinear_conv, false), {}, {}, {}, {}});
  jobs.push_back({jobs[2].op, {}, {}, {}, {}});
  for (std::size_t j = 0; j < 3; ++j) {
    Job& job = jobs[j];
    SCOPED_TRACE(describe(job.op));
    ASSERT_TRUE(ops().supports(job.op).supported) << ops().supports(job.op).reason;
    const auto host = random_inputs(job.op);
    job.d = std::make_unique<DeviceOperands>(ops(), job.op, host);
    job.want = per_call(ops(), job.op, *job.d);
    job.plan = ops().plan(job.op, fixing_weights(job.op, host, {}));
  }
  jobs[3].plan = jobs[2].plan;
  jobs[3].want = jobs[2].want;
  {
    std::vector<Bytes> host;  // the same inputs; the weights are the plan's
    for (const auto& a : jobs[2].d->in) {
      const auto raw = a->read();
      host.push_back(raw);
    }
    jobs[3].d = std::make_unique<DeviceOperands>(ops(), jobs[3].op, host);
  }
  for (auto& job : jobs) job.d->out->poison(0x11);

  // Each thread runs its plan many times into its own output; the instance is not touched.
  std::vector<std::thread> threads;
  for (auto& job : jobs)
    threads.emplace_back([&job] {
      try {
        std::vector<const void*> in = job.d->inputs();
        for (std::size_t i = 0; i < in.size(); ++i)
          if (!job.plan->reads_input(i)) in[i] = nullptr;
        void* out = job.d->out->data();
        for (int r = 0; r < 50; ++r)
          job.plan->run(std::span<const void* const>(in), std::span<void* const>(&out, 1));
      } catch (const std::exception& e) {
        job.error = e.what();
      }
    });
  for (auto& t : threads) t.join();
  // The reads below queue on the instance's blocking stream, which follows the plans' work on
  // the legacy default stream.
  for (auto& job : jobs) {
    SCOPED_TRACE(describe(job.op));
    EXPECT_EQ(job.error, "");
    EXPECT_TRUE(same_output(job.op, job.d->out->read(), job.want));
    EXPECT_TRUE(job.d->out->guards_intact());
  }
}

using PackCounter = std::uint64_t (*)();

TEST_F(CudaPlans, ConvolutionPlanPacksItsWeightsOnce) {
  void* lib = dlopen(plugin_path().c_str(), RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(lib, nullptr) << "the loaded plugin " << plugin_path()
                          << " was not found: " << dlerror();
  auto packs = reinterpret_cast<PackCounter>(dlsym(lib, "qforge_cuda_conv_weight_packs"));
  ASSERT_NE(packs, nullptr) << "the plugin exports no qforge_cuda_conv_weight_packs";
  // A grouped convolution (not depthwise), so that the implicit-GEMM kernel with packed
  // weights runs.
  OpDesc op = random_conv(OpKind::conv_integer, false);
  auto& cd = std::get<ConvDesc>(op.desc);
  cd.groups = 1;
  cd.c = 16;
  cd.out_channels = 24;
  cd.w_params = params(DType::int8, uniform(0, 1), 0, cd.out_channels);
  SCOPED_TRACE(describe(op));
  const Support s = ops().supports(op);
  ASSERT_TRUE(s.supported) << s.reason;
  ASSERT_NE(s.kernels.front(), "q8_conv_depthwise_direct_simt");
  const auto host = random_inputs(op);
  DeviceOperands d(ops(), op, host);

  const std::uint64_t before_call = packs();
  const Bytes want = per_call(ops(), op, d);
  EXPECT_EQ(packs(), before_call + 1) << "the per-call op packs its weights on each call";

  const std::uint64_t before_plan = packs();
  const auto plan = ops().plan(op, fixing_weights(op, host, {}));
  EXPECT_EQ(packs(), before_plan + 1) << "the plan packs its fixed weights when it is made";
  for (int r = 0; r < 3; ++r) EXPECT_TRUE(same_output(op, plan_run(*plan, d), want));
  EXPECT_EQ(packs(), before_plan + 1) << "a plan run packed the fixed weights again";

  // Without fixed weights there is nothing to pack ahead: each run packs what it is given.
  const auto plain = ops().plan(op, PlanRequest{});
  const std::uint64_t before_runs = packs();
  for (int r = 0; r < 2; ++r) EXPECT_TRUE(same_output(op, plan_run(*plain, d), want));
  EXPECT_EQ(packs(), before_runs + 2);
  dlclose(lib);
}

TEST_F(CudaPlans, RefusalsNameWhatWasWrong) {
  const OpDesc op = random_quantize(OpKind::quantize);
  PlanRequest bad_device;
  bad_device.device = static_cast<int>(ops().devices().size()) + 3;
  try {
    ops().plan(op, bad_device);
    ADD_FAILURE() << "a plan for a device that does not exist was made";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument) << e.what();
  }
  PlanRequest bad_kernel;
  bad_kernel.kernel = "no_such_kernel";
  try {
    ops().plan(op, bad_kernel);
    ADD_FAILURE() << "a plan with an unknown kernel was made";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::unsupported) << e.what();
    EXPECT_NE(std::string(e.what()).find("no_such_kernel"), std::string::npos) << e.what();
  }
  // A descriptor of another op's type (plan_params_test.cpp has the params ops' refusals).
  try {
    ops().plan({OpKind::quantize, DynamicQuantizeDesc{{4, 4}}}, PlanRequest{});
    ADD_FAILURE() << "a plan of quantize with a DynamicQuantizeDesc was made";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument) << e.what();
    EXPECT_NE(std::string(e.what()).find("descriptor type"), std::string::npos) << e.what();
  }
  // A null pointer where the plan reads an operand.
  const auto plan = ops().plan(op, PlanRequest{});
  DeviceArray y(ops(), op_operands(op).outputs[0].bytes);
  EXPECT_THROW(plan->run({nullptr}, {y.data()}), Error);
}

}  // namespace
}  // namespace qforge::cuda_test
