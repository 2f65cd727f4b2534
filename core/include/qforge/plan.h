// Plans: an op prepared once and run many times (after XNNPACK's create/setup/run and oneDNN's
// primitive/execute). A backend makes a plan for one descriptor, one device and one kernel:
// the descriptor is validated, weights given at that time are packed (and uploaded to the
// device) once, and the kernel is fixed. run() then only checks its pointers.
//
// Operands follow the op table (op_table.h): run() takes one pointer per input and one per
// output of op_operands(desc()), in that order, in the memory of the plan's device (host
// memory for CPU backends), except the operands the op table marks host_resident (the params
// an op reads or computes), which are host pointers on every device. A weight fixed when the
// plan was made is not read again; its slot in run()'s inputs may be null.
//
// Lifetime and threads: a plan holds what it needs (packed weights, device copies) and must not
// outlive the backend instance that made it. Whether distinct plans, and one plan, may run at
// the same time from several threads is the plan's concurrency(); each backend documents it
// (docs/PLUGINS.md). Plans of cpu_scalar, cpu_x86, onednn and vulkan are concurrent.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "qforge/export.h"
#include "qforge/op_desc.h"
#include "qforge/op_table.h"

namespace qforge {

enum class PlanConcurrency : std::uint8_t {
  // run() may be called from several threads at once, on this plan and on any other.
  concurrent,
  // run() calls of plans of one backend instance are serialised by the backend (a lock), so
  // calling from several threads is safe but not faster.
  serialized,
};
QFORGE_API std::string_view to_string(PlanConcurrency c) noexcept;

struct PlanRequest {
  int device = 0;      // index into the backend's devices()
  std::string kernel;  // one of supports().kernels; empty = the backend's own choice
  // One entry per input of op_operands(desc), or empty: a non-null entry fixes that input (it
  // must be a weight operand) to these bytes, in host memory, for the life of the plan. The
  // bytes are copied or packed before plan() returns.
  std::vector<const void*> weights;
};

class QFORGE_API Plan {
 public:
  virtual ~Plan();
  Plan(const Plan&) = delete;
  Plan& operator=(const Plan&) = delete;

  // Runs the op. Throws qforge::Error on a null pointer where an operand is required or a count
  // that differs from the op's operands; the descriptor itself is not checked again.
  virtual void run(std::span<const void* const> inputs, std::span<void* const> outputs) const = 0;
  // The same with the pointers written out: plan->run({a, nullptr}, {c}).
  void run(std::initializer_list<const void*> inputs, std::initializer_list<void*> outputs) const {
    run(std::span<const void* const>(inputs.begin(), inputs.size()),
        std::span<void* const>(outputs.begin(), outputs.size()));
  }

  const OpDesc& desc() const noexcept { return desc_; }
  const std::string& backend() const noexcept { return backend_; }
  int device() const noexcept { return device_; }
  const std::string& kernel() const noexcept { return kernel_; }  // the kernel that runs
  PlanConcurrency concurrency() const noexcept { return concurrency_; }
  // Whether run() reads input `i` (false for a weight fixed when the plan was made).
  bool reads_input(std::size_t i) const noexcept { return i >= fixed_.size() || !fixed_[i]; }

 protected:
  Plan(OpDesc desc, std::string backend, int device, std::string kernel,
       PlanConcurrency concurrency, std::vector<bool> fixed_inputs);
  // Throws unless inputs/outputs have the op's counts and every operand run() reads, and every
  // output, is non-null (zero-byte operands may be null).
  void check_pointers(std::span<const void* const> inputs, std::span<void* const> outputs) const;

 private:
  OpDesc desc_;
  std::string backend_;
  int device_;
  std::string kernel_;
  PlanConcurrency concurrency_;
  std::vector<bool> fixed_;            // per input: fixed at plan time
  std::vector<std::size_t> in_bytes_;  // per operand, from the op table
  std::vector<std::size_t> out_bytes_;
};

// Host copies of the weights a PlanRequest fixes, for plans of host-memory backends that keep
// weights as given (no packing). Checks the request: weights has no entry or one per input, and
// only weight operands are fixed.
class QFORGE_API FixedWeights {
 public:
  FixedWeights(const OpDesc& op, const OpOperands& operands, const PlanRequest& request);
  // Per input: fixed by the request.
  const std::vector<bool>& fixed() const noexcept { return fixed_; }
  const void* data(std::size_t input) const noexcept;  // null when not fixed
  // run()'s inputs with the fixed weights in their slots.
  std::array<const void*, kMaxOperands> substitute(std::span<const void* const> inputs) const;

 private:
  std::vector<bool> fixed_;
  std::vector<std::vector<std::byte>> copies_;  // per input; empty when not fixed
};

}  // namespace qforge
