// Whether qforge::reference accepts a descriptor, decided from the descriptor alone
// (reference::check_descriptor, the checks the reference ops themselves run). What the reference
// can only find in the data (an int32 overflow, an infinite input) is not a capability question
// and still throws from the op.
#pragma once

#include "qforge/ops.h"

namespace qforge::cpu_scalar {

// Support::yes({"scalar_reference"}) or Support::no("cpu_scalar: " + the reference's message).
Support check_descriptor(const OpDesc& op);

}  // namespace qforge::cpu_scalar
