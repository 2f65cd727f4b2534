// DLPack producers (a PyTorch tensor on the CPU or a CUDA device, a CuPy or JAX array) as plan
// operands, without a copy: the producer's memory is handed to the plan as it is, so a plan of
// the cuda plugin reads and writes CUDA tensors in place.
//
// Ordering on CUDA: the producer is asked for its tensor on the legacy default stream
// (`__dlpack__(stream=1)`, the DLPack convention), so work queued on its current stream before
// the call is ordered before that stream; the cuda plugin's stream is a blocking one, ordered
// after the legacy default stream's earlier work. The caller orders its later work after the
// plan's by waiting on the legacy default stream (qforge.torch does, docs/PYTHON.md).
#pragma once

#include <pybind11/pybind11.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace qforge::python {

namespace py = pybind11;

// Where a plan's operands live.
// A plan prepared with residency 'host' for a device plugin takes host memory: the accelerator
// wraps it in a staged plan that copies every array to the device and back and synchronises
// (`staged`). With residency 'device' the plan takes the plugin's memory, CUDA memory for cuda.
struct OperandMemory {
  bool host = true;  // host memory (CPU plugins, or staged); else CUDA device `device`
  int device = 0;
  bool staged = false;  // host memory served by a plan of cuda:`device` that copies it
};

// One operand's memory, valid while `capsule` lives (its deleter runs when it goes).
struct DlpackOperand {
  void* data = nullptr;
  py::object capsule;
};

// Takes `obj`'s memory through DLPack after checking that it lives where `memory` says, holds
// elements of numpy kind `kind` ('f', 'i', 'u') and `bits`, is C-contiguous and has `bytes`
// bytes. `what` names the operand in messages. TypeError for an object without __dlpack__ or
// with the wrong element type, ValueError for the wrong device, layout or size.
DlpackOperand dlpack_operand(py::handle obj, const OperandMemory& memory, char kind, int bits,
                             std::size_t bytes, const std::string& what);

}  // namespace qforge::python
