// Plans of the ops that read or compute params (docs/CUDA.md, "Plans"): dynamic_quantize_linear,
// linear_forward and linear_backward, whose params operands are host pointers on every device
// (op_table.h, host_resident). Through cuda plans (arrays in device memory, params on the host,
// weights passed or fixed, the automatic and the last-listed kernel) and through the accelerator
// on host data (a staged plan: arrays copied, params passed through), against the reference:
// codes, params and linear_forward's Y bit for bit (docs/CUDA.md: the same quantization and
// epilogue order), linear_backward's float32 sums within the op table's NMSE bound.
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "qforge/accelerator.h"
#include "qforge/error.h"
#include "qforge/op_table.h"
#include "qforge/plan.h"
#include "qforge/reference.h"
#include "support.h"

namespace qforge::cuda_test {
namespace {

using Bytes = std::vector<std::byte>;

constexpr OpKind kKinds[] = {OpKind::dynamic_quantize_linear, OpKind::linear_forward,
                             OpKind::linear_backward};

double nmse(const Bytes& got, const Bytes& want) {
  double num = 0.0, den = 0.0;
  for (std::size_t i = 0; i + 4 <= want.size(); i += 4) {
    float g = 0, w = 0;
    std::memcpy(&g, got.data() + i, 4);
    std::memcpy(&w, want.data() + i, 4);
    const double d = static_cast<double>(g) - w;
    num += d * d;
    den += static_cast<double>(w) * w;
  }
  return den == 0.0 ? num : num / den;
}

// Every output of `op` against the reference's: linear_backward's float32 sums within the op
// table's NMSE bound (the reference sums in double), everything else bit for bit.
::testing::AssertionResult same_outputs(const OpDesc& op, const std::vector<Bytes>& got,
                                        const std::vector<Bytes>& want) {
  const OpOperands operands = op_operands(op);
  for (std::size_t i = 0; i < operands.outputs.size(); ++i) {
    const OperandSpec& o = operands.outputs[i];
    if (got[i].size() != want[i].size())
      return ::testing::AssertionFailure() << "output " << o.name << ": " << got[i].size()
                                           << " bytes, expected " << want[i].size();
    if (op.op == OpKind::linear_backward) {
      const double e = nmse(got[i], want[i]);
      if (e > o.tolerance)
        return ::testing::AssertionFailure()
               << "output " << o.name << ": NMSE " << e << " exceeds " << o.tolerance;
      continue;
    }
    if (got[i] != want[i]) {
      std::size_t first = 0;
      while (got[i][first] == want[i][first]) ++first;
      return ::testing::AssertionFailure()
             << "output " << o.name << " differs (expected bit for bit); first differing byte "
             << first << " of " << want[i].size();
    }
  }
  return ::testing::AssertionSuccess();
}

class CudaParamsPlans : public CudaTest {
 protected:
  int uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }

  OpDesc random_op(OpKind kind) {
    if (kind == OpKind::dynamic_quantize_linear)
      return {kind, DynamicQuantizeDesc{{uniform(1, 33), uniform(1, 300)}}};
    const std::int64_t m = uniform(1, 70), n = uniform(1, 150), k = uniform(1, 300);
    std::vector<float> scales(uniform(0, 1) ? static_cast<std::size_t>(n) : 1);
    for (auto& s : scales) s = std::exp2(std::uniform_real_distribution<float>(-9.0f, -3.0f)(rng_));
    return {kind,
            LinearDesc{.m = m,
                       .n = n,
                       .k = k,
                       .w = scales.size() > 1
                                ? QuantizationParams::per_channel(DType::int8, Mapping::symmetric,
                                                                  0, scales)
                                : QuantizationParams::per_tensor_symmetric(DType::int8, scales[0]),
                       .has_bias = uniform(0, 1) == 1}};
  }

