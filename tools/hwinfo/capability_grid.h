// The representative descriptors qforge-hwinfo asks every plugin about: for each op the small
// grid over dtypes x schemes x layouts of its op table row (OpInfo::examples), so a reader sees
// at a glance which combinations a backend runs and why the others are refused. Shapes are
// fixed and moderate (no edge cases); the conformance tests, not this tool, walk the awkward
// shapes.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "qforge/op_desc.h"
#include "qforge/op_table.h"

namespace qforge::hwinfo {

// label: "int8 per_tensor_affine", "u8xs8 kn b=per_channel_symmetric(axis=1)"
using GridCase = OpExample;

// The grid for one op.
std::vector<GridCase> capability_grid(OpKind op);

// Every op in enumerator order, or only `only` when given.
std::vector<OpKind> ops_to_report(std::optional<OpKind> only);

}  // namespace qforge::hwinfo
