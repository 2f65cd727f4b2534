// A device plugin's plan run on host arrays: the arrays are copied to the device before each
// run and the outputs back after it (what the accelerator does for host-resident data when a
// device plugin wins). Operands the op table marks host_resident (params) are not copied: the
// device plan takes the caller's host pointers for them. Runs are serialised: the device
// copies are the plan's own.
#pragma once

#include <memory>

#include "qforge/ops.h"
#include "qforge/plan.h"

namespace qforge::accel {

std::shared_ptr<const Plan> staged_plan(std::shared_ptr<QuantizationOps> ops,
                                        std::shared_ptr<const Plan> device_plan);

}  // namespace qforge::accel
