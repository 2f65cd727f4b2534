// One conformance case: an op descriptor, host inputs, the reference's expected outputs, and how
// to launch the op on a plugin. run_case() does the rest for every op family:
//
//   1. supports(): a rejection skips the case for that plugin (counted) — or fails it for
//      cpu_scalar, which must run everything the reference defines.
//   2. The case's per-call launches (matmuls run directly and through pack_weights), which run
//      the plugin's own kernel choice, and for every kernel variant supports() lists the launches
//      that run that kernel (plans made for it): inputs go to the plugin's memory behind
//      canaries, outputs are poisoned (0xCD bytes for integers, a NaN for floats), the op runs,
//      and then the canaries, the untouched inputs and the outputs are checked. An integer output
//      whose expected value equals the poison somewhere is run a second time under a different
//      poison, so "never written" cannot pass as "correct".
//   3. When the reference itself rejects the descriptor (invalid) or the result leaves int32
//      (overflow), the plugin must refuse too: supports() says no, or the op throws
//      qforge::Error (ErrorCode::overflow for an overflow). Never a silent answer.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "harness/compare.h"
#include "qforge/error.h"
#include "qforge/op_desc.h"
#include "qforge/ops.h"

namespace qforge::conformance {

struct HostInput {
  std::string name;
  std::vector<std::byte> bytes;
};

struct ExpectedOutput {
  OutputSpec spec;
  std::vector<std::byte> bytes;  // the reference's result
  // Float outputs: per element, the size of the terms it was summed from (see compare.h);
  // empty = the reference value itself.
  std::vector<double> magnitude = {};
};

enum class ReferenceOutcome { ok, invalid, overflow };

using LaunchFn = std::function<void(QuantizationOps&, const std::vector<void*>& in,
                                    const std::vector<void*>& out)>;

// One way to run the op: "direct", or "prepacked" (pack_weights + the *_packed op); run_case
// adds "plan" and "plan, weights fixed" (QuantizationOps::plan) per kernel to every case whose
// operands are all arrays in the per-call API too (op_table.h: no params_in_calls); the other
// cases bring their own (OpCase::kernel_launches).
struct Launch {
  std::string name;
  LaunchFn fn;
};

// Thrown by a launch variant that the plugin does not offer at all (pack_weights of a device
// backend that keeps no packed form): skipped and counted, a failure only for cpu_scalar.
struct LaunchUnavailable {
  std::string reason;
};

struct OpCase {
  explicit OpCase(OpDesc o) : op(std::move(o)) {}

  OpDesc op;
  std::string label;  // printed with every message about this case
  ReferenceOutcome reference = ReferenceOutcome::ok;
  std::string reference_error;  // the reference's message when not ok
  std::vector<HostInput> inputs;
  std::vector<ExpectedOutput> outputs;
  // Ways to launch the op through the per-call ops (the plugin's own kernel): pointers in plugin
  // memory, in the order of `inputs` and `outputs`.
  std::vector<Launch> launches;
  // Ways to launch the op with one given kernel (plans made for it), for each kernel supports()
  // lists; unset: the plan launches run_case derives from the op table.
  std::function<std::vector<Launch>(const std::string& kernel)> kernel_launches;
  // Checks made after each launch beyond the outputs (the params an op returns).
  std::function<::testing::AssertionResult()> check_returned;
  // A capability no backend has to claim (float16/bfloat16 matmul output): rejecting it never
  // fails, even for cpu_scalar.
  bool optional_capability = false;
};

// Runs `f` (a call into qforge::reference) and records its outcome in `c`.
template <class F>
void run_reference(OpCase& c, F&& f) {
  try {
    f();
    c.reference = ReferenceOutcome::ok;
  } catch (const Error& e) {
    c.reference =
        e.code() == ErrorCode::overflow ? ReferenceOutcome::overflow : ReferenceOutcome::invalid;
    c.reference_error = e.what();
  }
}

// What a test saw, to tell "checked" from "skipped" at its end.
struct Tally {
  int compared = 0;              // cases whose outputs were compared (all kernels)
  int refusals_checked = 0;      // invalid/overflow cases where the plugin's refusal was checked
  int rejected = 0;              // cases supports() declined
  int invalid = 0;               // cases the reference itself rejects
  int launches_unavailable = 0;  // launch variants the plugin does not offer
  std::string first_rejection;
  std::string first_invalid;  // the reference's message for the first invalid case
};

// The plugin a test runs against.
struct Target {
  std::string name;
  QuantizationOps* ops = nullptr;
  bool must_support = false;  // cpu_scalar
  Tally tally;
};

void run_case(Target& target, const OpCase& c);

// Byte views of plain vectors, for building inputs and expected outputs.
template <class T>
std::vector<std::byte> to_bytes(const std::vector<T>& values) {
  const auto* p = reinterpret_cast<const std::byte*>(values.data());
  return {p, p + values.size() * sizeof(T)};
}

}  // namespace qforge::conformance
