# bench_rebuild.sh: time and peak memory of the memory-free adjoint modes (reversible on the
# wave app, backsolve with drift checks on the heat app) against binomial checkpointing at
# equal memory and store mode (issue 8). Run by hand on a Release build for numbers, e.g.
#   tests/bench/bench_rebuild.sh build/release 1      (wave 512^2 x 5000, heat 128^2 x 2000)
# ctest runs a tiny smoke case so the script keeps working; it still checks the gradients.
add_test(NAME bench_rebuild_smoke
  COMMAND ${PROJECT_SOURCE_DIR}/tests/bench/bench_rebuild.sh ${PROJECT_BINARY_DIR} 1)
set_tests_properties(bench_rebuild_smoke PROPERTIES LABELS "bench;smoke" TIMEOUT 300
  ENVIRONMENT "${REWIND_TEST_ENV};NX=33;STEPS=200;NH=64;HSTEPS=400;SLOTS=6;MPIEXEC=${MPIEXEC_EXECUTABLE}"
  PASS_REGULAR_EXPRESSION "BENCH_JSON .*\"checks_passed\":true"
  FAIL_REGULAR_EXPRESSION "FAIL")
