# bench_pde: forward time, adjoint/forward time ratio with store-everything and with binomial
# checkpointing, recomputations against t(l,c), peak RSS and allocator peak per rank, on
# Gray-Scott 512 x 512 and 3-D heat 128^3 (RK4, 1000 steps) by default (see the comment at
# the top of bench_pde.c). Run by hand for numbers (Release build), e.g.
#   mpiexec -n 1 tests/bench/bench_pde --problem grayscott
#   mpiexec -n 2 tests/bench/bench_pde --problem heat3d --n 128 --steps 1000 --slots 20
# and tests/bench/run_pde_scaling.sh for strong scaling 1 -> 2 ranks (speedups from the
# BENCH_JSON lines). ctest runs only tiny smoke cases so the program keeps building and
# running; they still check the advance counts and the bitwise agreement of the binomial
# gradient with store-everything's (exit 1 if not).
add_executable(bench_pde ${CMAKE_CURRENT_SOURCE_DIR}/bench_pde.c)
target_link_libraries(bench_pde PRIVATE rewind rewind_flags MPI::MPI_C)

rewind_mpi_expect(bench_pde_grayscott_smoke NP 1 RC zero
  COMMAND $<TARGET_FILE:bench_pde> --problem grayscott --n 16 --steps 20 --slots 4
  REGEX "BENCH_JSON .*\"gradients_match\":true")
rewind_mpi_expect(bench_pde_grayscott_smoke_mpi NP 2 RC zero
  COMMAND $<TARGET_FILE:bench_pde> --problem grayscott --n 16 --steps 20 --slots 4
  REGEX "BENCH_JSON .*\"ranks\":2.*\"gradients_match\":true")
# 256^2 on one rank: a block of more than four 256 KiB windows, so with the whole-step sweep
# off (--wave 0; it takes these steps otherwise) the CPU stages run in windows
# (rw_grid_apply_comb_fused), and the binomial gradient still equals store-everything's.
rewind_mpi_expect(bench_pde_grayscott_window_smoke NP 1 RC zero
  COMMAND $<TARGET_FILE:bench_pde> --problem grayscott --n 256 --steps 8 --slots 3 --wave 0
  REGEX "BENCH_JSON .*\"stage_windows\":[1-9][0-9]*,.*\"gradients_match\":true")
# The same at 256^2 on one rank and 512^2 on two (blocks of at least four windows) with whole
# RK steps as one sweep (rw_grid_erk_wave): the binomial schedule's recomputations keep no
# stage, store-everything's forward steps keep theirs, and both adjoints' steps are sweeps too
# (the stored stage states read past each block's edge from the neighbour's layers on two
# ranks); the binomial schedule's backward steps run their recomputation and adjoint as one
# sweep (rw_grid_erk_wave_pair: "pairs"), past the blocks' edges on two ranks: the two
# gradients agree bit for bit.
rewind_mpi_expect(bench_pde_grayscott_wave_smoke NP 1 RC zero
  COMMAND $<TARGET_FILE:bench_pde> --problem grayscott --n 256 --steps 8 --slots 3
  REGEX "BENCH_JSON .*\"waves\":[1-9][0-9]*,\"pairs\":[1-9][0-9]*,.*\"gradients_match\":true")
rewind_mpi_expect(bench_pde_grayscott_wave_smoke_mpi NP 2 RC zero
  COMMAND $<TARGET_FILE:bench_pde> --problem grayscott --n 512 --steps 8 --slots 3
  REGEX "BENCH_JSON .*\"ranks\":2.*\"waves\":[1-9][0-9]*,\"pairs\":[1-9][0-9]*,.*\"gradients_match\":true")
# 512^2 on four ranks takes slabs (rw_grid_slabs_suit: 128 layers each, where 2 x 2 would turn
# the sweep off), so the two middle ranks' stages run past both edges of their blocks: waves
# run, and the binomial gradient equals store-everything's bit for bit.
rewind_mpi_expect(bench_pde_grayscott_wave_slabs_smoke_mpi NP 4 RC zero
  COMMAND $<TARGET_FILE:bench_pde> --problem grayscott --n 512 --steps 8 --slots 3
  REGEX "process grid 1 x 4\\).*BENCH_JSON .*\"ranks\":4.*\"waves\":[1-9][0-9]*,\"pairs\":[1-9][0-9]*,.*\"gradients_match\":true")
# On the emulated device (the GPU code run on the CPU, issue 11): the stage roofline's device
# path and the variants, with the bitwise checks between schedules.
rewind_mpi_expect(bench_pde_grayscott_device_smoke NP 2 RC zero
  COMMAND $<TARGET_FILE:bench_pde> --problem grayscott --n 16 --steps 12 --slots 4 --device emulated
  REGEX "device: emulated.*BENCH_JSON .*\"gradients_match\":true")
