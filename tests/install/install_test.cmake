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
# pkg-config must point into this prefix (not the configure-time CMAKE_INSTALL_PREFIX), at the
# headers and both libraries
list(GET pc 0 pc)
get_filename_component(pcdir ${pc} DIRECTORY)
find_program(PKG_CONFIG_EXE pkg-config)
if(PKG_CONFIG_EXE)
  execute_process(COMMAND ${CMAKE_COMMAND} -E env PKG_CONFIG_PATH=${pcdir}
                  ${PKG_CONFIG_EXE} --cflags-only-I --libs-only-L --libs-only-l rewind
                  RESULT_VARIABLE rc OUTPUT_VARIABLE pcout ERROR_VARIABLE err
                  OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "pkg-config rewind failed: ${err}")
  endif()
  string(REGEX MATCH "-I([^ ]+)" m "${pcout}")
  set(incdir ${CMAKE_MATCH_1})
  string(REGEX MATCH "-L([^ ]+)" m "${pcout}")
  set(libdir ${CMAKE_MATCH_1})
  # rewind: the library alone (a user of the C API does not link PETSc through librewind_io);
  # rewind-io: librewind_io on top of it
  if(NOT EXISTS "${incdir}/rewind/rw_adjoint.h" OR NOT EXISTS "${libdir}"
     OR NOT pcout MATCHES "-lrewind " OR pcout MATCHES "-lrewind_io")
    message(FATAL_ERROR "pkg-config rewind gives '${pcout}': not the installed headers and "
                        "librewind alone")
  endif()
  execute_process(COMMAND ${CMAKE_COMMAND} -E env PKG_CONFIG_PATH=${pcdir}
                  ${PKG_CONFIG_EXE} --libs-only-l rewind-io
                  RESULT_VARIABLE rc OUTPUT_VARIABLE ioout ERROR_VARIABLE err
                  OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT rc EQUAL 0 OR NOT ioout MATCHES "-lrewind_io" OR NOT ioout MATCHES "-lrewind ")
    message(FATAL_ERROR "pkg-config rewind-io gives '${ioout}' (${err}): not librewind_io on top "
                        "of librewind")
  endif()
  file(GLOB iolib ${libdir}/librewind_io.*)
  if(NOT iolib)
    message(FATAL_ERROR "pkg-config's libdir ${libdir} holds no librewind_io")
  endif()
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

# The examples, built from their installed copy against the installed package (find_package),
# and run: each checks its own gradient against finite differences and exits non-zero when they
# disagree. Then the same example built with nothing but the compiler and pkg-config.
set(exsrc ${WORK}/prefix/${DATADIR}/rewind/examples)
foreach(f CMakeLists.txt advection_diffusion_1d.c)
  if(NOT EXISTS ${exsrc}/${f})
    message(FATAL_ERROR "not installed: ${DATADIR}/rewind/examples/${f}")
  endif()
endforeach()
execute_process(COMMAND ${CMAKE_COMMAND} -S ${exsrc} -B ${WORK}/examples
                -DCMAKE_PREFIX_PATH=${WORK}/prefix ${flags} RESULT_VARIABLE rc OUTPUT_QUIET
                ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "configuring the installed examples failed: ${err}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build ${WORK}/examples RESULT_VARIABLE rc
                OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "building the installed examples failed: ${out}${err}")
endif()
function(run_example exe np)
  execute_process(COMMAND ${MPIEXEC} -n ${np} ${MPIEXEC_FLAGS} ${exe} ${ARGN}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0 OR NOT out MATCHES "gradient check passed")
    message(FATAL_ERROR "the installed example ${exe} failed (exit ${rc}): ${out}${err}")
  endif()
endfunction()
run_example(${WORK}/examples/advection_diffusion_1d 2)
run_example(${WORK}/examples/advection_diffusion_1d 2 -adaptive)
if(PKG_CONFIG_EXE AND CC)
  set(sflags "")
  if(SANITIZE)
    set(sflags -fsanitize=address,undefined)
  endif()
  execute_process(COMMAND ${CMAKE_COMMAND} -E env PKG_CONFIG_PATH=${pcdir}
                  ${PKG_CONFIG_EXE} --cflags --libs rewind
                  RESULT_VARIABLE rc OUTPUT_VARIABLE pcflags OUTPUT_STRIP_TRAILING_WHITESPACE)
  separate_arguments(pcflags UNIX_COMMAND "${pcflags}")
  execute_process(COMMAND ${CC} -std=c11 -Wall -Wextra -pedantic ${sflags}
                  ${exsrc}/advection_diffusion_1d.c -o ${WORK}/advection_diffusion_1d_pc ${pcflags}
                  -Wl,-rpath,${libdir}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0 OR err MATCHES "warning")
    message(FATAL_ERROR "building the example with pkg-config's flags failed: ${out}${err}")
  endif()
  run_example(${WORK}/advection_diffusion_1d_pc 1)
  # built from rewind.pc alone, the program loads neither librewind_io nor PETSc
  execute_process(COMMAND ldd ${WORK}/advection_diffusion_1d_pc OUTPUT_VARIABLE deps
                  RESULT_VARIABLE rc)
  if(rc EQUAL 0 AND (deps MATCHES "librewind_io" OR deps MATCHES "libpetsc"))
    message(FATAL_ERROR "a program built with pkg-config rewind loads librewind_io or PETSc:\n${deps}")
  endif()
endif()
message(STATUS "installed examples built and run")
