# qforge_add_library(<target> EXPORT_NAME <name> BUILDING <macro> [RECURSE] [SOURCES ...])
#
# One shared library of qforge from the folder it is called in: its sources are src/*.cpp
# (src/**/*.cpp with RECURSE; the SOURCES given instead, where a folder holds two libraries), its
# public headers include/ (installed), src/ its private include
# root. It gets the alias qforge::<name>, the project's version and soversion, <macro> defined
# while building it (the export macro of its export header), -Wall -Wextra, and it joins the
# installed package (qforgeTargets). Links and further options are the caller's.
function(qforge_add_library target)
  cmake_parse_arguments(ARG "RECURSE" "EXPORT_NAME;BUILDING" "SOURCES" ${ARGN})
  if(NOT ARG_EXPORT_NAME OR NOT ARG_BUILDING)
    message(FATAL_ERROR "qforge_add_library(${target}): EXPORT_NAME and BUILDING are required")
  endif()
  if(ARG_SOURCES)
    set(sources ${ARG_SOURCES})
  elseif(ARG_RECURSE)
    file(GLOB_RECURSE sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/src/*.cpp)
  else()
    file(GLOB sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/src/*.cpp)
  endif()
  add_library(${target} SHARED ${sources})
  add_library(qforge::${ARG_EXPORT_NAME} ALIAS ${target})
  set_target_properties(${target} PROPERTIES
    EXPORT_NAME ${ARG_EXPORT_NAME}
    VERSION ${PROJECT_VERSION}
    SOVERSION ${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR})
  target_compile_definitions(${target} PRIVATE ${ARG_BUILDING})
  target_include_directories(${target}
    PUBLIC $<BUILD_INTERFACE:${CMAKE_CURRENT_SOURCE_DIR}/include>
           $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>
    PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/src)
  target_compile_options(${target} PRIVATE -Wall -Wextra)
  install(TARGETS ${target} EXPORT qforgeTargets
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
    RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  install(DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}/include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
endfunction()
