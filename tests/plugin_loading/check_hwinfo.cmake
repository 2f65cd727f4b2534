# Runs qforge-hwinfo with QFORGE_PLUGIN_PATH naming only the broken plugins and checks that it
# still exits 0 and that its own report (logging off) names every broken plugin and the reason.
#   cmake -DHWINFO=<qforge-hwinfo> -DBROKEN_DIR=<dir> -P check_hwinfo.cmake
if(NOT EXISTS "${HWINFO}")
  message(FATAL_ERROR "${HWINFO} does not exist; build the qforge-hwinfo target first")
endif()
execute_process(
  COMMAND ${CMAKE_COMMAND} -E env QFORGE_PLUGIN_PATH=${BROKEN_DIR} QFORGE_LOG_LEVEL=off ${HWINFO}
  RESULT_VARIABLE rc
  OUTPUT_VARIABLE out
  ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "qforge-hwinfo exited with ${rc} when loading broken plugins:\n${out}\n${err}")
endif()
set(report "${out}${err}")
# file name, then a fact its failure message must carry
set(expected
  "libqforge_plugin_not_a_library.so|not a shared library"
  "libqforge_plugin_wrong_arch.so|aarch64"
  "libqforge_plugin_missing_dep.so|libqforge_test_missing_dep.so"
  "libqforge_plugin_no_entry.so|qforge_plugin_entry"
  "libqforge_plugin_abi_mismatch.so|999"
  "libqforge_plugin_init_throws.so|simulated driver error 42"
  "libqforge_plugin_create_throws.so|escaped on purpose")
foreach(pair IN LISTS expected)
  string(REPLACE "|" ";" parts "${pair}")
  list(GET parts 0 file)
  list(GET parts 1 fact)
  foreach(needle "${file}" "${fact}")
    string(FIND "${report}" "${needle}" at)
    if(at EQUAL -1)
      message(FATAL_ERROR "qforge-hwinfo's report does not mention '${needle}' (for ${file}):\n${report}")
    endif()
  endforeach()
endforeach()
message(STATUS "qforge-hwinfo reported every broken plugin and exited 0")
