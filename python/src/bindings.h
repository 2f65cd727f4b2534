// The pieces of the extension module qforge._qforge, one function per file, called in order
// by module.cpp.
#pragma once

#include <pybind11/pybind11.h>

namespace qforge::python {

void bind_errors(pybind11::module_& m);
void bind_params(pybind11::module_& m);
void bind_ops(pybind11::module_& m);
void bind_accelerator(pybind11::module_& m);
void bind_chains(pybind11::module_& m);
void bind_hwinfo(pybind11::module_& m);
void bind_calibration(pybind11::module_& m);
void bind_model(pybind11::module_& m);

}  // namespace qforge::python
