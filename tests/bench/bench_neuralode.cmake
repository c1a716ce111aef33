# bench_neuralode.sh: time and peak RSS of one loss + gradient of the neural-ODE reference
# problem P0 (rk38 at N = 100, 1000, 10000 in store mode and binomial with sqrt(N) slots,
# dopri5 adaptive; 1 rank x 1 thread, 1 rank x 2 BLAS threads, 2 ranks), its FLOP rate against
# one core's DGEMM rate (bench_dgemm), and the torchdiffeq figures of issue 9. Run by hand on a
# Release build for numbers, e.g.
#   tests/bench/bench_neuralode.sh build/release
# ctest runs the smoke case (N = 100, 1 rank, one repeat); it still checks the loss.
add_executable(bench_dgemm ${CMAKE_CURRENT_SOURCE_DIR}/bench_dgemm.c)
target_link_libraries(bench_dgemm PRIVATE rewind BLAS::BLAS rewind_flags)

add_test(NAME bench_neuralode_smoke
  COMMAND ${PROJECT_SOURCE_DIR}/tests/bench/bench_neuralode.sh ${PROJECT_BINARY_DIR} --smoke)
set_tests_properties(bench_neuralode_smoke PROPERTIES LABELS "bench;smoke" TIMEOUT 300
  ENVIRONMENT "${REWIND_TEST_ENV};MPIEXEC=${MPIEXEC_EXECUTABLE}"
  PASS_REGULAR_EXPRESSION "BENCH_JSON .*\"checks_passed\":true"
  FAIL_REGULAR_EXPRESSION "FAIL")
