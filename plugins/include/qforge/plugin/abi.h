/* The qforge plugin ABI: the one C symbol a plugin exports and the descriptor it returns.
 *
 * The host resolves `qforge_plugin_entry`, calls it, and checks abi_version and struct_size
 * before any C++ object crosses the library boundary (after ONNX Runtime's plugin structs,
 * which begin with ort_version_supported, and ggml's ggml_backend_init). Only then does it call
 * create(), which returns a qforge::QuantizationOps* built against the same
 * QFORGE_PLUGIN_ABI_VERSION. Bump the version whenever QuantizationOps, the descriptor types in
 * op_desc.h or this struct change layout.
 *
 * create() must not let an exception escape: it returns NULL and leaves a message for
 * last_error(). Plugins written with QFORGE_DEFINE_PLUGIN (sdk.h) get this for free. */
#ifndef QFORGE_PLUGIN_ABI_H
#define QFORGE_PLUGIN_ABI_H

#include <stdint.h>

#define QFORGE_PLUGIN_ABI_VERSION 7u /* 7: MatmulDesc a_params_at_run */
#define QFORGE_PLUGIN_ENTRY_SYMBOL "qforge_plugin_entry"
/* Optional, beside the entry: a plugin whose create() starts a device runtime (a Vulkan
 * instance and its drivers, a CUDA context) exports
 *   const char* qforge_plugin_deferred_identity(void);
 * which returns, without starting that runtime, a text that changes whenever the devices or
 * drivers the runtime would find change (driver files, GPUs on the bus, the variables that
 * select them), or NULL. When it returns a text, the registry calls create() only when the
 * plugin is first asked anything but its name and version, and the tuning cache's fingerprint
 * uses the text instead of the plugin's devices (docs/PLUGINS.md, "Deferred plugins"). The
 * pointer must stay valid until the next call on the same thread. Adding or leaving out this
 * symbol changes no layout: it is not part of QFORGE_PLUGIN_ABI_VERSION. */
#define QFORGE_PLUGIN_DEFERRED_IDENTITY_SYMBOL "qforge_plugin_deferred_identity"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct qforge_plugin_descriptor {
  uint32_t abi_version; /* QFORGE_PLUGIN_ABI_VERSION the plugin was built with */
  uint32_t struct_size; /* sizeof(qforge_plugin_descriptor) the plugin was built with */
  const char* name;     /* "cpu_scalar" */
  const char* version;  /* the plugin's own version, "0.1.0" */
  /* Returns a new qforge::QuantizationOps* (as void*), or NULL on failure. */
  void* (*create)(void);
  /* Destroys an object returned by create(). */
  void (*destroy)(void* ops);
  /* The reason of the last failed create(), or NULL. */
  const char* (*last_error)(void);
} qforge_plugin_descriptor;

typedef const qforge_plugin_descriptor* (*qforge_plugin_entry_fn)(void);
typedef const char* (*qforge_plugin_deferred_identity_fn)(void);

#ifdef __cplusplus
}
#endif

#endif /* QFORGE_PLUGIN_ABI_H */
