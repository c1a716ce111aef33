# Test helpers.
#  rewind_unit_test(name SOURCES...)     Criterion test binary run by ctest
#  rewind_mpi_test(name NP n COMMAND...) a program run through mpiexec with n ranks
set(REWIND_MPIEXEC_FLAGS --oversubscribe --bind-to none)
set(REWIND_TEST_ENV
  "OMPI_ALLOW_RUN_AS_ROOT=1" "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1"
  "OMPI_MCA_rmaps_base_oversubscribe=1" "OMPI_MCA_btl=self,vader"
  # When a rank exits non-zero (every bad-input and fault-injection case), mpiexec signals the
  # job's processes and then waits odls_base_sigkill_timeout seconds (1 by default, twice) before
  # it exits itself: 2 s of idle time per refused run, 20-30 s in a restart script. Rewind
  # installs no SIGTERM handler, so a grace period changes nothing the tests check.
  "OMPI_MCA_odls_base_sigkill_timeout=0"
  # A program started without mpiexec (every Criterion test process, each its own singleton)
  # would fork a support daemon in MPI_Init, about 0.3 s each; no test spawns processes.
  "OMPI_MCA_ess_singleton_isolated=1"
  # LeakSanitizer is off: OpenMPI's dlopen'ed components leak at exit and their frames cannot
  # be symbolised or suppressed. Rewind's own leaks are caught by the counting allocator
  # (tests assert rw_mem_current() returns to its starting value).
  "ASAN_OPTIONS=detect_leaks=0:abort_on_error=0"
  "UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1"
  "REWIND_SOURCE_DIR=${PROJECT_SOURCE_DIR}"
  "REWIND_SHARED_DIR=${PROJECT_SOURCE_DIR}/../shared")

# Every test gets its own Open MPI session directory (orte_tmpdir_base). A program started
# without mpiexec runs as an isolated singleton (ess_singleton_isolated above), and every such
# singleton on a host takes the same name, [[0,1],0], so two running at once (ctest -j) share
# <tmp>/ompi.<host>.<uid>/jf.0/1/0: the first to finish removes it while the other is creating
# or using it, and the other's MPI_Init fails ("A call to mkdir was unable to create the
# desired directory"). The root is short (Open MPI puts its shared-memory files there).
string(LENGTH "${CMAKE_BINARY_DIR}" REWIND_BINARY_DIR_LENGTH)
if(REWIND_BINARY_DIR_LENGTH LESS 100)
  set(REWIND_TEST_SESSION_ROOT "${CMAKE_BINARY_DIR}/mpi-sessions")
else()
  string(MD5 REWIND_BINARY_DIR_HASH "${CMAKE_BINARY_DIR}")
  string(SUBSTRING "${REWIND_BINARY_DIR_HASH}" 0 12 REWIND_BINARY_DIR_HASH)
  set(REWIND_TEST_SESSION_ROOT "/tmp/rewind-mpi-sessions-${REWIND_BINARY_DIR_HASH}")
endif()

function(_rewind_isolate_mpi_sessions_now)
  get_property(tests DIRECTORY PROPERTY TESTS)
  get_property(n GLOBAL PROPERTY REWIND_TEST_SESSION_COUNT)
  if("${n}" STREQUAL "")
    set(n 0)
  endif()
  foreach(t IN LISTS tests)
    math(EXPR n "${n} + 1")
    set_property(TEST ${t} APPEND PROPERTY ENVIRONMENT
      "OMPI_MCA_orte_tmpdir_base=${REWIND_TEST_SESSION_ROOT}/${n}")
  endforeach()
  set_property(GLOBAL PROPERTY REWIND_TEST_SESSION_COUNT ${n})
endfunction()

# Called once at the top of each directory that registers tests: at the end of the directory
# (after every add_test in it), gives each of its tests its own session directory.
function(rewind_isolate_mpi_sessions)
  cmake_language(DEFER DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR} CALL _rewind_isolate_mpi_sessions_now)
endfunction()

function(rewind_unit_test name)
  cmake_parse_arguments(T "" "" "SOURCES;LIBS" ${ARGN})
  add_executable(${name} ${T_SOURCES})
  target_link_libraries(${name} PRIVATE rewind PkgConfig::CRITERION rewind_flags ${T_LIBS})
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/tests)
  # Criterion needs MPI initialised in each test process: tests/rw_test_mpi.h does that.
  # Not -q: that hides the failed assertions too, and a test that fails once in CI then says
  # nothing about why. Criterion's default prints failures, warnings and the synthesis only.
  add_test(NAME ${name} COMMAND ${name} --jobs 1)
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

# An MPI run whose exit status (RC zero|nonzero) and output (REGEX) are both checked:
# PASS_REGULAR_EXPRESSION alone would ignore the exit status. REGEX and FORBID are taken whole,
# semicolons included (PARSE_ARGV, and escaped on the way to expect.cmake): parsed from ${ARGN},
# a message's "...; give it once" split there and only its first part was checked (until
# 2026-12-02; expect_regex_past_semicolon checks it).
function(rewind_mpi_expect name)
  cmake_parse_arguments(PARSE_ARGV 1 T "" "NP;RC;REGEX;FORBID" "COMMAND")
  set(cmd ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${T_NP} ${REWIND_MPIEXEC_FLAGS} ${T_COMMAND})
  string(REPLACE ";" "\\;" cmdarg "${cmd}")
  set(args -DRC=${T_RC} "-DCMD=${cmdarg}")
  if(DEFINED T_REGEX)
    string(REPLACE ";" "\\;" rx "${T_REGEX}")
    list(APPEND args "-DREGEX=${rx}")
  endif()
  if(DEFINED T_FORBID)
    string(REPLACE ";" "\\;" fx "${T_FORBID}")
    list(APPEND args "-DFORBID=${fx}")
  endif()
  add_test(NAME ${name} COMMAND ${CMAKE_COMMAND} ${args} -P ${PROJECT_SOURCE_DIR}/tests/scripts/expect.cmake)
  set_tests_properties(${name} PROPERTIES ENVIRONMENT "${REWIND_TEST_ENV}" TIMEOUT 600
    PROCESSORS ${T_NP})
endfunction()

# Result files that must agree bit for bit: for each dataset (or group) D, a test
# <prefix>_<D's last name> comparing A.h5 and B.h5 at tolerance 0 (h5_relnorm.py), after the
# tests that write them.
#   rewind_h5_same(prefix A B DATASETS /gradient/x ... DEPENDS test ...)
function(rewind_h5_same prefix a b)
  cmake_parse_arguments(T "" "" "DATASETS;DEPENDS" ${ARGN})
  foreach(ds IN LISTS T_DATASETS)
    get_filename_component(leaf ${ds} NAME)
    add_test(NAME ${prefix}_${leaf}
      COMMAND ${PROJECT_SOURCE_DIR}/tests/scripts/h5_relnorm.py ${a} ${b} ${ds} 0)
    set_tests_properties(${prefix}_${leaf} PROPERTIES DEPENDS "${T_DEPENDS}" SKIP_RETURN_CODE 77)
  endforeach()
endfunction()
