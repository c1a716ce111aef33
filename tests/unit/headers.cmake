# Every public header compiles on its own (its own includes suffice, its include guard works)
# under the project's warnings: one translation unit per header that includes it twice, built
# with the tests (an OBJECT library: it adds no test time, a header that breaks fails the build).
file(GLOB REWIND_PUBLIC_HEADERS CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/include/rewind/*.h)
set(REWIND_HEADER_TUS "")
foreach(h IN LISTS REWIND_PUBLIC_HEADERS)
  get_filename_component(n ${h} NAME_WE)
  set(tu ${CMAKE_CURRENT_BINARY_DIR}/header_check/${n}.c)
  file(CONFIGURE OUTPUT ${tu} CONTENT "#include <rewind/${n}.h>\n#include <rewind/${n}.h>\n")
  list(APPEND REWIND_HEADER_TUS ${tu})
endforeach()
add_library(rewind_header_check OBJECT ${REWIND_HEADER_TUS})
target_link_libraries(rewind_header_check PRIVATE rewind rewind_io rewind_flags)