# A host tier above 3 device slots, its copies asynchronous (reads started ahead) and then
# synchronous (--host-sync 1, none started ahead): both give store-everything's gradients.
rewind_mpi_expect(bench_pde_grayscott_device_host_smoke NP 2 RC zero
  COMMAND $<TARGET_FILE:bench_pde> --problem grayscott --n 16 --steps 40 --slots 3 --host-slots 4
          --device emulated
  REGEX "host 4 slots, [1-9][0-9]* writes, [1-9][0-9]* reads \\([1-9][0-9]* read ahead, [0-9]+ from the staging copy; copies asynchronous.*\"gradients_match\":true")
rewind_mpi_expect(bench_pde_grayscott_device_host_sync_smoke NP 2 RC zero
  COMMAND $<TARGET_FILE:bench_pde> --problem grayscott --n 16 --steps 40 --slots 3 --host-slots 4
          --host-sync 1 --device emulated
  REGEX "host 4 slots, [1-9][0-9]* writes, [1-9][0-9]* reads \\(0 read ahead, 0 from the staging copy; copies synchronous.*\"gradients_match\":true")
# A disk tier below 3 device slots: its copies from the device through a staging snapshot
# (asynchronous) and then synchronous (--disk-sync 1); both give store-everything's gradients.
# The disk's costs are given (half a step a copy), so the schedule uses the disk whatever this
# machine's disk and steps cost (measured, a 16^2 step is so short that recomputing can win and
# leave the disk unused); each run has a directory of its own.
foreach(sync 0 1)
  if(sync)
    set(mode synchronous)
  else()
    set(mode asynchronous)
  endif()
  file(MAKE_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/disk_sync${sync})
  rewind_mpi_expect(bench_pde_grayscott_device_disk_sync${sync}_smoke NP 2 RC zero
    COMMAND $<TARGET_FILE:bench_pde> --problem grayscott --n 16 --steps 40 --slots 3 --disk-slots 4
            --disk-cost 0.5 --checkpoint-dir ${CMAKE_CURRENT_BINARY_DIR}/disk_sync${sync}
            --disk-sync ${sync} --device emulated
    REGEX "disk 4 slots, [1-9][0-9]* writes, [1-9][0-9]* reads \\([^;]*; copies from the device ${mode}\\), costs 0.5 / 0.5 steps \\(given\\).*\"gradients_match\":true")
endforeach()
rewind_mpi_expect(bench_pde_grayscott_device_stage_smoke NP 1 RC zero
  COMMAND $<TARGET_FILE:bench_pde> --problem grayscott --n 16 --stage 2 --device emulated
  REGEX "device-to-device copy.*paired within each round.*median \\(min - max\\) of 5: every gradient [0-9.]+ \\([0-9.]+ - [0-9.]+\\).*keeping its stages \\(the store-stages sweep.s own forward step\\), median \\(min - max\\) of 5: [0-9.]+ \\([0-9.]+ - [0-9.]+\\).*BENCH_JSON .*\"device\":\"emulated\".*\"r_adjoint_all_median\":[0-9.]+,\"r_adjoint_y0_median\":[0-9.]+,\"r_adjoint_all_stages_median\":[0-9.]+,\"rows_forward\":[0-9]+,\"rows_adjoint\":[0-9]+,\"layers_forward\":[0-9]+,\"layers_adjoint\":[0-9]+}")
rewind_mpi_expect(bench_pde_heat3d_device_smoke NP 1 RC zero
  COMMAND $<TARGET_FILE:bench_pde> --problem heat3d --n 8 --steps 6 --slots 3 --device emulated
  REGEX "device: emulated.*BENCH_JSON .*\"gradients_match\":true")
rewind_mpi_expect(bench_pde_heat3d_smoke NP 1 RC zero
  COMMAND $<TARGET_FILE:bench_pde> --problem heat3d --n 8 --steps 20 --slots 4
  REGEX "BENCH_JSON .*\"gradients_match\":true")
rewind_mpi_expect(bench_pde_heat3d_smoke_mpi NP 2 RC zero
  COMMAND $<TARGET_FILE:bench_pde> --problem heat3d --n 8 --steps 20 --slots 4
  REGEX "BENCH_JSON .*\"ranks\":2.*\"gradients_match\":true")
# 128^3 on four ranks takes slabs of 32 layers (rw_grid_slabs_suit), so the middle ranks' forward
# and adjoint sweeps (conductivity field, source and dJ/dy0) run past both edges of their blocks:
# waves run, and the binomial gradients equal store-everything's bit for bit.
rewind_mpi_expect(bench_pde_heat3d_wave_slabs_smoke_mpi NP 4 RC zero
  COMMAND $<TARGET_FILE:bench_pde> --problem heat3d --n 128 --steps 4 --slots 2
  REGEX "process grid 1 x 1 x 4\\).*BENCH_JSON .*\"ranks\":4.*\"waves\":[1-9][0-9]*,.*\"gradients_match\":true")
