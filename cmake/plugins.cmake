# Plugins (README "Bring your own kernel", docs/plugins.md): the executable exports the
# functions of include/ktrial/plugin.h, the header and ktrial-plugin.pc are installed, and
# the example and test plugins are built as modules against the header alone.
target_link_options(ktrial PRIVATE
  -Wl,--dynamic-list=${CMAKE_SOURCE_DIR}/include/ktrial/plugin.syms)
set_property(TARGET ktrial APPEND PROPERTY LINK_DEPENDS
  ${CMAKE_SOURCE_DIR}/include/ktrial/plugin.syms)

file(STRINGS ${CMAKE_SOURCE_DIR}/include/ktrial/plugin.h kt_abi_lines
  REGEX "^#define KT_PLUGIN_ABI_M(AJOR|INOR) +[0-9]+")
string(REGEX REPLACE ".*MAJOR +([0-9]+).*" "\\1" KT_PLUGIN_ABI_MAJOR "${kt_abi_lines}")
string(REGEX REPLACE ".*MINOR +([0-9]+).*" "\\1" KT_PLUGIN_ABI_MINOR "${kt_abi_lines}")
configure_file(cmake/ktrial-plugin.pc.in ${CMAKE_BINARY_DIR}/ktrial-plugin.pc @ONLY)
install(FILES include/ktrial/plugin.h DESTINATION include/ktrial COMPONENT plugin-dev)
install(FILES ${CMAKE_BINARY_DIR}/ktrial-plugin.pc DESTINATION share/pkgconfig
  COMPONENT plugin-dev)

# kt_add_plugin(target source... [FLAGS flag...]): a module built like a team's own plugin.
function(kt_add_plugin target)
  cmake_parse_arguments(P "" "DIR" "SOURCES;FLAGS" ${ARGN})
  add_library(${target} MODULE ${P_SOURCES})
  target_include_directories(${target} PRIVATE ${CMAKE_SOURCE_DIR}/include)
  target_compile_options(${target} PRIVATE ${P_FLAGS})
  set_target_properties(${target} PROPERTIES PREFIX "lib"
    LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/${P_DIR})
endfunction()

kt_add_plugin(kt_gemm_blocked DIR examples/plugins SOURCES examples/plugins/gemm_blocked.c
  FLAGS -O2)
kt_add_plugin(kt_rmsnorm DIR examples/plugins SOURCES examples/plugins/rmsnorm.c FLAGS -O2)
# The same source twice, for experiments/plugin-two-builds.yaml: a plain -O1 build, and an
# -O3 build for the host CPU.
kt_add_plugin(kt_gemm_blocked_o1 DIR examples/plugins/o1 SOURCES examples/plugins/gemm_blocked.c
  FLAGS -O1)
kt_add_plugin(kt_gemm_blocked_o3 DIR examples/plugins/o3 SOURCES examples/plugins/gemm_blocked.c
  FLAGS -O3 -march=native)
set_target_properties(kt_gemm_blocked_o1 kt_gemm_blocked_o3 PROPERTIES OUTPUT_NAME kt_gemm_blocked)

if(KT_BUILD_TESTS)
  file(GLOB kt_test_plugins CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/plugins/*.c)
  foreach(src ${kt_test_plugins})
    get_filename_component(name ${src} NAME_WE)
    kt_add_plugin(kt_test_${name} DIR tests/plugins SOURCES ${src})
  endforeach()
endif()
