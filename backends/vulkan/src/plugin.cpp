// The plugin's one exported symbol, qforge_plugin_entry.
#include "qforge/plugin/sdk.h"
#include "vulkan_ops.h"

QFORGE_DEFINE_PLUGIN(qforge::vulkan::VulkanOps, qforge::vulkan::kPluginName,
                     qforge::vulkan::kPluginVersion)
