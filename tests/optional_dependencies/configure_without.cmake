cmake_minimum_required(VERSION 3.25)
# Run by ctest (see CMakeLists.txt). For each package hidden, the regex the configure output
# must match. The oneDNN line depends on whether libdnnl-dev is installed: without OpenCL it is
# either built from libdnnl directly or skipped with the reason.
set(all_packages dnnl OpenCL Vulkan CUDAToolkit OpenBLAS)
set(expect_dnnl "qforge: oneDNN backend skipped: oneDNN [^\n]*libdnnl-dev")
set(expect_OpenCL "qforge: oneDNN backend (enabled [^\n]*ocl-icd-opencl-dev|skipped: [^\n]*libdnnl-dev)")
set(expect_Vulkan "qforge: Vulkan backend skipped: [^\n]*libvulkan-dev")
set(expect_CUDAToolkit "qforge: CUDA backend skipped: [^\n]*(CUDA toolkit|nvcc)")
set(expect_OpenBLAS "qforge: model layer skipped: OpenBLAS [^\n]*libopenblas-dev")
set(build_dir ${WORK_DIR}/build)
file(MAKE_DIRECTORY ${WORK_DIR})

# Configures the scratch tree with the packages in ARGN hidden; the output goes to OUT_VAR.
function(configure_hiding out_var)
  set(flags)
  set(hidden ${ARGN})
  foreach(pkg ${all_packages})
    if(pkg IN_LIST hidden)
      list(APPEND flags -DCMAKE_DISABLE_FIND_PACKAGE_${pkg}=ON)
    else()
      list(APPEND flags -DCMAKE_DISABLE_FIND_PACKAGE_${pkg}=OFF)
    endif()
  endforeach()
  # No optimisation and no cpu_x86 (which qforge-hwinfo would build with it): this test checks
  # that things configure, link and load, not speed.
  execute_process(
    COMMAND ${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${build_dir} -G ${GENERATOR}
      -DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM} -DCMAKE_CXX_COMPILER=${CXX_COMPILER}
      -DCMAKE_BUILD_TYPE=None -DQFORGE_ENABLE_CPU_X86=OFF -DQFORGE_ENABLE_ONEDNN=AUTO ${flags}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "configure with ${ARGN} hidden failed (exit ${rc}):\n${out}\n${err}")
  endif()
  set(${out_var} "${out}\n${err}" PARENT_SCOPE)
endfunction()

function(build)
  execute_process(COMMAND ${CMAKE_COMMAND} --build ${build_dir} --target ${ARGN}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "building ${ARGN} failed (exit ${rc}):\n${out}\n${err}")
  endif()
endfunction()

# Every optional dependency hidden at once: the core of qforge still builds and runs.
configure_hiding(out ${all_packages})
foreach(pkg ${all_packages})
  set(expected "${expect_${pkg}}")
  if(NOT out MATCHES "${expected}")
    message(FATAL_ERROR "with every optional package hidden, configure did not say \"${expected}\":\n${out}")
  endif()
endforeach()
build(qforge_base qforge_runtime qforge_plugin_cpu_scalar qforge-hwinfo)
execute_process(COMMAND ${build_dir}/bin/qforge-hwinfo --verbose
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT out MATCHES "cpu_scalar")
  message(FATAL_ERROR "qforge-hwinfo of the minimal build failed (exit ${rc}) or did not list cpu_scalar:\n${out}\n${err}")
endif()
message(STATUS "all hidden: configured, built core, cpu_scalar and qforge-hwinfo, ran qforge-hwinfo")

# One package hidden at a time: configure names exactly what it skipped.
foreach(pkg ${all_packages})
  set(expected "${expect_${pkg}}")
  configure_hiding(out ${pkg})
  if(NOT out MATCHES "${expected}")
    message(FATAL_ERROR "with ${pkg} hidden, configure did not say \"${expected}\":\n${out}")
  endif()
  string(REGEX MATCH "${expected}" line "${out}")
  message(STATUS "${pkg} hidden: ${line}")
  # Without OpenCL the onednn plugin is linked against libdnnl directly: prove it links.
  if(pkg STREQUAL "OpenCL" AND line MATCHES "enabled")
    build(qforge_plugin_onednn)
    message(STATUS "OpenCL hidden: qforge_plugin_onednn built")
  endif()
endforeach()

# ON still fails loudly when what the backend needs is missing.
execute_process(
  COMMAND ${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${build_dir} -DQFORGE_ENABLE_ONEDNN=ON
    -DCMAKE_DISABLE_FIND_PACKAGE_dnnl=ON
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(rc EQUAL 0 OR NOT "${out}${err}" MATCHES "QFORGE_ENABLE_ONEDNN=ON but oneDNN")
  message(FATAL_ERROR "QFORGE_ENABLE_ONEDNN=ON with oneDNN hidden should fail configure naming "
                      "it (exit ${rc}):\n${out}\n${err}")
endif()
message(STATUS "QFORGE_ENABLE_ONEDNN=ON with dnnl hidden: configure failed, naming oneDNN")
