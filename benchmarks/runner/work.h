// Work per call of a workload, for GOPS and GB/s: matmuls count 2·M·N·K operations (linear
// backward two such products), elementwise ops the bytes they read and write once.
#pragma once

#include "qforge/op_desc.h"
#include "results.h"

namespace qforge::bench {

Work work_of(const OpDesc& op);

}  // namespace qforge::bench
