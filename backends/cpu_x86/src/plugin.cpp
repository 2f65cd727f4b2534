// The one exported symbol of libqforge_plugin_cpu_x86.so.
#include "cpu_x86_ops.h"
#include "qforge/plugin/sdk.h"

QFORGE_DEFINE_PLUGIN(qforge::cpu_x86::CpuX86Ops, "cpu_x86", qforge::cpu_x86::kPluginVersion)