  // Host inputs in op_operands() order: int8 codes for xq and wq, a positive activation scale,
  // normal floats for the rest.
  std::vector<Bytes> random_inputs(const OpDesc& op) {
    std::normal_distribution<float> normal(0.0f, 2.0f);
    std::vector<Bytes> in;
    for (const auto& o : op_operands(op).inputs) {
      Bytes b(o.bytes);
      for (std::size_t i = 0; i < o.count; ++i) {
        if (o.name == "xq" || o.name == "wq") {
          b[i] = static_cast<std::byte>(static_cast<std::int8_t>(uniform(-127, 127)));
          continue;
        }
        const float v =
            o.name == "x_scale" ? std::exp2(static_cast<float>(uniform(-9, -4))) : normal(rng_);
        std::memcpy(b.data() + i * sizeof v, &v, sizeof v);
      }
      in.push_back(std::move(b));
    }
    return in;
  }
};

std::vector<Bytes> reference_outputs(const OpDesc& op, const std::vector<Bytes>& in) {
  const OpOperands operands = op_operands(op);
  std::vector<Bytes> out;
  for (const auto& o : operands.outputs) out.emplace_back(o.bytes, std::byte{0xEE});
  std::vector<const void*> pin;
  std::vector<void*> pout;
  for (const auto& b : in) pin.push_back(b.data());
  for (auto& b : out) pout.push_back(b.data());
  run_reference(op, pin.data(), pout.data());
  return out;
}

// One plan run: arrays in device memory, params in host memory, outputs poisoned first.
std::vector<Bytes> run_on_device(QuantizationOps& ops, const Plan& plan,
                                 const std::vector<Bytes>& host) {
  const OpOperands operands = op_operands(plan.desc());
  std::vector<std::unique_ptr<DeviceArray>> arrays;
  std::vector<const void*> in;
  for (std::size_t i = 0; i < host.size(); ++i) {
    if (!plan.reads_input(i)) {
      in.push_back(nullptr);
    } else if (operands.inputs[i].host_resident) {
      in.push_back(host[i].data());
    } else {
      arrays.push_back(std::make_unique<DeviceArray>(ops, host[i].size()));
      arrays.back()->write(host[i].data(), host[i].size());
      in.push_back(arrays.back()->data());
    }
  }
  std::vector<Bytes> got;
  std::vector<std::unique_ptr<DeviceArray>> device_out;
  std::vector<void*> out;
  for (const auto& o : operands.outputs) {
    got.emplace_back(o.bytes, std::byte{0x5A});
    if (o.host_resident) {
      device_out.push_back(nullptr);
      out.push_back(got.back().data());
      continue;
    }
    device_out.push_back(std::make_unique<DeviceArray>(ops, o.bytes));
    device_out.back()->poison(0x5A);
    out.push_back(device_out.back()->data());
  }
  plan.run(std::span<const void* const>(in), std::span<void* const>(out));
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (!device_out[i]) continue;
    got[i] = device_out[i]->read();
    EXPECT_TRUE(device_out[i]->guards_intact()) << operands.outputs[i].name;
  }
  return got;
}

TEST_F(CudaParamsPlans, PlansMatchTheReference) {
  for (const OpKind kind : kKinds)
    for (int i = 0; i < 6; ++i) {
      const OpDesc op = random_op(kind);
      SCOPED_TRACE(describe(op));
      const Support s = ops().supports(op);
      ASSERT_TRUE(s.supported) << s.reason;
      const auto host = random_inputs(op);
      const auto want = reference_outputs(op, host);
      const OpOperands operands = op_operands(op);
      for (const auto& kernel : {std::string(), s.kernels.back()})
        for (const bool fix : {false, true}) {
          SCOPED_TRACE("kernel '" + kernel + "'" + (fix ? ", weights fixed" : ""));
          PlanRequest request;
          request.kernel = kernel;
          if (fix)
            for (std::size_t j = 0; j < operands.inputs.size(); ++j)
              request.weights.push_back(
                  operands.inputs[j].role == OperandRole::weight ? host[j].data() : nullptr);
          const auto plan = ops().plan(op, request);
          EXPECT_EQ(plan->kernel(), kernel.empty() ? s.kernels.front() : kernel);
          // Twice: a run must not depend on state the previous one left.
          EXPECT_TRUE(same_outputs(op, run_on_device(ops(), *plan, host), want)) << "first run";
          EXPECT_TRUE(same_outputs(op, run_on_device(ops(), *plan, host), want)) << "second run";
        }
    }
}

TEST_F(CudaParamsPlans, PlansRefuseWhatThePerCallOpsRefuse) {
  // A non-finite X has no per-tensor scale: the run throws, naming the element, as the per-call
  // op does.
  OpDesc op = random_op(OpKind::linear_forward);
  auto host = random_inputs(op);
  const float inf = INFINITY;
  std::memcpy(host[0].data(), &inf, sizeof inf);
  const auto plan = ops().plan(op, PlanRequest{});
  try {
    run_on_device(ops(), *plan, host);
    ADD_FAILURE() << "linear_forward ran on an infinite x";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument) << e.what();
    EXPECT_NE(std::string(e.what()).find("x[0]"), std::string::npos) << e.what();
  }
  // A plan is not made of weight params the op does not define.
  auto d = std::get<LinearDesc>(op.desc);
  d.w = QuantizationParams::per_tensor_affine(DType::uint8, 0.5f, 3);
  try {
    ops().plan({OpKind::linear_backward, d}, PlanRequest{});
    ADD_FAILURE() << "a plan with uint8 affine weight params was made";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument) << e.what();
    EXPECT_NE(std::string(e.what()).find("weight params"), std::string::npos) << e.what();
  }
}

