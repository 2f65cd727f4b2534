// The plugin's one exported symbol, qforge_plugin_entry.
#include "onednn_ops.h"
#include "qforge/plugin/sdk.h"

QFORGE_DEFINE_PLUGIN(qforge::onednn::OnednnOps, qforge::onednn::kPluginName,
                     qforge::onednn::kPluginVersion)
