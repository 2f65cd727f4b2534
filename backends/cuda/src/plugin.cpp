// The plugin's one exported symbol (qforge/plugin/sdk.h).
#include "cuda_ops.h"
#include "qforge/plugin/sdk.h"

QFORGE_DEFINE_PLUGIN(qforge::cuda::CudaOps, "cuda", qforge::cuda::kPluginVersion)
