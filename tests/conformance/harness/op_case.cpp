#include "harness/op_case.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <exception>
#include <memory>
#include <stdexcept>
#include <utility>

#include "harness/guarded_buffer.h"
#include "qforge/op_table.h"
#include "qforge/plan.h"

namespace qforge::conformance {
namespace {

// 0xCD for integer outputs (MSVC's "uninitialised heap" byte); a quiet NaN with a recognisable
// payload for float outputs, so an element never written reads as NaN where the reference is
// finite.
std::vector<std::byte> poison_element(const OutputSpec& spec, int round) {
  const auto b = static_cast<std::byte>(round == 0 ? 0xCD : 0x35);
  if (spec.kind != ValueKind::floating) return std::vector<std::byte>(spec.element_bytes(), b);
  switch (spec.float_type) {
    case FloatType::f32:
      return {std::byte{0xCD}, std::byte{0xCD}, std::byte{0xCD}, std::byte{0x7F}};
    case FloatType::f16: return {std::byte{0xCD}, std::byte{0x7E}};
    case FloatType::bf16: return {std::byte{0xCD}, std::byte{0x7F}};
  }
  return {b};
}

// True when some expected element is stored exactly as the poison: a run that never wrote that
// element would still compare equal, so the case runs again under a second poison.
bool expected_matches_poison(const ExpectedOutput& out) {
  if (out.spec.kind == ValueKind::floating) return false;  // NaN poison never matches
  const auto poison = poison_element(out.spec, 0);
  const std::size_t unit = poison.size();
  for (std::size_t i = 0; i + unit <= out.bytes.size(); i += unit)
    if (std::memcmp(out.bytes.data() + i, poison.data(), unit) == 0) return true;
  return false;
}

// The case's input `i` stays in host memory on every device (op_table.h:
// OperandSpec::host_resident), as matmul_dequant's a_scale and a_zero_point with A's params
// given at run. Matched by name: a case may leave out operands its launches pass themselves.
bool host_resident_input(const OpCase& c, std::size_t i) {
  const OpOperands operands = op_operands(c.op);
  return std::any_of(operands.inputs.begin(), operands.inputs.end(), [&](const OperandSpec& o) {
    return o.host_resident && o.name == c.inputs[i].name;
  });
}

// Launches through QuantizationOps::plan with `kernel`, with every operand passed on each run
// and with the weight operands (op_table.h) fixed when the plan is made. None for ops that
// read or write params, whose per-call signature carries those as QuantizationParams: the
// plan tests of tests/core cover them.
std::vector<Launch> plan_launches(const OpCase& c, const std::string& kernel) {
  const OpOperands operands = op_operands(c.op);
  auto params = [](const OperandSpec& o) { return o.params_in_calls; };
  if (std::any_of(operands.inputs.begin(), operands.inputs.end(), params) ||
      std::any_of(operands.outputs.begin(), operands.outputs.end(), params))
    return {};
  std::vector<Launch> launches;
  for (bool fix : {false, true}) {
    PlanRequest request;
    request.kernel = kernel;
    bool has_weight = false;
    if (fix) {
      for (std::size_t i = 0; i < operands.inputs.size() && i < c.inputs.size(); ++i) {
        const bool weight = operands.inputs[i].role == OperandRole::weight;
        has_weight = has_weight || weight;
        request.weights.push_back(weight ? c.inputs[i].bytes.data() : nullptr);
      }
      if (!has_weight) continue;
    }
    const std::size_t n_in = operands.inputs.size(), n_out = operands.outputs.size();
    auto fn = [&c, request, n_in, n_out](QuantizationOps& ops, const std::vector<void*>& in,
                                         const std::vector<void*>& out) {
      if (in.size() != n_in || out.size() != n_out)
        throw std::logic_error("the case has " + std::to_string(in.size()) + " inputs and " +
                               std::to_string(out.size()) + " outputs; the op table says " +
                               std::to_string(n_in) + " and " + std::to_string(n_out));
      const auto plan = ops.plan(c.op, request);
      std::vector<const void*> inputs(in.begin(), in.end());
      for (std::size_t i = 0; i < inputs.size(); ++i)
        if (!plan->reads_input(i)) inputs[i] = nullptr;  // fixed: the plan must not need it
      plan->run(inputs, out);
      if (plan->kernel().empty()) throw std::logic_error("plan->kernel() is empty");
    };
    launches.push_back({fix ? "plan, weights fixed" : "plan", fn});
  }
  return launches;
}

// The launches to run, each with the kernel it runs ("" for the plugin's own choice): the
// case's per-call launches once, and the launches of each kernel supports() listed.
std::vector<std::pair<std::string, Launch>> all_launches(const OpCase& c,
                                                         const std::vector<std::string>& kernels) {
  std::vector<std::pair<std::string, Launch>> launches;
  for (const auto& l : c.launches) launches.emplace_back("", l);
  for (const auto& kernel : kernels)
    for (auto& l : c.kernel_launches ? c.kernel_launches(kernel) : plan_launches(c, kernel))
      launches.emplace_back(kernel, std::move(l));
  return launches;
}

std::string kernel_label(const std::string& kernel) {
  return kernel.empty() ? "kernel <backend's choice>" : "kernel " + kernel;
}

// The plugin claims a descriptor the reference rejects or whose result overflows: each kernel
// must throw qforge::Error (ErrorCode::overflow for an overflow) instead of answering.
void expect_refusal(Target& target, const OpCase& c, const std::vector<std::string>& kernels) {
  QuantizationOps& ops = *target.ops;
  // Valid-sized buffers, so that a plugin that does compute writes inside them.
  std::vector<std::unique_ptr<GuardedBuffer>> in, out;
  std::vector<void*> in_ptrs, out_ptrs;
  for (const auto& i : c.inputs) {
    in.push_back(std::make_unique<GuardedBuffer>(ops, i.bytes.size(), "input " + i.name,
                                                 host_resident_input(c, in.size())));
    in.back()->write(i.bytes);
    in_ptrs.push_back(in.back()->payload());
  }
  for (const auto& o : c.outputs) {
    out.push_back(std::make_unique<GuardedBuffer>(ops, o.spec.bytes(), "output " + o.spec.name));
    out.back()->poison(poison_element(o.spec, 0));
    out_ptrs.push_back(out.back()->payload());
  }
  const bool overflow = c.reference == ReferenceOutcome::overflow;
  for (const auto& [kernel, launch] : all_launches(c, kernels)) {
    SCOPED_TRACE(kernel_label(kernel) + ", launch " + launch.name);
    try {
      launch.fn(ops, in_ptrs, out_ptrs);
      ops.synchronize();
      ADD_FAILURE() << target.name << " returned a result where the reference "
                    << (overflow ? "reports an int32 overflow" : "rejects the descriptor") << " ("
                    << c.reference_error << "); expected supports() to say no or the op to throw "
                    << (overflow ? "qforge::Error with ErrorCode::overflow" : "qforge::Error");
    } catch (const Error& e) {
      if (overflow && e.code() != ErrorCode::overflow)
        ADD_FAILURE() << target.name << " threw ErrorCode::" << to_string(e.code()) << " ("
                      << e.what() << ") where the reference reports an overflow; expected "
                      << "ErrorCode::overflow";
    } catch (const std::exception& e) {
      ADD_FAILURE() << target.name << " threw a non-qforge exception: " << e.what();
    } catch (const LaunchUnavailable&) {
      // That way of launching does not exist for this plugin; nothing was computed.
    }
    for (const auto& b : out) EXPECT_TRUE(b->guards_intact());
  }
}

void run_one_launch(Target& target, const OpCase& c, const std::string& kernel,
                    const Launch& launch, std::vector<std::unique_ptr<GuardedBuffer>>& in,
                    std::vector<std::unique_ptr<GuardedBuffer>>& out) {
  QuantizationOps& ops = *target.ops;
  SCOPED_TRACE(kernel_label(kernel) + ", launch " + launch.name);
  std::vector<void*> in_ptrs, out_ptrs;
  for (auto& b : in) in_ptrs.push_back(b->payload());
  for (auto& b : out) out_ptrs.push_back(b->payload());

  bool second_round = false;
  for (const auto& o : c.outputs) second_round = second_round || expected_matches_poison(o);
  for (int round = 0; round < (second_round ? 2 : 1); ++round) {
    SCOPED_TRACE(round == 0 ? "poison 0xCD/NaN" : "second run under poison 0x35");
    for (std::size_t i = 0; i < out.size(); ++i)
      out[i]->poison(poison_element(c.outputs[i].spec, round));
    try {
      launch.fn(ops, in_ptrs, out_ptrs);
      ops.synchronize();
    } catch (const LaunchUnavailable& u) {
      ++target.tally.launches_unavailable;
      if (target.must_support)
        ADD_FAILURE() << target.name << " must offer every launch variant: " << u.reason;
      return;
    } catch (const std::exception& e) {
      ADD_FAILURE() << target.name << " threw although supports() accepted the case: " << e.what();
      return;
    }
    for (std::size_t i = 0; i < in.size(); ++i) {
      EXPECT_TRUE(in[i]->guards_intact());
      EXPECT_TRUE(in[i]->read() == c.inputs[i].bytes)
          << "input " << c.inputs[i].name << " was modified by the op";
    }
    for (std::size_t i = 0; i < out.size(); ++i) {
      EXPECT_TRUE(out[i]->guards_intact());
      EXPECT_TRUE(compare_output(c.outputs[i].spec, out[i]->read(), c.outputs[i].bytes,
                                 c.outputs[i].magnitude));
    }
    if (c.check_returned) {
      EXPECT_TRUE(c.check_returned());
    }
  }
}

}  // namespace

void run_case(Target& target, const OpCase& c) {
  SCOPED_TRACE(target.name + ": " + c.label);
  QuantizationOps& ops = *target.ops;

  Support support;
  try {
    support = ops.supports(c.op);
  } catch (const std::exception& e) {
    // A descriptor the reference rejects may be refused by throwing; anything else must answer.
    if (c.reference == ReferenceOutcome::invalid) {
      ++target.tally.invalid;
      if (target.tally.first_invalid.empty()) target.tally.first_invalid = c.reference_error;
      return;
    }
    ADD_FAILURE() << target.name << ": supports() threw instead of answering: " << e.what();
    return;
  }
  std::vector<std::string> kernels = support.kernels;
  if (support.supported && kernels.empty()) {
    ADD_FAILURE() << target.name << ": supports() accepted the case but listed no kernel variant";
    kernels.push_back("");
  }

  if (c.reference != ReferenceOutcome::ok) {
    if (c.reference == ReferenceOutcome::invalid) {
      ++target.tally.invalid;
      if (target.tally.first_invalid.empty()) target.tally.first_invalid = c.reference_error;
    }
    if (support.supported) expect_refusal(target, c, kernels);
    if (c.reference == ReferenceOutcome::overflow) ++target.tally.refusals_checked;
    return;
  }

  if (!support.supported) {
    ++target.tally.rejected;
    if (target.tally.first_rejection.empty())
      target.tally.first_rejection = c.label + ": " + support.reason;
    if (target.must_support && !c.optional_capability)
      ADD_FAILURE() << target.name << " must run every case the reference defines, but supports() "
                    << "said no: " << support.reason;
    return;
  }

  std::vector<std::unique_ptr<GuardedBuffer>> in, out;
  for (const auto& i : c.inputs) {
    in.push_back(std::make_unique<GuardedBuffer>(ops, i.bytes.size(), "input " + i.name,
                                                 host_resident_input(c, in.size())));
    in.back()->write(i.bytes);
  }
  for (const auto& o : c.outputs)
    out.push_back(std::make_unique<GuardedBuffer>(ops, o.spec.bytes(), "output " + o.spec.name));

  for (const auto& [kernel, launch] : all_launches(c, kernels))
    run_one_launch(target, c, kernel, launch, in, out);
  ++target.tally.compared;
}

}  // namespace qforge::conformance
