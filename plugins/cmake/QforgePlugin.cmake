# qforge_add_plugin(<name> SOURCES ... [LIBRARIES ...] [OUTPUT_DIRECTORY dir] [NO_INSTALL])
#
# Builds a qforge backend plugin as a MODULE library named libqforge_plugin_<name>.so (the
# prefix the registry scans for), linked against qforge::base (never the runtime: a plugin
# needs types, descriptors and the reference, not the registry or the accelerator) and the
# plugin SDK, with hidden symbols so the only export is qforge_plugin_entry. After ggml's
# ggml_add_backend_library.
function(qforge_add_plugin name)
  cmake_parse_arguments(ARG "NO_INSTALL" "OUTPUT_DIRECTORY" "SOURCES;LIBRARIES" ${ARGN})
  set(target qforge_plugin_${name})
  add_library(${target} MODULE ${ARG_SOURCES})
  target_link_libraries(${target} PRIVATE qforge::base qforge::plugin_sdk ${ARG_LIBRARIES})
  if(NOT ARG_OUTPUT_DIRECTORY)
    set(ARG_OUTPUT_DIRECTORY ${QFORGE_PLUGIN_OUTPUT_DIRECTORY})
  endif()
  set_target_properties(${target} PROPERTIES
    PREFIX "lib"
    OUTPUT_NAME qforge_plugin_${name}
    LIBRARY_OUTPUT_DIRECTORY ${ARG_OUTPUT_DIRECTORY}
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON
    # Finds libqforge_base next to the plugin's install dir and in the build tree.
    INSTALL_RPATH "$ORIGIN/../..;$ORIGIN/../../${CMAKE_INSTALL_LIBDIR}")
  if(NOT ARG_NO_INSTALL)
    install(TARGETS ${target} LIBRARY DESTINATION ${QFORGE_INSTALL_PLUGINDIR})
  endif()
endfunction()
