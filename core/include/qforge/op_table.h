// The table of op kinds: for each OpKind, once, its operands (name, role, size, how an output
// is compared against the reference), its descriptor check and its reference, callable on
// arrays. Plans (plan.h), the accelerator's verification and staging, and the conformance tests
// are driven from it, so that what an op reads and writes is written down in one place.
//
// Operands are listed inputs first, then outputs, in the order of the op's parameters in
// reference.h. Optional operands (a bias when the descriptor has none, db without a bias) are
// left out of the list. Params an op computes (dynamic_quantize_linear's scale and zero point,
// linear_forward's activation scale) are outputs of one element, and linear_backward reads that
// scale as an input, so that every op is arrays in, arrays out: what a plan or a device needs.
// Those elements stay in host memory on every device (OperandSpec::host_resident): the host
// needs them at once (the per-call API returns them), and a device run would otherwise pay a
// copy of four bytes each way.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "qforge/export.h"
#include "qforge/half.h"
#include "qforge/op_desc.h"

namespace qforge {

enum class OperandRole : std::uint8_t {
  input,   // read on every run
  weight,  // read on every run, or fixed once when a plan is made (matmul B, bias, Linear W)
  output,  // written by every run
};
QFORGE_API std::string_view to_string(OperandRole r) noexcept;

// How an output of a backend is compared with the reference's (docs/NUMERICS.md).
enum class Comparison : std::uint8_t {
  exact,  // bit for bit (integers, and floats every backend must reproduce exactly)
  nmse,   // normalised mean squared error at most `tolerance`
};

struct OperandSpec {
  std::string_view name;  // "a", "b", "bias", "y", "y_scale", ...
  OperandRole role = OperandRole::input;
  std::size_t count = 0;  // elements
  std::size_t bytes = 0;  // storage (packed sub-byte dtypes round up)
  Comparison comparison = Comparison::exact;
  FloatType float_type = FloatType::f32;  // the element type of a Comparison::nmse operand
  double tolerance = 0;                   // Comparison::nmse bound
  // The per-call API (ops.h, accelerator.h) carries this operand as QuantizationParams (a
  // return value, or linear_backward's xq_params argument) rather than as an array.
  bool params_in_calls = false;
  // The operand is in host memory in every plan's run(), whatever the plan's device: a scalar
  // the host supplies or reads back at once (the params above). A device plan reads or writes
  // it from the host (an output by the time run() returns); a staged plan passes the caller's
  // pointer through instead of copying it.
  bool host_resident = false;
};

// No op has more inputs or outputs than this (plans keep operand pointers in fixed arrays).
inline constexpr std::size_t kMaxOperands = 8;

struct OpOperands {
  std::vector<OperandSpec> inputs;
  std::vector<OperandSpec> outputs;
  std::size_t input_bytes() const noexcept;
  std::size_t output_bytes() const noexcept;
};

// What one run does, for throughput figures (qforge-bench's GOPS and GB/s). Estimates in double:
// they never throw, whatever the descriptor.
struct OpWork {
  enum class Unit : std::uint8_t {
    bytes,          // elementwise ops: the bytes read and written once
    multiply_adds,  // ops that reduce (matmul, linear, conv): the products summed
  };
  double amount = 0;
  Unit unit = Unit::bytes;
};

// A representative descriptor of a kind and a short label for it ("u8xs8 kn
// b=per_channel_symmetric(axis=1)").
struct OpExample {
  std::string label;
  OpDesc desc;
};

// Core's own per-kind functions (calls on a backend, probes, random inputs): internal to core.
struct OpHooks;

struct OpInfo {
  OpKind kind;
  std::string_view name;     // to_string(kind)
  std::string_view summary;  // one line for docs and tools
  // The arrays one run reads and writes. Sizes are checked against qforge's size limit
  // (checked_size.h); a descriptor that exceeds it throws.
  OpOperands (*operands)(const OpDesc& op);
  // Throws the Error the reference would throw for this descriptor (reference::check_descriptor).
  void (*check)(const OpDesc& op);
  // Runs the reference on host arrays, in operands() order.
  void (*reference)(const OpDesc& op, const void* const* inputs, void* const* outputs);
  OpWork (*work)(const OpDesc& op);
  // A small grid of descriptors of `kind` over dtypes x schemes x layouts at one moderate shape
  // (no edge cases): what qforge-hwinfo asks every plugin about, so that a reader sees at a
  // glance which combinations a backend runs and why it refuses the others.
  std::vector<OpExample> (*examples)(OpKind kind);
  const OpHooks* hooks;
};

// Every op kind, indexed by OpKind.
QFORGE_API std::span<const OpInfo> op_table() noexcept;
QFORGE_API const OpInfo& op_info(OpKind kind);

// Shorthands for op_info(op.op).operands(op) and .reference(...).
QFORGE_API OpOperands op_operands(const OpDesc& op);
QFORGE_API void run_reference(const OpDesc& op, const void* const* inputs, void* const* outputs);

}  // namespace qforge
