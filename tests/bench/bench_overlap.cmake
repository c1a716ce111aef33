# bench_overlap: how much of a memory stream (an adjoint step's stored stages) this machine hides
# behind in-cache work, on a loop of the adjoint sweep's shape with no Rewind code in it (issue
# 10; see the comment at the top of bench_overlap.c). Run by hand for numbers (Release build):
#   build/release/tests/bench/bench_overlap
# ctest runs a tiny smoke case so the program keeps building and running, and its refusals of a
# size that leaves a stream under four layers and of a count that is not positive.
add_executable(bench_overlap ${CMAKE_CURRENT_SOURCE_DIR}/bench_overlap.c)
target_link_libraries(bench_overlap PRIVATE rewind_flags MPI::MPI_C)
rewind_mpi_expect(bench_overlap_smoke NP 1 RC zero
  COMMAND $<TARGET_FILE:bench_overlap> --mib 1 --steps 3 --repeat 2
  REGEX "3 steps, 4 streams a step of 32 layers x 1024 doubles \\(1.00 MiB a step\\).*prefetched +[0-9.]+ ms per step.*hidden share of the stream: hardware prefetchers -?[0-9.]+, a prefetch per line 1024 doubles ahead -?[0-9.]+.*BENCH_JSON \\{\"bench\":\"overlap\",.*\"hidden_prefetched\":")
set_tests_properties(bench_overlap_smoke PROPERTIES LABELS "bench;smoke")
rewind_mpi_expect(bench_overlap_too_small NP 1 RC nonzero
  COMMAND $<TARGET_FILE:bench_overlap> --mib 1 --layer 65536
  REGEX "--mib give each stream at least 4 layers of --layer doubles \\(--mib 1, --streams 4, --layer 65536\\)")
set_tests_properties(bench_overlap_too_small PROPERTIES LABELS "bench;smoke")
rewind_mpi_expect(bench_overlap_bad_value NP 1 RC nonzero
  COMMAND $<TARGET_FILE:bench_overlap> --steps 0
  REGEX "--steps needs a positive integer \\(given: 0\\)")
set_tests_properties(bench_overlap_bad_value PROPERTIES LABELS "bench;smoke")
