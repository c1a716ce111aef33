# bench_noise: the cost of drawing Gray-Scott's space-time white noise for one step against one
# rhs evaluation (and one em / sheun / RK4 step), and the memory a stored-noise scheme would
# need for a run against Rewind's zero (issue 12; see the comment at the top of bench_noise.c).
# Run by hand for numbers (Release build):
#   mpiexec -n 1 tests/bench/bench_noise --n 512 --steps 1000
# ctest runs a tiny smoke case so the program keeps building and running.
add_executable(bench_noise ${CMAKE_CURRENT_SOURCE_DIR}/bench_noise.c)
target_link_libraries(bench_noise PRIVATE rewind rewind_flags MPI::MPI_C)
rewind_mpi_expect(bench_noise_smoke NP 2 RC zero
  COMMAND $<TARGET_FILE:bench_noise> --n 16 --steps 10 --repeat 3
  REGEX "stored noise for 10 steps: 40960 bytes.*BENCH_JSON .*\"ranks\":2.*\"rewind_noise_bytes\":0")
set_tests_properties(bench_noise_smoke PROPERTIES LABELS "bench;smoke")
