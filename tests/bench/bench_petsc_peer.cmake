# bench_petsc_peer.sh (issue 10): PETSc 3.18's ex5adj_mf (built from the Debian package
# libpetsc3.18-dev-examples into <build>/petsc-peer) beside rewind-grayscott on Gray-Scott 128^2,
# RK4, 500 steps, 1 and 2 ranks: times side by side, ratios, peak RSS, the issue's goals, and a
# check that both compute the same J and dJ/dy0. Run by hand on a Release build for numbers, e.g.
#   cmake --preset release -B build/peer && cmake --build build/peer --target rewind-grayscott
#   tests/bench/bench_petsc_peer.sh build/peer 3
# ctest runs a smoke case (20 steps, 1 rank, one repeat) that checks the harness and the
# agreement of the results; it never installs packages (PEER_INSTALL=0) and is skipped (77)
# when the PETSc examples are not installed.
add_test(NAME bench_petsc_peer_smoke
  COMMAND ${PROJECT_SOURCE_DIR}/tests/bench/bench_petsc_peer.sh ${PROJECT_BINARY_DIR} 1)
set_tests_properties(bench_petsc_peer_smoke PROPERTIES LABELS "bench;smoke" TIMEOUT 300
  SKIP_RETURN_CODE 77 SKIP_REGULAR_EXPRESSION "SKIP: "
  ENVIRONMENT "${REWIND_TEST_ENV};MPIRUN=${MPIEXEC_EXECUTABLE};PEER_STEPS=20;PEER_RANKS=1;PEER_INSTALL=0"
  PASS_REGULAR_EXPRESSION "peer check: PASS"
  FAIL_REGULAR_EXPRESSION "FAIL")
