// The size of the terms each float output element is computed from, for outputs that are sums
// which can cancel: |C·sa·sb| + |bias| (per block for block-wise B), Σ|dY·W|, Σ|dY·Xq·sx|, Σ|dY|.
// Comparisons divide by max(|ref|, magnitude)² instead of ref², the bound BLAS tests use
// (|error| ≤ c·ε·|A|·|B|) and the one the conformance suite uses (docs/TESTING.md): otherwise a
// result that cancels to almost nothing turns one legitimate rounding of its terms into a huge
// relative error, and a correct plugin would be excluded now and then.
//
// Here the products run over |a − za|·|b − zb| per k (an upper bound of |C| per block), which
// is what a kernel's rounding can scale with. Each kind computes its own (OpHooks::magnitudes).
#include "accelerator/operands.h"
#include "op_table/op_hooks.h"

namespace qforge::accel {

std::vector<std::vector<double>> output_magnitudes(const OpDesc& op, const HostArrays& h) {
  std::vector<std::vector<double>> out(h.outputs.size());
  if (const auto magnitudes = op_hooks(op.op).magnitudes) magnitudes(op, h, out);
  return out;
}

}  // namespace qforge::accel
