// Whether qforge::reference accepts a descriptor, decided from the descriptor alone.
//
// The reference validates inside each op, together with the data; supports() must answer before
// any data exists, so these are the reference's descriptor checks restated (core/src/reference:
// validate_matmul, validate_linear, requantize's and qlinear_matmul's own checks). What the
// reference can only find in the data (an int32 overflow, an infinite input) is not a
// capability question and still throws from the op.
#pragma once

#include "qforge/ops.h"

namespace qforge::cpu_scalar {

// Support::yes({"scalar_reference"}) or Support::no(what the reference would say).
Support check_descriptor(const OpDesc& op);

}  // namespace qforge::cpu_scalar
