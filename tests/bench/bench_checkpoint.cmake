# bench_checkpoint: store-everything vs binomial checkpointing (time, recomputations against
# t(l,c), checkpoint bytes, peak RSS) on a Lotka-Volterra ensemble with 10^5 unknowns and
# 5,000 RK4 steps by default (see the comment at the top of bench_checkpoint.c). Run by hand
# for numbers, e.g.
#   mpiexec -n 1 tests/bench/bench_checkpoint
#   mpiexec -n 1 tests/bench/bench_checkpoint --members 50000 --steps 5000 --slots 5,10,20,50,100
# ctest runs only tiny smoke cases so the program keeps building and running; they still
# check the advance counts and the bitwise agreement with store-everything (exit 1 if not).
add_executable(bench_checkpoint ${CMAKE_CURRENT_SOURCE_DIR}/bench_checkpoint.c)
target_link_libraries(bench_checkpoint PRIVATE rewind rewind_flags MPI::MPI_C)

rewind_mpi_test(bench_checkpoint_smoke NP 1
  COMMAND $<TARGET_FILE:bench_checkpoint> --members 10 --steps 200 --slots 2,5
  LABELS "bench;smoke")
rewind_mpi_test(bench_checkpoint_smoke_mpi NP 2
  COMMAND $<TARGET_FILE:bench_checkpoint> --members 11 --steps 150 --slots 1,3,7,200
  LABELS "bench;smoke")
# The --max-store-bytes guard: store-everything is skipped, the checkpoint variants are
# compared with each other.
rewind_mpi_test(bench_checkpoint_skip_store NP 1
  COMMAND $<TARGET_FILE:bench_checkpoint> --members 10 --steps 100 --slots 3,4
          --max-store-bytes 1KiB
  LABELS "bench;smoke")

# An unknown flag must be rejected with exit status 2 (run as an MPI singleton).
add_test(NAME bench_checkpoint_badflag
  COMMAND sh -c "\"$1\" --slots 5,x; test $? -eq 2" sh $<TARGET_FILE:bench_checkpoint>)
set_tests_properties(bench_checkpoint_badflag PROPERTIES LABELS "bench;smoke"
  ENVIRONMENT "${REWIND_TEST_ENV}" TIMEOUT 60)
