// What a plan's run costs against the per-call op it replaces, per plugin, on ops small enough
// that the fixed cost shows: quantize and dequantize of 256 elements and an 8 x 16 x 32
// matmul_integer with B fixed. Three ways, in one process on the same operands (in the plugin's
// own memory, so device plugins are measured too; matmul_dequant, 8 x 16 x 32 with B fixed, too):
//   call/     the per-call op (checks its descriptor on every call)
//   callplan/ the generic plan (QuantizationOps::plan's default: the per-call op under the
//             instance's lock), what vulkan and onednn used before their own plans
//   plan/     the plugin's own plan (QuantizationOps::plan as the plugin overrides it)
//   make/     making that plan, no weights fixed: what a call through the accelerator pays when
//             its descriptor has no plan yet (params that change on every call)
//   atrun/    matmul_dequant's plan with A's params given at run (MatmulDesc::a_params_at_run),
//             B fixed, run with a new A scale and zero point each time: what replaces make/ +
//             plan/ for dynamic quantization
// The label says the plan's concurrency.
//
//   qforge_bench_plan_overhead [--benchmark_filter=vulkan] [--benchmark_repetitions=N]
#include <benchmark/benchmark.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "qforge/op_table.h"
#include "qforge/plan.h"
#include "qforge/registry.h"

namespace {

using namespace qforge;

// The operands of one op in the plugin's memory (host vectors, or device buffers).
struct Operands {
  std::vector<std::shared_ptr<Buffer>> buffers;
  std::vector<std::vector<std::byte>> host;
  std::vector<const void*> in;
  std::vector<void*> out;
  std::vector<const void*> host_in;  // host copies of the inputs, for PlanRequest::weights

  Operands(QuantizationOps& ops, const OpDesc& op) {
    const OpOperands operands = op_operands(op);
    auto make = [&](const OperandSpec& o, bool input) -> void* {
      // Small codes and floats: every op here accepts zero bytes as data.
      host.emplace_back(o.bytes, std::byte{0});
      if (input) host_in.push_back(host.back().data());
      if (ops.host_memory()) return host.back().data();
      buffers.push_back(ops.allocate(o.bytes));
      if (o.bytes) ops.copy_to_device(*buffers.back(), 0, host.back().data(), o.bytes);
      return buffers.back()->data();
    };
    host.reserve(operands.inputs.size() + operands.outputs.size());
    for (const auto& o : operands.inputs) in.push_back(make(o, true));
    for (const auto& o : operands.outputs) out.push_back(make(o, false));
  }
};

void per_call(benchmark::State& state, QuantizationOps* ops, OpDesc op) {
  Operands o(*ops, op);
  for (auto _ : state) {
    switch (op.op) {
      case OpKind::quantize:
        ops->quantize(std::get<QuantizeDesc>(op.desc), o.in[0], o.out[0]);
        break;
      case OpKind::dequantize:
        ops->dequantize(std::get<QuantizeDesc>(op.desc), o.in[0], static_cast<float*>(o.out[0]));
        break;
      case OpKind::matmul_dequant:
        ops->matmul_dequant(std::get<MatmulDesc>(op.desc), o.in[0], o.in[1], nullptr, o.out[0]);
        break;
      default:
        ops->matmul_integer(std::get<MatmulDesc>(op.desc), o.in[0], o.in[1],
                            static_cast<std::int32_t*>(o.out[0]));
    }
  }
  state.SetLabel(ops->plan(op, PlanRequest{ops->default_device(), "", {}})->kernel());
}

// generic: the default QuantizationOps::plan, called past the plugin's override.
void through_plan(benchmark::State& state, QuantizationOps* ops, OpDesc op, bool generic) {
  Operands o(*ops, op);
  PlanRequest request;
  request.device = ops->default_device();
  if (op.op == OpKind::matmul_integer || op.op == OpKind::matmul_dequant)
    request.weights = {nullptr, o.host_in[1]};
  const auto plan = generic ? ops->QuantizationOps::plan(op, request) : ops->plan(op, request);
  std::vector<const void*> in = o.in;
  for (std::size_t i = 0; i < in.size(); ++i)
    if (!plan->reads_input(i)) in[i] = nullptr;
  for (auto _ : state) plan->run(in, o.out);
  state.SetLabel(std::string(to_string(plan->concurrency())) + " " + plan->kernel());
}

void make_plan(benchmark::State& state, QuantizationOps* ops, OpDesc op) {
  PlanRequest request;
  request.device = ops->default_device();
  for (auto _ : state) benchmark::DoNotOptimize(ops->plan(op, request));
}

// 64 (scale, zero point) pairs in turn, as dynamic quantization brings them.
void at_run(benchmark::State& state, QuantizationOps* ops, OpDesc op) {
  std::get<MatmulDesc>(op.desc).a_params_at_run = true;
  Operands o(*ops, op);
  PlanRequest request;
  request.device = ops->default_device();
  request.weights = {nullptr, o.host_in[1], nullptr, nullptr};
  const auto plan = ops->plan(op, request);
  float scale = 0;
  std::int32_t zero_point = 0;
  std::vector<const void*> in = {o.in[0], nullptr, &scale, &zero_point};
  int i = 0;
  for (auto _ : state) {
    scale = 0.02f + 0.001f * static_cast<float>(i);
    zero_point = 100 + i;
    plan->run(in, o.out);
    i = (i + 1) % 64;
  }
  state.SetLabel(std::string(to_string(plan->concurrency())) + " " + plan->kernel());
}

std::vector<OpDesc> small_ops() {
  const auto p8 = QuantizationParams::per_tensor_affine(DType::int8, 0.05f, 3);
  const auto pu8 = QuantizationParams::per_tensor_affine(DType::uint8, 0.02f, 128);
  const auto pb = QuantizationParams::per_tensor_symmetric(DType::int8, 0.01f);
  return {OpDesc{OpKind::quantize, QuantizeDesc{{256}, p8}},
          OpDesc{OpKind::dequantize, QuantizeDesc{{256}, p8}},
          OpDesc{OpKind::matmul_integer, MatmulDesc{.m = 8, .n = 16, .k = 32, .a = pu8, .b = pb}},
          OpDesc{OpKind::matmul_dequant, MatmulDesc{.m = 8, .n = 16, .k = 32, .a = pu8, .b = pb}}};
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  for (const auto& p : PluginRegistry::global().plugins()) {
    QuantizationOps* ops = p.ops.get();
    if (!ops->availability().usable) continue;
    for (const OpDesc& op : small_ops()) {
      if (!ops->supports(op).supported) continue;
      const std::string name = p.name + "/" + std::string(to_string(op.op));
      benchmark::RegisterBenchmark(("call/" + name).c_str(), per_call, ops, op);
      benchmark::RegisterBenchmark(("callplan/" + name).c_str(), through_plan, ops, op, true);
      benchmark::RegisterBenchmark(("plan/" + name).c_str(), through_plan, ops, op, false);
      benchmark::RegisterBenchmark(("make/" + name).c_str(), make_plan, ops, op);
      if (op.op != OpKind::matmul_dequant || !ops->host_memory()) continue;
      OpDesc flagged = op;
      std::get<MatmulDesc>(flagged.desc).a_params_at_run = true;
      if (ops->supports(flagged).supported)
        benchmark::RegisterBenchmark(("atrun/" + name).c_str(), at_run, ops, op);
    }
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
