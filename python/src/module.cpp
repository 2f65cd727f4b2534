// qforge._qforge: the extension module behind the Python package qforge (python/qforge/).
// The package's __init__.py re-exports what users call; this module stays close to the C++ API.
#include <pybind11/pybind11.h>

#include "bindings.h"

PYBIND11_MODULE(_qforge, m) {
  m.doc() = "qforge's C++ core, calibration and model layer (use the package qforge)";
  qforge::python::bind_errors(m);
  qforge::python::bind_params(m);
  qforge::python::bind_ops(m);
  qforge::python::bind_accelerator(m);
  qforge::python::bind_chains(m);
  qforge::python::bind_hwinfo(m);
  qforge::python::bind_calibration(m);
  qforge::python::bind_model(m);
}
