# Installs the build tree into a scratch prefix, then configures, builds and runs a consumer
# project with find_package(Rewind), and checks the pkg-config file.
# -DBUILD_DIR=... -DSOURCE_DIR=... -DWORK=...
file(REMOVE_RECURSE ${WORK})
execute_process(COMMAND ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${WORK}/prefix
                RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cmake --install failed: ${err}")
endif()
foreach(f include/rewind/rw_adjoint.h lib/cmake/Rewind/RewindConfig.cmake bin/rewind-ode bin/rewind-plan)
  if(NOT EXISTS ${WORK}/prefix/${f})
    message(FATAL_ERROR "not installed: ${f}")
  endif()
endforeach()
file(GLOB pc ${WORK}/prefix/lib*/pkgconfig/rewind.pc ${WORK}/prefix/lib/*/pkgconfig/rewind.pc)
if(NOT pc)
  message(FATAL_ERROR "rewind.pc not installed")
endif()
set(flags "")
if(SANITIZE)
  # An instrumented library needs the sanitizer runtime in the executable.
  set(flags "-DCMAKE_C_FLAGS=-fsanitize=address,undefined")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/install/consumer -B ${WORK}/consumer
                -DCMAKE_PREFIX_PATH=${WORK}/prefix ${flags} RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "configuring the consumer failed: ${err}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build ${WORK}/consumer RESULT_VARIABLE rc
                OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "building the consumer failed: ${out}${err}")
endif()
execute_process(COMMAND ${WORK}/consumer/consumer RESULT_VARIABLE rc OUTPUT_VARIABLE out
                ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT out MATCHES "dJ/dmu")
  message(FATAL_ERROR "the consumer failed: ${out}${err}")
endif()
message(STATUS "${out}")
