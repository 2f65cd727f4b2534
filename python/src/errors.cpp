// qforge::Error becomes a Python exception of the package (qforge/_errors.py) with the same
// message and its code: the class is chosen there, by code, so that argument errors are also
// ValueErrors and everything is a qforge.Error (a RuntimeError).
#include <pybind11/pybind11.h>

#include <string>

#include "bindings.h"
#include "qforge/error.h"

namespace py = pybind11;

namespace qforge::python {

void bind_errors(py::module_& m) {
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const qforge::Error& e) {
      py::object make = py::module_::import("qforge._errors").attr("from_code");
      py::object exc = make(std::string(to_string(e.code())), std::string(e.what()));
      PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(exc.ptr())), exc.ptr());
    }
  });
  // For tests of the translation: throws qforge::Error with this code and message.
  m.def("_raise_error", [](const std::string& code, const std::string& message) {
    for (int c = 0; c <= static_cast<int>(ErrorCode::internal); ++c)
      if (to_string(static_cast<ErrorCode>(c)) == code)
        throw Error(static_cast<ErrorCode>(c), message);
    throw py::value_error("unknown error code '" + code + "'");
  });
}

}  // namespace qforge::python
