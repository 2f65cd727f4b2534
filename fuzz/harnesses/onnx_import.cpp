// ONNX model import (import_onnx_file reads files through it): any bytes give a graph or a
// qforge::Error. Import parses the protobuf, runs ONNX's checker and strict shape inference,
// and converts initializers and attributes, so a crash, hang or huge allocation in any of
// them on a hostile model is a finding, as is any exception other than qforge::Error.
#include "qforge/model/onnx_import.h"

#include <cstddef>
#include <cstdint>
#include <span>

#include "qforge/error.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    qforge::model::import_onnx_bytes(std::as_bytes(std::span(data, size)), "fuzz input");
  } catch (const qforge::Error&) {
  }
  return 0;
}
