# Finds OpenBLAS (the float GEMM anchor of the benchmarks) as the imported target
# qforge::openblas, through Debian's OpenBLASConfig.cmake or else pkg-config. Never fails the
# configure step: callers check `TARGET qforge::openblas` and say what they skip.
# -DCMAKE_DISABLE_FIND_PACKAGE_OpenBLAS=ON hides it from both searches.
set(qforge_openblas_missing "OpenBLAS (Debian package libopenblas-dev)")
if(TARGET qforge::openblas OR CMAKE_DISABLE_FIND_PACKAGE_OpenBLAS)
  return()
endif()
find_package(OpenBLAS CONFIG QUIET)
if(OpenBLAS_FOUND AND OpenBLAS_LIBRARIES)
  add_library(qforge::openblas INTERFACE IMPORTED GLOBAL)
  set_target_properties(qforge::openblas PROPERTIES
    INTERFACE_LINK_LIBRARIES "${OpenBLAS_LIBRARIES}"
    INTERFACE_INCLUDE_DIRECTORIES "${OpenBLAS_INCLUDE_DIRS}")
  return()
endif()
find_package(PkgConfig QUIET)
if(PkgConfig_FOUND)
  pkg_check_modules(QFORGE_OPENBLAS QUIET IMPORTED_TARGET GLOBAL openblas)
  if(QFORGE_OPENBLAS_FOUND)
    add_library(qforge::openblas ALIAS PkgConfig::QFORGE_OPENBLAS)
  endif()
endif()