// The accelerator over the cuda plugin alone, measuring with a small budget and no cache file.
AcceleratorOptions cuda_only() {
  AcceleratorOptions o;
  o.policy.plugins = {"cuda"};
  o.use_cache = false;
  o.budget.per_workload_s = 1.0;
  o.budget.total_s = 30.0;
  o.sample_seconds = 0.0005;
  return o;
}

TEST_F(CudaParamsPlans, TheAcceleratorRunsThemOnHostData) {
  Accelerator acc(plugin_registry(), cuda_only());
  for (const OpKind kind : kKinds)
    for (int i = 0; i < 3; ++i) {
      const OpDesc op = random_op(kind);
      SCOPED_TRACE(describe(op));
      const auto host = random_inputs(op);
      const auto want = reference_outputs(op, host);
      const OpOperands operands = op_operands(op);
      std::vector<Bytes> got;
      for (const auto& o : operands.outputs) got.emplace_back(o.bytes, std::byte{0x5A});
      auto f32 = [](const Bytes& b) { return reinterpret_cast<const float*>(b.data()); };
      auto f32_out = [](Bytes& b) { return reinterpret_cast<float*>(b.data()); };
      auto s8 = [](const Bytes& b) { return reinterpret_cast<const std::int8_t*>(b.data()); };
      // The per-call op: params returned or given as QuantizationParams.
      if (kind == OpKind::dynamic_quantize_linear) {
        const QuantizationParams p =
            acc.dynamic_quantize_linear(std::get<DynamicQuantizeDesc>(op.desc), f32(host[0]),
                                        reinterpret_cast<std::uint8_t*>(got[0].data()));
        const float scale = p.scale();
        std::memcpy(got[1].data(), &scale, sizeof scale);
        got[2][0] = static_cast<std::byte>(p.zero_point());
      } else if (kind == OpKind::linear_forward) {
        const auto& d = std::get<LinearDesc>(op.desc);
        const QuantizationParams p =
            acc.linear_forward(d, f32(host[0]), s8(host[1]), d.has_bias ? f32(host[2]) : nullptr,
                               reinterpret_cast<std::int8_t*>(got[0].data()), f32_out(got[1]));
        const float scale = p.scale();
        std::memcpy(got[2].data(), &scale, sizeof scale);
      } else {
        const auto& d = std::get<LinearDesc>(op.desc);
        float scale = 0;
        std::memcpy(&scale, host[2].data(), sizeof scale);
        acc.linear_backward(d, f32(host[0]), s8(host[1]),
                            QuantizationParams::per_tensor_symmetric(DType::int8, scale),
                            s8(host[3]), f32_out(got[0]), f32_out(got[1]),
                            d.has_bias ? f32_out(got[2]) : nullptr);
      }
      EXPECT_TRUE(same_outputs(op, got, want)) << "per-call op";
      // Verified and chosen: the probes ran the cuda plan with params on the host.
      EXPECT_EQ(acc.decide({op, Residency::host}).id.plugin, "cuda");

      // A prepared plan on host data, weights fixed.
      std::vector<const void*> weights;
      for (std::size_t j = 0; j < operands.inputs.size(); ++j)
        weights.push_back(operands.inputs[j].role == OperandRole::weight ? host[j].data()
                                                                         : nullptr);
      const auto plan = acc.prepare({op, Residency::host}, weights);
      EXPECT_EQ(plan->backend(), "cuda");
      std::vector<const void*> in;
      for (std::size_t j = 0; j < host.size(); ++j)
        in.push_back(plan->reads_input(j) ? host[j].data() : nullptr);
      std::vector<Bytes> staged;
      std::vector<void*> out;
      for (const auto& o : operands.outputs) staged.emplace_back(o.bytes, std::byte{0x5A});
      for (auto& b : staged) out.push_back(b.data());
      plan->run(std::span<const void* const>(in), std::span<void* const>(out));
      EXPECT_TRUE(same_outputs(op, staged, want)) << "prepared plan";
    }
}

}  // namespace
}  // namespace qforge::cuda_test
