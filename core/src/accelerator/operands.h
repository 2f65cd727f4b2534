// The arrays of one op call, generically: what the accelerator needs to verify a candidate
// against the reference, to time it on any device, and to stage host data for a device plugin
// without knowing each op's signature at every step.
//
// Arrays are listed in the order of the op table's operands; optional ones (bias, db) are
// present only when the descriptor asks for them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "qforge/half.h"
#include "qforge/op_desc.h"
#include "qforge/op_table.h"
#include "qforge/ops.h"

namespace qforge::accel {

using Rng = std::mt19937_64;

// The arrays of a per-call op (op_table.h), without the params it carries as
// QuantizationParams (those are `returned` and `xq_params` of HostArrays).
using ArraySpec = OperandSpec;

struct IoLayout {
  std::vector<ArraySpec> inputs;
  std::vector<ArraySpec> outputs;
  bool returns_params = false;   // dynamic_quantize_linear, linear_forward
  bool needs_xq_params = false;  // linear_backward
  std::size_t input_bytes() const;
  std::size_t output_bytes() const;
};

IoLayout io_layout(const OpDesc& op);

// Host copies of every array of one call.
struct HostArrays {
  std::vector<std::vector<std::byte>> inputs;
  std::vector<std::vector<std::byte>> outputs;
  std::optional<QuantizationParams> xq_params;  // linear_backward's host-side input
  std::optional<QuantizationParams> returned;   // what the op returned
  std::vector<const void*> input_pointers() const;
  std::vector<void*> output_pointers();
};

// The byte every output is filled with before a call, so an output left unwritten differs.
inline constexpr std::byte kPoison{0xA5};

// Random inputs valid for the op (integer operands kept inside windows whose int32 sums cannot
// overflow; `specials` adds NaN, infinities, -0, denormals and exact ties where the op defines
// them) and poisoned outputs.
HostArrays random_arrays(const OpDesc& op, Rng& rng, bool specials);
// Fresh random params of the same dtype and scheme for a tensor of `shape`.
QuantizationParams random_params(Rng& rng, DType dtype, const Scheme& scheme, const Shape& shape);

// The descriptor verified before timing: level 0 tiny, 1 small, 2 the real shape (nullopt when
// too large to check against the reference quickly, or when identical to a smaller level).
// Dtypes, schemes, layout, bias and modes are kept; params are drawn afresh.
inline constexpr int kProbeLevels = 3;
std::optional<OpDesc> probe_desc(const OpDesc& real, int level, Rng& rng);

// Calls the reference on host arrays in io_layout order (candidates run plans: plan_io.h).
std::optional<QuantizationParams> invoke_reference(
    const OpDesc& op, const void* const* in, void* const* out,
    const std::optional<QuantizationParams>& xq_params);

// Per output, the size of the terms each element was summed from, where the output is a sum
// that can cancel (matmul_dequant, linear_forward Y, linear_backward); empty otherwise.
// `expected` holds the inputs and the reference's outputs (magnitude.cpp).
std::vector<std::vector<double>> output_magnitudes(const OpDesc& op, const HostArrays& expected);

// nullopt when `got` matches `expected` (integers exactly, floats within NMSE), else what
// differs. Float NMSE is sum (got - ref)^2 / sum max(|ref|, magnitude)^2.
std::optional<std::string> compare_outputs(const IoLayout& layout, const HostArrays& got,
                                           const HostArrays& expected,
                                           const std::vector<std::vector<double>>& magnitudes = {});

}  // namespace qforge::accel
