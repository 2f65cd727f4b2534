# Driver for the install_consumer test (cmake -P). Every step stops the test with the failing
# command's output, so a broken install rule or package config is named in the ctest log.
cmake_minimum_required(VERSION 3.25)

foreach(var QFORGE_BUILD_DIR CONSUMER_SOURCE_DIR WORK_DIR GENERATOR MAKE_PROGRAM CXX_COMPILER
            INSTALL_LIBDIR INSTALL_BINDIR PLUGIN_INSTALL_DIR)
  if(NOT DEFINED ${var} OR "${${var}}" STREQUAL "")
    message(FATAL_ERROR "run_install_consumer.cmake: -D${var}=... is required")
  endif()
endforeach()

set(prefix ${WORK_DIR}/prefix)
set(consumer_build ${WORK_DIR}/consumer-build)
# Start clean: files left by an older install would hide a missing install rule.
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})

function(step name)
  execute_process(COMMAND ${ARGN}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "install_consumer: ${name} failed (exit ${rc})\n"
                        "command: ${ARGN}\n${out}\n${err}")
  endif()
  message(STATUS "install_consumer: ${name}: ok")
  set(step_output "${out}" PARENT_SCOPE)
endfunction()

step("cmake --install" ${CMAKE_COMMAND} --install ${QFORGE_BUILD_DIR} --prefix ${prefix})

foreach(required
    include/qforge/qforge.h
    ${INSTALL_LIBDIR}/cmake/qforge/qforgeConfig.cmake
    ${INSTALL_LIBDIR}/cmake/qforge/qforgeTargets.cmake)
  if(NOT EXISTS ${prefix}/${required})
    message(FATAL_ERROR "install_consumer: ${required} was not installed under ${prefix}")
  endif()
endforeach()

step("configure consumer" ${CMAKE_COMMAND} -S ${CONSUMER_SOURCE_DIR} -B ${consumer_build}
  -G ${GENERATOR} -DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM} -DCMAKE_CXX_COMPILER=${CXX_COMPILER}
  -DCMAKE_BUILD_TYPE=Release
  -DCMAKE_PREFIX_PATH=${prefix})
step("build consumer" ${CMAKE_COMMAND} --build ${consumer_build})

# The consumer's link line names the installed core libraries, and CMake's build RPATH points
# there, so this run uses the installed library rather than the build tree's.
set(plugin_dir ${prefix}/${PLUGIN_INSTALL_DIR})
set(consumer ${consumer_build}/qforge_consumer)
if(EXPECT_PLUGIN)
  step("run consumer" ${consumer} ${plugin_dir} ${EXPECT_PLUGIN})
else()
  step("run consumer" ${consumer})
endif()
message(STATUS "${step_output}")

if(EXPECT_HWINFO)
  # The installed tool, run with the installed plugins (its built-in plugin directory is the
  # configured prefix, not this scratch one).
  set(ENV{QFORGE_PLUGIN_PATH} ${plugin_dir})
  step("installed qforge-hwinfo" ${prefix}/${INSTALL_BINDIR}/qforge-hwinfo --op quantize)
  if(EXPECT_PLUGIN AND NOT step_output MATCHES "${EXPECT_PLUGIN}")
    message(FATAL_ERROR "install_consumer: installed qforge-hwinfo did not list ${EXPECT_PLUGIN}:\n"
                        "${step_output}")
  endif()
endif()
