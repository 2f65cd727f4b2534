// What core itself does with each op kind besides its operands and its reference (op_table.h):
// call it on a backend, shrink it into probes, draw its random inputs and bound the terms of its
// float sums. (Workload keys and bucket words are per descriptor type, not per kind: the
// overloads of make_key and bucket_words, defined in the same family files.) One OpHooks per kind,
// defined with the other facts of its descriptor family in op_table/kinds/<family>.cpp and
// registered in its row of the table (OpInfo::hooks); the accelerator looks them up instead of
// switching over the kinds.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "accelerator/operands.h"
#include "op_table/array_call.h"
#include "qforge/op_table.h"
#include "qforge/ops.h"

namespace qforge {

struct OpHooks {
  // The op's per-call method on a backend, and on the reference, with arrays in io_layout order
  // (accelerator/operands.h): params an op computes come back as its result, and
  // linear_backward's activation params arrive as `xq`.
  std::optional<QuantizationParams> (*invoke)(
      QuantizationOps& ops, const OpDesc& op, const void* const* in, void* const* out,
      const std::optional<QuantizationParams>& xq) = nullptr;
  std::optional<QuantizationParams> (*invoke_reference)(
      const OpDesc& op, const void* const* in, void* const* out,
      const std::optional<QuantizationParams>& xq) = nullptr;
  // From the op table's arrays to the per-call convention, for the kinds whose params are
  // operands (nullptr for the others): the params read from an input, with the remaining
  // inputs written to `call_in`; and the returned params stored into their outputs.
  QuantizationParams (*params_input)(const void* const* in, const void** call_in) = nullptr;
  void (*store_params)(const QuantizationParams& p, void* const* out) = nullptr;

  // Probe level 0 (tiny) or 1 (small) of a real descriptor: same dtypes, schemes, layout and
  // modes, smaller extents, params drawn afresh (accel::probe_desc).
  OpDesc (*probe)(const OpDesc& real, int level, accel::Rng& rng) = nullptr;
  // The multiply-adds that bound the reference's time on the real shape (probe level 2);
  // nullptr for elementwise ops, which are bounded by their element count instead.
  std::int64_t (*probe_macs)(const OpDesc& real) noexcept = nullptr;

  // Valid random inputs into h.inputs (and h.xq_params), in io_layout order.
  void (*random_inputs)(const OpDesc& op, const accel::IoLayout& layout, accel::Rng& rng,
                        bool specials, accel::HostArrays& h) = nullptr;
  // Per output, the size of the terms a float output that can cancel is summed from (one
  // vector per output, left empty where exact or not a sum); nullptr where no output is such.
  void (*magnitudes)(const OpDesc& op, const accel::HostArrays& expected,
                     std::vector<std::vector<double>>& out) = nullptr;
};

// The hooks of a kind (its op table row).
inline const OpHooks& op_hooks(OpKind kind) { return *op_info(kind).hooks; }

namespace op_table_detail {

// The two `invoke` entries of a kind from one `Call::run<Ops>(ops, op, in, out, xq)`.
template <class Call>
std::optional<QuantizationParams> invoke_on(QuantizationOps& ops, const OpDesc& op,
                                            const void* const* in, void* const* out,
                                            const std::optional<QuantizationParams>& xq) {
  return Call::run(ops, op, in, out, xq);
}
template <class Call>
std::optional<QuantizationParams> invoke_reference_on(const OpDesc& op, const void* const* in,
                                                      void* const* out,
                                                      const std::optional<QuantizationParams>& xq) {
  ReferenceOps ops;
  return Call::run(ops, op, in, out, xq);
}

}  // namespace op_table_detail
}  // namespace qforge

namespace qforge::op_table_detail {

// Calls the op with arrays in the op table's operand order (op_table.h), host memory, on a
// backend or (ops == nullptr) on the reference: params that are operands there are converted to
// and from the per-call convention through the kind's hooks.
inline void call_with_arrays(QuantizationOps* ops, const OpDesc& op, const void* const* in,
                             void* const* out) {
  const OpHooks& h = op_hooks(op.op);
  std::optional<QuantizationParams> xq;
  std::array<const void*, kMaxOperands> call_in{};
  const void* const* args = in;
  if (h.params_input) {
    xq = h.params_input(in, call_in.data());
    args = call_in.data();
  }
  const std::optional<QuantizationParams> r =
      ops ? h.invoke(*ops, op, args, out, xq) : h.invoke_reference(op, args, out, xq);
  if (r && h.store_params) h.store_params(*r, out);
}

}  // namespace qforge::op_table_detail
