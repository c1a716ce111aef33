# bench_disk: the HDF5 checkpoint store's write and read bandwidth against dd-style POSIX
# I/O of the same bytes on the same file system (see the comment at the top of
# bench_disk.c). Run by hand for numbers (Release build), e.g.
#   mpiexec -n 1 tests/bench/bench_disk --dir /scratch --mib 64 --count 8 --repeat 3
# ctest runs a tiny smoke case (the data must come back bit for bit).
add_executable(bench_disk ${CMAKE_CURRENT_SOURCE_DIR}/bench_disk.c)
target_link_libraries(bench_disk PRIVATE rewind rewind_flags MPI::MPI_C)
rewind_mpi_expect(bench_disk_smoke NP 2 RC zero
  COMMAND $<TARGET_FILE:bench_disk> --dir ${CMAKE_CURRENT_BINARY_DIR} --mib 1 --count 3 --repeat 1
  REGEX "BENCH_JSON .*\"bitwise\":true")
set_tests_properties(bench_disk_smoke PROPERTIES LABELS "bench;smoke")
