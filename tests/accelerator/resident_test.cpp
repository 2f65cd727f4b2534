// Operands the op table marks host_resident (the params dynamic_quantize_linear and
// linear_forward compute, linear_backward's activation scale) stay in host memory when a device
// plugin runs the op: probes, timing, staged plans for host data and plans for device data
// pass the arrays in device memory and the params in host memory. acc_resident
// (fixtures/resident_ops.cpp) throws on an operand in the wrong memory and otherwise computes
// with the reference, so its results must equal the reference's bit for bit.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "qforge/op_table.h"
#include "qforge/reference.h"
#include "support.h"

namespace {

using namespace qforge;
using Bytes = std::vector<std::byte>;

struct Arrays {
  std::vector<Bytes> in, out;
};

OpDesc random_op(std::mt19937_64& rng, OpKind kind) {
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  if (kind == OpKind::dynamic_quantize_linear)
    return {kind, DynamicQuantizeDesc{{uniform(1, 9), uniform(1, 70)}}};
  const std::int64_t m = uniform(1, 9), n = uniform(1, 20), k = uniform(1, 40);
  std::vector<float> scales(uniform(0, 1) ? static_cast<std::size_t>(n) : 1);
  for (auto& s : scales) s = std::ldexp(1.0f, uniform(-9, -4));
  return {kind, LinearDesc{.m = m,
                           .n = n,
                           .k = k,
                           .w = scales.size() > 1 ? QuantizationParams::per_channel(
                                                        DType::int8, Mapping::symmetric, 0, scales)
                                                  : QuantizationParams::per_tensor_symmetric(
                                                        DType::int8, scales[0]),
                           .has_bias = uniform(0, 1) == 1}};
}

// Inputs of the op table's operands: int8 codes for xq and wq, a positive activation scale,
// normal floats for the rest; outputs poisoned.
Arrays random_arrays(std::mt19937_64& rng, const OpDesc& op) {
  const OpOperands operands = op_operands(op);
  Arrays r;
  std::normal_distribution<float> normal(0.0f, 2.0f);
  std::uniform_int_distribution<int> code(-127, 127);
  for (const auto& o : operands.inputs) {
    Bytes b(o.bytes);
    for (std::size_t i = 0; i < o.count; ++i) {
      if (o.name == "xq" || o.name == "wq") {
        b[i] = static_cast<std::byte>(static_cast<std::int8_t>(code(rng)));
        continue;
      }
      const float v = o.name == "x_scale" ? 0.03125f : normal(rng);
      std::memcpy(b.data() + i * sizeof v, &v, sizeof v);
    }
    r.in.push_back(std::move(b));
  }
  for (const auto& o : operands.outputs) r.out.emplace_back(o.bytes, std::byte{0xA5});
  return r;
}

std::vector<const void*> pointers(const std::vector<Bytes>& v) {
  std::vector<const void*> p;
  for (const auto& a : v) p.push_back(a.data());
  return p;
}
std::vector<void*> pointers(std::vector<Bytes>& v) {
  std::vector<void*> p;
  for (auto& a : v) p.push_back(a.data());
  return p;
}

// The reference's outputs for `data`'s inputs.
std::vector<Bytes> reference_outputs(const OpDesc& op, Arrays data) {
  run_reference(op, pointers(data.in).data(), pointers(data.out).data());
  return data.out;
}

// The per-call op of the accelerator on the op table's arrays; the params it returns or takes
// are written to or read from their one-element arrays.
void call(Accelerator& acc, const OpDesc& op, Arrays& a) {
  switch (op.op) {
    case OpKind::dynamic_quantize_linear: {
      const QuantizationParams p = acc.dynamic_quantize_linear(
          std::get<DynamicQuantizeDesc>(op.desc), reinterpret_cast<const float*>(a.in[0].data()),
          reinterpret_cast<std::uint8_t*>(a.out[0].data()));
      const float s = p.scale();
      std::memcpy(a.out[1].data(), &s, sizeof s);
      a.out[2][0] = static_cast<std::byte>(p.zero_point());
      return;
    }
    case OpKind::linear_forward: {
      const auto& d = std::get<LinearDesc>(op.desc);
      const QuantizationParams p =
          acc.linear_forward(d, reinterpret_cast<const float*>(a.in[0].data()),
                             reinterpret_cast<const std::int8_t*>(a.in[1].data()),
                             d.has_bias ? reinterpret_cast<const float*>(a.in[2].data()) : nullptr,
                             reinterpret_cast<std::int8_t*>(a.out[0].data()),
                             reinterpret_cast<float*>(a.out[1].data()));
      const float s = p.scale();
      std::memcpy(a.out[2].data(), &s, sizeof s);
      return;
    }
    default: {
      const auto& d = std::get<LinearDesc>(op.desc);
      float s = 0;
      std::memcpy(&s, a.in[2].data(), sizeof s);
      acc.linear_backward(d, reinterpret_cast<const float*>(a.in[0].data()),
                          reinterpret_cast<const std::int8_t*>(a.in[1].data()),
                          QuantizationParams::per_tensor_symmetric(DType::int8, s),
                          reinterpret_cast<const std::int8_t*>(a.in[3].data()),
                          reinterpret_cast<float*>(a.out[0].data()),
                          reinterpret_cast<float*>(a.out[1].data()),
                          d.has_bias ? reinterpret_cast<float*>(a.out[2].data()) : nullptr);
    }
  }
}

constexpr OpKind kKinds[] = {OpKind::dynamic_quantize_linear, OpKind::linear_forward,
                             OpKind::linear_backward};

AcceleratorOptions resident_wins() {
  auto o = acc_test::options(acc_test::scratch_dir("c") / "t.json");
  o.test_hooks = acc_test::injected({{"acc_resident[0]/only", 1e-6}});
  return o;
}

TEST(HostResidentOperands, PerCallOpsOnHostDataRunADevicePluginsPlan) {
  const auto seed = acc_test::test_seed();
  SCOPED_TRACE("QFORGE_TEST_SEED=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  Accelerator acc(acc_test::plugins({"cpu_scalar", "acc_resident"}), resident_wins());
  for (const OpKind kind : kKinds)
    for (int i = 0; i < 3; ++i) {
      const OpDesc op = random_op(rng, kind);
      SCOPED_TRACE(describe(op));
      Arrays a = random_arrays(rng, op);
      const auto want = reference_outputs(op, a);
      call(acc, op, a);
      EXPECT_EQ(a.out, want);
      // Verified on its probes (arrays on the device, params on the host) and chosen.
      EXPECT_EQ(acc.decide({op, Residency::host}).id.plugin, "acc_resident");
    }
}

TEST(HostResidentOperands, PreparedPlansOnHostDataPassParamsThrough) {
  const auto seed = acc_test::test_seed();
  SCOPED_TRACE("QFORGE_TEST_SEED=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  Accelerator acc(acc_test::plugins({"cpu_scalar", "acc_resident"}), resident_wins());
  for (const OpKind kind : kKinds) {
    const OpDesc op = random_op(rng, kind);
    SCOPED_TRACE(describe(op));
    Arrays a = random_arrays(rng, op);
    const OpOperands operands = op_operands(op);
    std::vector<const void*> weights;
    for (std::size_t i = 0; i < operands.inputs.size(); ++i)
      weights.push_back(operands.inputs[i].role == OperandRole::weight ? a.in[i].data() : nullptr);
    for (const bool fix : {false, true}) {
      SCOPED_TRACE(fix ? "weights fixed" : "weights passed");
      const auto plan =
          acc.prepare({op, Residency::host}, fix ? weights : std::vector<const void*>{});
      ASSERT_EQ(plan->backend(), "acc_resident");
      // Twice with fresh data: the staged plan's device copies are reused.
      for (int r = 0; r < 2; ++r) {
        Arrays run = random_arrays(rng, op);
        for (std::size_t i = 0; i < weights.size(); ++i)
          if (weights[i] && fix) run.in[i] = a.in[i];
        const auto want = reference_outputs(op, run);
        auto in = pointers(run.in);
        for (std::size_t i = 0; i < in.size(); ++i)
          if (!plan->reads_input(i)) in[i] = nullptr;
        plan->run(in, pointers(run.out));
        EXPECT_EQ(run.out, want) << "run " << r;
      }
    }
  }
}

// Device memory of `ops` for the arrays, host memory for the params: what a plan of a device
// plugin takes (plan.h).
struct Placed {
  Placed(QuantizationOps& ops, const OpDesc& op, Arrays& a) : operands(op_operands(op)) {
    for (std::size_t i = 0; i < a.in.size(); ++i) {
      if (operands.inputs[i].host_resident) {
        in.push_back(a.in[i].data());
        continue;
      }
      buffers.push_back(ops.allocate(a.in[i].size()));
      ops.copy_to_device(*buffers.back(), 0, a.in[i].data(), a.in[i].size());
      in.push_back(buffers.back()->data());
    }
    for (std::size_t i = 0; i < a.out.size(); ++i) {
      if (operands.outputs[i].host_resident) {
        out.push_back(a.out[i].data());
        device_out.push_back(nullptr);
        continue;
      }
      device_out.push_back(ops.allocate(a.out[i].size()));
      out.push_back(device_out.back()->data());
    }
  }
  void read_back(QuantizationOps& ops, Arrays& a) {
    for (std::size_t i = 0; i < a.out.size(); ++i)
      if (device_out[i]) ops.copy_to_host(a.out[i].data(), *device_out[i], 0, a.out[i].size());
    ops.synchronize();
  }
  OpOperands operands;
  std::vector<std::shared_ptr<Buffer>> buffers, device_out;
  std::vector<const void*> in;
  std::vector<void*> out;
};

TEST(HostResidentOperands, DevicePlansTakeArraysOnTheDeviceAndParamsOnTheHost) {
  const auto seed = acc_test::test_seed();
  SCOPED_TRACE("QFORGE_TEST_SEED=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  Accelerator acc(acc_test::plugins({"cpu_scalar", "acc_resident"}), resident_wins());
  for (const OpKind kind : kKinds) {
    const OpDesc op = random_op(rng, kind);
    SCOPED_TRACE(describe(op));
    const Decision dec = acc.decide({op, Residency::device});
    ASSERT_EQ(dec.id.plugin, "acc_resident");
    const auto plan = dec.plan(op);
    Arrays a = random_arrays(rng, op);
    const auto want = reference_outputs(op, a);
    Placed placed(*dec.ops, op, a);
    plan->run(placed.in, placed.out);
    placed.read_back(*dec.ops, a);
    EXPECT_EQ(a.out, want);

    // The fixture does check: a params operand in device memory is refused, naming it.
    const OpOperands& operands = placed.operands;
    std::size_t param = 0;
    while (param < operands.outputs.size() && !operands.outputs[param].host_resident) ++param;
    if (param == operands.outputs.size()) continue;  // linear_backward: its param is an input
    auto misplaced = dec.ops->allocate(operands.outputs[param].bytes);
    std::vector<void*> out = placed.out;
    out[param] = misplaced->data();
    try {
      plan->run(placed.in, out);
      ADD_FAILURE() << "a params output in device memory was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(std::string(operands.outputs[param].name)),
                std::string::npos)
          << e.what();
    }
  }
}

TEST(HostResidentOperands, MeasuredTimingRunsTheDevicePlan) {
  // No injected costs: the device candidate is timed for real, each call with its arrays on
  // the device and its params on the host.
  const auto seed = acc_test::test_seed();
  SCOPED_TRACE("QFORGE_TEST_SEED=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  Accelerator acc(acc_test::plugins({"cpu_scalar", "acc_resident"}),
                  acc_test::options(acc_test::scratch_dir("c") / "t.json"));
  for (const OpKind kind : kKinds) {
    const OpDesc op = random_op(rng, kind);
    SCOPED_TRACE(describe(op));
    const TuneReport r = acc.tune({op, Residency::host});
    bool seen = false;
    for (const auto& c : r.candidates)
      if (c.id.plugin == "acc_resident") {
        seen = true;
        EXPECT_EQ(c.status, CandidateStatus::measured) << c.message;
        EXPECT_GT(c.seconds, 0.0);
      }
    EXPECT_TRUE(seen) << "acc_resident was no candidate";
  }
}

}  // namespace

// matmul_dequant with A's params at run: a_scale and a_zero_point are host-resident arrays of
// every call (not params the op returns), so the probes that verify a device plugin must pass
// them in host memory too; a prepared plan then runs on host data with fresh params each run.
TEST(HostResidentOperands, AParamsAtRunReachADevicePlanInHostMemory) {
  const auto seed = acc_test::test_seed();
  SCOPED_TRACE("QFORGE_TEST_SEED=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  Accelerator acc(acc_test::plugins({"cpu_scalar", "acc_resident"}), resident_wins());
  const std::int64_t m = 5, n = 7, k = 24;
  std::uniform_real_distribution<float> scale(0.01f, 0.5f);
  std::vector<float> b_scales(static_cast<std::size_t>(n));
  for (auto& s : b_scales) s = scale(rng);
  MatmulDesc d{m,
               n,
               k,
               QuantizationParams::per_tensor_affine(DType::uint8, 1.0f, 0),
               QuantizationParams::per_channel(DType::int8, Mapping::symmetric, 1, b_scales),
               MatrixLayout::kn};
  d.a_params_at_run = true;
  const OpDesc op{OpKind::matmul_dequant, d};
  const auto plan = acc.prepare({op, Residency::host});
  ASSERT_EQ(plan->backend(), "acc_resident");
  std::uniform_int_distribution<int> code(0, 255), zero_point(0, 255);
  for (int r = 0; r < 3; ++r) {
    std::vector<std::uint8_t> a(static_cast<std::size_t>(m * k));
    std::vector<std::int8_t> b(static_cast<std::size_t>(k * n));
    for (auto& v : a) v = static_cast<std::uint8_t>(code(rng));
    for (auto& v : b) v = static_cast<std::int8_t>(code(rng) - 128);
    const float sa = scale(rng);
    const std::int32_t za = zero_point(rng);
    std::vector<float> got(static_cast<std::size_t>(m * n)), want(got.size());
    reference::matmul_dequant(reference::with_a_params_at_run(d, sa, za), a.data(), b.data(),
                              nullptr, want.data());
    const void* in[] = {a.data(), b.data(), &sa, &za};
    void* out[] = {got.data()};
    plan->run(in, out);
    EXPECT_EQ(got, want) << "run " << r << ", scale " << sa << ", zero point " << za;
  }
}
