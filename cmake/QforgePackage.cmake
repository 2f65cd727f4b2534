# Installs the exported targets and a package config so that, after `cmake --install`,
# `find_package(qforge CONFIG)` gives qforge::core (libqforge_base and libqforge_runtime), qforge::base (what plugins link) and
# qforge::plugin_sdk for plugin authors.
include(CMakePackageConfigHelpers)
install(TARGETS qforge_plugin_sdk EXPORT qforgeTargets)
install(EXPORT qforgeTargets NAMESPACE qforge:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/qforge)
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/qforgeConfig.cmake.in
  ${CMAKE_BINARY_DIR}/qforgeConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/qforge)
write_basic_package_version_file(${CMAKE_BINARY_DIR}/qforgeConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/qforgeConfig.cmake ${CMAKE_BINARY_DIR}/qforgeConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/qforge)
