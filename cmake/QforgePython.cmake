# Finds what the Python package needs and sets QFORGE_BUILD_PYTHON's default: ON when the
# Python development headers and pybind11 are both found. pybind11 comes from Debian's
# pybind11-dev (its CMake config in /usr/lib/cmake) or, under `pip install .`, from PyPI's
# pybind11 in the build environment (located through `python -m pybind11 --cmakedir`).
#
#   QFORGE_BUILD_PYTHON               build python/ (the extension and the package files)
#   QFORGE_PYTHON_INSTALL_DIR         where the package is installed, relative to the prefix
#   QFORGE_PYTHON_TEST_EXECUTABLE     the interpreter the Python tests run with (needs numpy)
set(PYBIND11_FINDPYTHON ON)
find_package(Python 3.9 COMPONENTS Interpreter Development.Module QUIET)
set(qforge_python_missing "")
if(NOT Python_FOUND)
  set(qforge_python_missing "the Python development headers (Debian: python3-dev)")
else()
  find_package(pybind11 2.10 CONFIG QUIET)
  if(NOT pybind11_FOUND)
    execute_process(COMMAND ${Python_EXECUTABLE} -m pybind11 --cmakedir
                    OUTPUT_VARIABLE qforge_pybind11_dir OUTPUT_STRIP_TRAILING_WHITESPACE
                    RESULT_VARIABLE qforge_pybind11_rc ERROR_QUIET)
    if(qforge_pybind11_rc EQUAL 0)
      find_package(pybind11 2.10 CONFIG QUIET PATHS ${qforge_pybind11_dir} NO_DEFAULT_PATH)
    endif()
  endif()
  if(NOT pybind11_FOUND)
    set(qforge_python_missing "pybind11 (Debian: pybind11-dev)")
  endif()
endif()

if(qforge_python_missing)
  option(QFORGE_BUILD_PYTHON "Build the Python package" OFF)
  if(QFORGE_BUILD_PYTHON)
    message(FATAL_ERROR "QFORGE_BUILD_PYTHON is ON but ${qforge_python_missing} was not found")
  endif()
  message(STATUS "qforge: Python package skipped: ${qforge_python_missing} not found")
  return()
endif()
option(QFORGE_BUILD_PYTHON "Build the Python package" ON)
if(NOT QFORGE_BUILD_PYTHON)
  return()
endif()
message(STATUS "qforge: Python package for ${Python_EXECUTABLE} (${Python_VERSION}), "
               "pybind11 ${pybind11_VERSION}")

# A wheel (scikit-build-core, SKBUILD set) installs everything under the package directory
# (wheel.install-dir = "qforge" in pyproject.toml): the extension at its root, the libraries in
# lib/, the plugins in lib/qforge/plugins, where libqforge_runtime looks beside itself.
if(SKBUILD)
  set(qforge_python_install_default ".")
  # The libraries find each other in lib/ wherever site-packages is.
  set(CMAKE_INSTALL_RPATH "$ORIGIN")
else()
  set(qforge_python_install_default "${CMAKE_INSTALL_LIBDIR}/qforge/python/qforge")
endif()
set(QFORGE_PYTHON_INSTALL_DIR "${qforge_python_install_default}" CACHE STRING
    "Install directory of the Python package qforge, relative to the prefix")
file(RELATIVE_PATH QFORGE_PYTHON_LIBDIR_FROM_PACKAGE
     "/prefix/${QFORGE_PYTHON_INSTALL_DIR}" "/prefix/${CMAKE_INSTALL_LIBDIR}")

# The tests' interpreter: the one found above when it has numpy, unless set.
if(NOT DEFINED QFORGE_PYTHON_TEST_EXECUTABLE)
  execute_process(COMMAND ${Python_EXECUTABLE} -c "import numpy"
                  RESULT_VARIABLE qforge_numpy_rc OUTPUT_QUIET ERROR_QUIET)
  if(qforge_numpy_rc EQUAL 0)
    set(qforge_test_python ${Python_EXECUTABLE})
  else()
    set(qforge_test_python "")
  endif()
  set(QFORGE_PYTHON_TEST_EXECUTABLE "${qforge_test_python}" CACHE FILEPATH
      "Python interpreter (with numpy, python/requirements-test.txt) that runs the Python tests")
endif()
