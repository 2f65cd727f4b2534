// libonnx's operator schemas, registered ahead of an import.
#pragma once

#include "qforge/model/export.h"

namespace qforge::model {

// Registers libonnx's operator schemas now. ONNX 1.12 registers every schema of every opset on
// the first schema lookup (tens of milliseconds), and the checker and shape inference of every
// import need them; import_onnx_file / import_onnx_bytes do this themselves when they are
// missing. A tool that imports a model calls this first on another thread, so the registration
// runs while it reads files and loads plugins. Thread-safe: an import that starts meanwhile
// waits for the one registration.
QFORGE_MODEL_API void register_onnx_schemas();

}  // namespace qforge::model
