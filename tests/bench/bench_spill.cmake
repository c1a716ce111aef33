# bench_spill: a run whose checkpoints spill to disk (two-level schedule, measured or given
# disk costs) against the all-RAM run with the same total slots: wall-time ratio, disk
# traffic and what the disk allows (see the comment at the top of bench_spill.c). Run by
# hand for numbers (Release build), e.g.
#   mpiexec -n 1 tests/bench/bench_spill --n 2048 --steps 100 --ram-slots 3 --disk-slots 8
# ctest runs a tiny smoke case: the two gradients must agree bit for bit.
add_executable(bench_spill ${CMAKE_CURRENT_SOURCE_DIR}/bench_spill.c)
target_link_libraries(bench_spill PRIVATE rewind rewind_flags MPI::MPI_C)
rewind_mpi_expect(bench_spill_smoke NP 2 RC zero
  COMMAND $<TARGET_FILE:bench_spill> --n 32 --steps 60 --ram-slots 2 --disk-slots 4
          --write-cost 0.5 --read-cost 0.5 --dir ${CMAKE_CURRENT_BINARY_DIR}
  REGEX "BENCH_JSON .*\"disk_writes\":[1-9].*\"gradients_match\":true")
set_tests_properties(bench_spill_smoke PROPERTIES LABELS "bench;smoke")
