# Finds OpenBLAS (float GEMM of the model layer, anchor of the benchmarks) and defines
# qforge::openblas: its headers and blas/openblas_loader.cpp, which loads the library on first
# use with the kernels of the CPU it runs on (see that file: Debian's OpenBLAS falls back to SSE3
# kernels on CPUs it does not recognise). The headers come through Debian's OpenBLASConfig.cmake
# or else pkg-config. Never fails the configure step: callers check `TARGET qforge::openblas` and
# say what they skip. -DCMAKE_DISABLE_FIND_PACKAGE_OpenBLAS=ON hides it from both searches.
set(qforge_openblas_missing "OpenBLAS (Debian package libopenblas-dev)")
if(TARGET qforge::openblas OR CMAKE_DISABLE_FIND_PACKAGE_OpenBLAS)
  return()
endif()
set(qforge_openblas_include "")
find_package(OpenBLAS CONFIG QUIET)
if(OpenBLAS_FOUND AND OpenBLAS_LIBRARIES)
  set(qforge_openblas_include "${OpenBLAS_INCLUDE_DIRS}")
else()
  find_package(PkgConfig QUIET)
  if(PkgConfig_FOUND)
    pkg_check_modules(QFORGE_OPENBLAS QUIET openblas)
    if(QFORGE_OPENBLAS_FOUND)
      set(qforge_openblas_include "${QFORGE_OPENBLAS_INCLUDE_DIRS}")
      if(NOT qforge_openblas_include)
        set(qforge_openblas_include "/usr/include")  # pkg-config omits the default directory
      endif()
    endif()
  endif()
endif()
if(NOT qforge_openblas_include)
  return()
endif()
add_library(qforge_openblas_loader STATIC ${CMAKE_CURRENT_LIST_DIR}/../blas/openblas_loader.cpp)
target_include_directories(qforge_openblas_loader SYSTEM PUBLIC ${qforge_openblas_include})
# lapack_cholesky.h: the LAPACK routines the loader defines (build tree only; never installed).
target_include_directories(qforge_openblas_loader
  PUBLIC $<BUILD_INTERFACE:${CMAKE_CURRENT_LIST_DIR}/../blas>)
target_link_libraries(qforge_openblas_loader PUBLIC ${CMAKE_DL_LIBS})
set_target_properties(qforge_openblas_loader PROPERTIES
  POSITION_INDEPENDENT_CODE ON CXX_VISIBILITY_PRESET hidden)
add_library(qforge::openblas ALIAS qforge_openblas_loader)
