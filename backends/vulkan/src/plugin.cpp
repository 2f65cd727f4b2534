// The plugin's exported symbols: qforge_plugin_entry, and qforge_plugin_deferred_identity,
// which makes it deferred (docs/PLUGINS.md, "Deferred plugins"): its Vulkan instance is created
// when the plugin is first asked something.
#include "qforge/plugin/sdk.h"
#include "runtime_identity.h"
#include "vulkan_ops.h"

QFORGE_DEFINE_PLUGIN(qforge::vulkan::VulkanOps, qforge::vulkan::kPluginName,
                     qforge::vulkan::kPluginVersion)
QFORGE_DEFINE_DEFERRED_IDENTITY(qforge::vulkan::runtime_identity)
