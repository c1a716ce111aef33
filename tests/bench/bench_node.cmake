# bench_node: one loss + gradient of the neural ODE (P0's shape: 2-64-64-2 tanh, batch 256,
# rk38, store mode) on the CPU and on a device, linked against librewind only (it travels in
# the GPU bundle: issue 11's figure for the MLP through cuBLAS). Run by hand for numbers, e.g.
#   tests/bench/bench_node --steps 1000 --device cuda
#   tests/bench/bench_node --batch 16384 --steps 200 --device cuda
# ctest runs small cases: the CPU alone, and the emulated device, whose gradients must agree
# with the CPU's to 1e-12 and repeat bit for bit (exit 1 if not); a bad flag exits 2.
add_executable(bench_node ${CMAKE_CURRENT_SOURCE_DIR}/bench_node.c)
target_link_libraries(bench_node PRIVATE rewind rewind_flags MPI::MPI_C)
rewind_mpi_expect(bench_node_smoke NP 1 RC zero
  COMMAND $<TARGET_FILE:bench_node> --batch 32 --width 16 --steps 20 --repeat 2
  REGEX "cpu .*BENCH_JSON .*\"device_matches\":null")
rewind_mpi_expect(bench_node_device_smoke NP 2 RC zero
  COMMAND $<TARGET_FILE:bench_node> --batch 33 --width 16 --steps 20 --repeat 2 --device emulated
  REGEX "emulated .*repeat bit for bit.*BENCH_JSON .*\"device_matches\":true")
rewind_mpi_expect(bench_node_device_binomial_smoke NP 1 RC zero
  COMMAND $<TARGET_FILE:bench_node> --batch 8 --width 8 --steps 30 --slots 4 --repeat 2
          --device emulated
  REGEX "binomial checkpointing, 4 slots.*emulated .*repeat bit for bit.*BENCH_JSON .*\"slots\":4.*\"device_matches\":true")
set_tests_properties(bench_node_smoke bench_node_device_smoke bench_node_device_binomial_smoke
  PROPERTIES LABELS "bench;smoke")
add_test(NAME bench_node_badflag
  COMMAND sh -c "\"$1\" --device opencl; test $? -eq 2" sh $<TARGET_FILE:bench_node>)
set_tests_properties(bench_node_badflag PROPERTIES LABELS "bench;smoke"
  ENVIRONMENT "${REWIND_TEST_ENV}" TIMEOUT 60)
