// cpu_scalar once more, exported through the C plugin boundary with the C++ SDK (c_sdk.h)
// instead of the C++ entry: the conformance suite runs it as cpu_scalar, which must run every
// case the reference defines, so every op kind and descriptor field crosses the C structs.
#include "qforge/plugin/c_sdk.h"
#include "scalar_ops.h"

QFORGE_DEFINE_C_PLUGIN(qforge::cpu_scalar::ScalarOps, qforge::cpu_scalar::kPluginName,
                       qforge::cpu_scalar::kPluginVersion)
