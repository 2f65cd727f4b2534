// The shapes a candidate is verified on before it is timed. Small first (cheap to check against
// the reference), larger when a plugin refuses the small ones (tile-size constraints, a kernel
// that only runs from some M up), and the real shape last when it is small enough to check.
// Each kind shrinks its own descriptor (OpHooks::probe).
#include "accelerator/operands.h"
#include "op_table/op_hooks.h"

namespace qforge::accel {
namespace {

// Work limits for verifying the real shape against the plain-loop reference.
constexpr std::int64_t kMaxRealElements = std::int64_t{1} << 22;
constexpr std::int64_t kMaxRealMacs = std::int64_t{1} << 25;

}  // namespace

std::optional<OpDesc> probe_desc(const OpDesc& real, int level, Rng& rng) {
  const OpHooks& hooks = op_hooks(real.op);
  if (level >= 2) {
    // The real descriptor with its own params: only when the reference can check it quickly.
    const IoLayout l = io_layout(real);
    if (hooks.probe_macs) {
      if (hooks.probe_macs(real) > kMaxRealMacs) return std::nullopt;
    } else {
      const auto elements = static_cast<std::int64_t>(l.inputs.empty() ? 0 : l.inputs[0].count);
      if (elements > kMaxRealElements) return std::nullopt;
    }
    return real;
  }
  return hooks.probe(real, level, rng);
}

}  // namespace qforge::accel