# The --max-store-bytes guard: store-everything is skipped, the binomial run still reported.
rewind_mpi_expect(bench_pde_skip_store NP 1 RC zero
  COMMAND $<TARGET_FILE:bench_pde> --problem grayscott --n 16 --steps 20 --slots 4
          --max-store-bytes 1KiB
  REGEX "store-everything SKIPPED.*BENCH_JSON .*\"store_skipped\":true.*\"gradients_match\":null")
set_tests_properties(bench_pde_grayscott_smoke bench_pde_grayscott_smoke_mpi
  bench_pde_heat3d_smoke bench_pde_heat3d_smoke_mpi bench_pde_skip_store
  PROPERTIES LABELS "bench;smoke")

# Bad flags (an unknown problem, a step above the stability limit) exit with status 2 (run as
# an MPI singleton).
add_test(NAME bench_pde_badflag
  COMMAND sh -c "\"$1\" --problem wave; test $? -eq 2 && \"$1\" --n 16 --dt 1000; test $? -eq 2"
          sh $<TARGET_FILE:bench_pde>)
set_tests_properties(bench_pde_badflag PROPERTIES LABELS "bench;smoke"
  ENVIRONMENT "${REWIND_TEST_ENV}" TIMEOUT 60)
# run_pde_scaling.sh on a tiny case, two rounds: the script keeps working (each round's
# speedups and their median, each round's halo waits of the least and most waiting rank, J
# equal at both rank counts bit for bit).
add_test(NAME bench_pde_scaling_smoke
  COMMAND ${PROJECT_SOURCE_DIR}/tests/bench/run_pde_scaling.sh -b $<TARGET_FILE:bench_pde> -n 2
          -o ${CMAKE_CURRENT_BINARY_DIR}/pde_scaling_smoke
          -- --problem grayscott --n 16 --steps 10 --slots 4)
set_tests_properties(bench_pde_scaling_smoke PROPERTIES LABELS "bench;smoke" TIMEOUT 120
  ENVIRONMENT "${REWIND_TEST_ENV};MPIEXEC=${MPIEXEC_EXECUTABLE}"
  PASS_REGULAR_EXPRESSION "speedup binomial at 2 ranks, per round: [0-9.]+ [0-9.]+. median [0-9.]+ .*halo waits binomial at 2 ranks, per round \\(least - most waiting rank\\): [0-9.]+-[0-9.]+ [0-9.]+-[0-9.]+.*J at every size: bitwise equal.*SCALING_JSON .*\"rounds\":2"
  FAIL_REGULAR_EXPRESSION "failed|not found")
# ab_libs.sh (builds of librewind alternated on one benchmark) on a tiny stage bench, the
# build's own library as both builds, as a singleton and on two ranks: the script keeps working
# (each key's median per build and the second build's ratio to the first, paired by round).
foreach(np 1 2)
  if(np EQUAL 1)
    set(name bench_ab_libs_smoke)
    set(how "")
    set(key r_adjoint_all_median)
  else()
    set(name bench_ab_libs_smoke_mpi)
    set(how -p 2 -k t_step,t_adjoint_all)
    set(key t_adjoint_all)
  endif()
  add_test(NAME ${name}
    COMMAND ${PROJECT_SOURCE_DIR}/tests/bench/ab_libs.sh -n 2 ${how}
            -o ${CMAKE_CURRENT_BINARY_DIR}/${name} $<TARGET_FILE_DIR:rewind>
            $<TARGET_FILE_DIR:rewind> -- $<TARGET_FILE:bench_pde> --problem grayscott --n 16 --stage 2)
  set_tests_properties(${name} PROPERTIES LABELS "bench;smoke" TIMEOUT 120
    ENVIRONMENT "${REWIND_TEST_ENV};MPIEXEC=${MPIEXEC_EXECUTABLE}"
    PASS_REGULAR_EXPRESSION "library 1: .*${key} +[0-9.e+-]+ \\([0-9.e+-]+ - [0-9.e+-]+\\)   / library 0's, paired by round: [0-9.e+-]+ .*AB_JSON .*\"rounds\": 2"
    FAIL_REGULAR_EXPRESSION "ab_libs.sh:")
endforeach()
# A bad command line (one library) exits with status 2.
add_test(NAME bench_ab_libs_badflag
  COMMAND sh -c "\"$1\" \"$2\" -- true; test $? -eq 2"
          sh ${PROJECT_SOURCE_DIR}/tests/bench/ab_libs.sh $<TARGET_FILE_DIR:rewind>)
set_tests_properties(bench_ab_libs_badflag PROPERTIES LABELS "bench;smoke" TIMEOUT 60)
