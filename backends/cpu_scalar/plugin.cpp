// The plugin's one exported symbol, qforge_plugin_entry.
#include "qforge/plugin/sdk.h"
#include "scalar_ops.h"

QFORGE_DEFINE_PLUGIN(qforge::cpu_scalar::ScalarOps, qforge::cpu_scalar::kPluginName,
                     qforge::cpu_scalar::kPluginVersion)
