#include "dlpack_operand.h"

#include <dlpack/dlpack.h>

#include <string_view>

namespace qforge::python {

namespace {

constexpr const char* kCapsuleName = "dltensor";

std::string device_name(int type, int id) {
  switch (type) {
    case kDLCPU: return "cpu";
    case kDLCUDA: return "cuda:" + std::to_string(id);
    case kDLCUDAHost: return "cuda pinned host memory";
    case kDLCUDAManaged: return "cuda managed memory";
    default: return "DLPack device type " + std::to_string(type) + " (" + std::to_string(id) + ")";
  }
}

std::string expected_device(const OperandMemory& m) {
  return m.host ? std::string("cpu") : "cuda:" + std::to_string(m.device);
}

char kind_of(const DLDataType& t) {
  switch (t.code) {
    case kDLFloat: return 'f';
    case kDLInt: return 'i';
    case kDLUInt: return 'u';
    default: return '?';
  }
}

std::string dtype_name(char kind, int bits) {
  const std::string_view base = kind == 'f' ? "float" : kind == 'i' ? "int" : "uint";
  return std::string(base) + std::to_string(bits);
}

// Why the plan takes that memory, and how to get a plan for the other: prepare_*'s residency.
std::string residency_hint(const OperandMemory& m) {
  const std::string cuda = "cuda:" + std::to_string(m.device);
  if (m.staged)
    return " memory (prepared with residency='host', it copies host arrays to " + cuda +
           " and back); prepare it with residency='device' to pass " + cuda + " tensors in place";
  if (!m.host)
    return " (prepared with residency='device'); prepare it with residency='host' to pass host "
           "arrays";
  return "";
}

}  // namespace

DlpackOperand dlpack_operand(py::handle obj, const OperandMemory& memory, char kind, int bits,
                             std::size_t bytes, const std::string& what) {
  if (!py::hasattr(obj, "__dlpack__") || !py::hasattr(obj, "__dlpack_device__"))
    throw py::type_error(what + " is a " + py::str(py::type::handle_of(obj)).cast<std::string>() +
                         "; expected a DLPack producer (an object with __dlpack__ and "
                         "__dlpack_device__, such as a torch.Tensor)");
  const auto dev = obj.attr("__dlpack_device__")().cast<py::tuple>();
  const int type = dev[0].cast<int>(), id = dev[1].cast<int>();
  const bool host_ok = type == kDLCPU || type == kDLCUDAHost;
  if (memory.host ? !host_ok : (type != kDLCUDA || id != memory.device))
    throw py::value_error(what + " is on " + device_name(type, id) + "; the plan runs on " +
                          expected_device(memory) + residency_hint(memory));
  // CPU producers take no stream; CUDA ones order their current stream before the legacy
  // default stream (1), which the cuda plugin's blocking stream follows.
  DlpackOperand out;
  out.capsule =
      type == kDLCUDA ? obj.attr("__dlpack__")(py::arg("stream") = 1) : obj.attr("__dlpack__")();
  auto* managed =
      static_cast<DLManagedTensor*>(PyCapsule_GetPointer(out.capsule.ptr(), kCapsuleName));
  if (!managed) {
    PyErr_Clear();
    throw py::type_error(what + ": __dlpack__ returned no \"dltensor\" capsule");
  }
  const DLTensor& t = managed->dl_tensor;
  if (kind_of(t.dtype) != kind || t.dtype.bits != bits || t.dtype.lanes != 1)
    throw py::type_error(what + " holds " +
                         (kind_of(t.dtype) == '?'
                              ? "DLPack type code " + std::to_string(t.dtype.code)
                              : dtype_name(kind_of(t.dtype), t.dtype.bits)) +
                         (t.dtype.lanes != 1 ? " x" + std::to_string(t.dtype.lanes) : "") +
                         "; expected " + dtype_name(kind, bits));
  std::int64_t elements = 1, expected_stride = 1;
  bool contiguous = true;
  for (int i = t.ndim; i-- > 0;) {
    if (t.strides && t.shape[i] != 1 && t.strides[i] != expected_stride) contiguous = false;
    expected_stride *= t.shape[i];
    elements *= t.shape[i];
  }
  if (!contiguous)
    throw py::value_error(what +
                          " is not C-contiguous; pass a contiguous tensor "
                          "(.contiguous())");
  const std::size_t have = static_cast<std::size_t>(elements) * static_cast<std::size_t>(bits / 8);
  if (have != bytes)
    throw py::value_error(what + " holds " + std::to_string(have) + " bytes; the plan reads " +
                          std::to_string(bytes));
  out.data = static_cast<char*>(t.data) + t.byte_offset;
  if (reinterpret_cast<std::uintptr_t>(out.data) % static_cast<std::uintptr_t>(bits / 8) != 0)
    throw py::value_error(what + " is not aligned to its " + std::to_string(bits / 8) +
                          "-byte elements");
  return out;
}

}  // namespace qforge::python
