# bench_adjoint_lv: forward vs forward+adjoint time and memory on a Lotka-Volterra ensemble
# (see the comment at the top of bench_adjoint_lv.c). Run by hand for numbers, e.g.
#   mpiexec -n 1 tests/bench/bench_adjoint_lv --members 1000 --steps 10000 --repeat 5
# ctest runs only a tiny smoke case so the program keeps building and running.
add_executable(bench_adjoint_lv ${CMAKE_CURRENT_SOURCE_DIR}/bench_adjoint_lv.c)
target_link_libraries(bench_adjoint_lv PRIVATE rewind rewind_flags MPI::MPI_C)

rewind_mpi_test(bench_adjoint_lv_smoke NP 1
  COMMAND $<TARGET_FILE:bench_adjoint_lv> --members 10 --steps 100 --repeat 1)
set_tests_properties(bench_adjoint_lv_smoke PROPERTIES LABELS "bench;smoke")

# An unknown flag must be rejected with exit status 2 (run as an MPI singleton).
add_test(NAME bench_adjoint_lv_badflag
  COMMAND sh -c "\"$1\" --no-such-flag; test $? -eq 2" sh $<TARGET_FILE:bench_adjoint_lv>)
set_tests_properties(bench_adjoint_lv_badflag PROPERTIES LABELS "bench;smoke"
  ENVIRONMENT "${REWIND_TEST_ENV}" TIMEOUT 60)
