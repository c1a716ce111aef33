# Test helpers.
#  rewind_unit_test(name SOURCES...)     Criterion test binary run by ctest
#  rewind_mpi_test(name NP n COMMAND...) a program run through mpiexec with n ranks
set(REWIND_MPIEXEC_FLAGS --oversubscribe --bind-to none)
set(REWIND_TEST_ENV
  "OMPI_ALLOW_RUN_AS_ROOT=1" "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1"
  "OMPI_MCA_rmaps_base_oversubscribe=1" "OMPI_MCA_btl=self,vader"
  "ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:suppressions=${PROJECT_SOURCE_DIR}/tests/asan.supp"
  "LSAN_OPTIONS=suppressions=${PROJECT_SOURCE_DIR}/tests/lsan.supp:print_suppressions=0"
  "UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1"
  "REWIND_SOURCE_DIR=${PROJECT_SOURCE_DIR}"
  "REWIND_SHARED_DIR=${PROJECT_SOURCE_DIR}/../shared")

function(rewind_unit_test name)
  cmake_parse_arguments(T "" "" "SOURCES;LIBS" ${ARGN})
  add_executable(${name} ${T_SOURCES})
  target_link_libraries(${name} PRIVATE rewind PkgConfig::CRITERION rewind_flags ${T_LIBS})
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/tests)
  # Criterion needs MPI initialised in each test process: tests/rw_test_mpi.h does that.
  add_test(NAME ${name} COMMAND ${name} --jobs 1 -q)
  set_tests_properties(${name} PROPERTIES ENVIRONMENT "${REWIND_TEST_ENV}" SKIP_RETURN_CODE 77
    TIMEOUT 600)
endfunction()

function(rewind_mpi_test name)
  cmake_parse_arguments(T "" "NP" "COMMAND;LABELS" ${ARGN})
  add_test(NAME ${name}
    COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${T_NP} ${REWIND_MPIEXEC_FLAGS}
            ${T_COMMAND})
  set_tests_properties(${name} PROPERTIES ENVIRONMENT "${REWIND_TEST_ENV}" SKIP_RETURN_CODE 77
    TIMEOUT 600 PROCESSORS ${T_NP})
  if(T_LABELS)
    set_tests_properties(${name} PROPERTIES LABELS "${T_LABELS}")
  endif()
endfunction()
