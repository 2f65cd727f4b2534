# Finds oneDNN for the onednn plugin without ever failing the configure step.
#
# Debian's libdnnl-dev was built with the OpenCL GPU runtime, so its dnnl-config.cmake calls
# find_package(OpenCL REQUIRED): without the OpenCL development files (ocl-icd-opencl-dev, only
# *recommended* by libdnnl-dev) that is a fatal error no caller can catch. The plugin uses oneDNN's
# CPU engine only and libdnnl.so carries its own runtime dependency on libOpenCL.so.1, so when
# OpenCL cannot be found the library and headers are located directly instead.
#
# Sets qforge_dnnl_target (the target to link), qforge_dnnl_version, qforge_dnnl_cpu_runtime,
# qforge_dnnl_how (how it was found) or, when oneDNN is unusable, qforge_dnnl_missing (what is
# missing and the Debian package that provides it).
unset(qforge_dnnl_target)
unset(qforge_dnnl_missing)

find_package(OpenCL QUIET)
if(OpenCL_FOUND)
  find_package(dnnl 2.6 QUIET CONFIG)
  if(dnnl_FOUND)
    set(qforge_dnnl_target DNNL::dnnl)
    set(qforge_dnnl_version ${dnnl_VERSION})
    set(qforge_dnnl_cpu_runtime ${DNNL_CPU_RUNTIME})
    set(qforge_dnnl_how "dnnl-config.cmake")
    return()
  endif()
endif()

# Honour -DCMAKE_DISABLE_FIND_PACKAGE_dnnl=ON for the direct search too.
if(CMAKE_DISABLE_FIND_PACKAGE_dnnl)
  set(qforge_dnnl_missing "oneDNN (hidden by CMAKE_DISABLE_FIND_PACKAGE_dnnl; Debian package libdnnl-dev)")
  return()
endif()

find_path(QFORGE_DNNL_INCLUDE_DIR oneapi/dnnl/dnnl.hpp)
find_library(QFORGE_DNNL_LIBRARY dnnl)
if(NOT QFORGE_DNNL_INCLUDE_DIR OR NOT QFORGE_DNNL_LIBRARY)
  set(qforge_dnnl_missing "oneDNN >= 2.6 (Debian package libdnnl-dev, or set dnnl_DIR)")
  return()
endif()

file(STRINGS ${QFORGE_DNNL_INCLUDE_DIR}/oneapi/dnnl/dnnl_version.h qforge_dnnl_version_lines
     REGEX "#define DNNL_VERSION_(MAJOR|MINOR|PATCH) ")
foreach(part MAJOR MINOR PATCH)
  string(REGEX REPLACE ".*#define DNNL_VERSION_${part} ([0-9]+).*" "\\1" qforge_dnnl_${part}
         "${qforge_dnnl_version_lines}")
endforeach()
set(qforge_dnnl_version "${qforge_dnnl_MAJOR}.${qforge_dnnl_MINOR}.${qforge_dnnl_PATCH}")
if(qforge_dnnl_version VERSION_LESS 2.6)
  set(qforge_dnnl_missing "oneDNN >= 2.6 (found ${qforge_dnnl_version}; Debian package libdnnl-dev)")
  return()
endif()

file(STRINGS ${QFORGE_DNNL_INCLUDE_DIR}/oneapi/dnnl/dnnl_config.h qforge_dnnl_runtime_line
     REGEX "#define DNNL_CPU_RUNTIME ")
string(REGEX REPLACE ".*DNNL_RUNTIME_([A-Z]+).*" "\\1" qforge_dnnl_cpu_runtime "${qforge_dnnl_runtime_line}")

if(NOT TARGET qforge::dnnl_direct)
  add_library(qforge::dnnl_direct UNKNOWN IMPORTED)
  set_target_properties(qforge::dnnl_direct PROPERTIES
    IMPORTED_LOCATION ${QFORGE_DNNL_LIBRARY}
    INTERFACE_INCLUDE_DIRECTORIES ${QFORGE_DNNL_INCLUDE_DIR})
endif()
set(qforge_dnnl_target qforge::dnnl_direct)
if(OpenCL_FOUND)
  set(qforge_dnnl_how "${QFORGE_DNNL_LIBRARY} (dnnl-config.cmake not found)")
else()
  string(CONCAT qforge_dnnl_how "${QFORGE_DNNL_LIBRARY} directly (OpenCL development files, "
         "Debian package ocl-icd-opencl-dev, not found, so dnnl-config.cmake cannot be used; "
         "the plugin needs only the CPU engine)")
endif()
