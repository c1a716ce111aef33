# Gradients across rank counts, and rewind-ode end to end under mpiexec.
add_executable(test_ode_ranks ${CMAKE_CURRENT_SOURCE_DIR}/test_ode_ranks.c)
target_link_libraries(test_ode_ranks PRIVATE rewind rewind_flags)
foreach(np 1 2 4)
  rewind_mpi_test(ode_ranks_np${np} NP ${np} COMMAND $<TARGET_FILE:test_ode_ranks>)
endforeach()

set(ODE $<TARGET_FILE:rewind-ode>)
set(DECKS ${PROJECT_SOURCE_DIR}/apps/ode)
set(OUTDIR ${CMAKE_CURRENT_BINARY_DIR}/out)
file(MAKE_DIRECTORY ${OUTDIR})
# The embedded default deck and the example decks run and write complete files.
rewind_mpi_expect(ode_app_default NP 2 RC zero REGEX "dJ/dmu.*binomial optimum"
  COMMAND ${ODE} -output ${OUTDIR}/default.h5 -tf 2)
rewind_mpi_expect(ode_app_lv_yaml NP 2 RC zero REGEX "dJ/ddelta"
  COMMAND ${ODE} ${DECKS}/decks/lotkavolterra.yaml -output ${OUTDIR}/lv.h5 -tf 1)
rewind_mpi_expect(ode_app_vdp_opts NP 1 RC zero REGEX "dJ/dmu"
  COMMAND ${ODE} ${DECKS}/decks/vanderpol.opts -output ${OUTDIR}/vdp.h5 -tf 1)
rewind_mpi_expect(ode_app_adaptive NP 2 RC zero REGEX "adaptive: [0-9]+ accepted"
  COMMAND ${ODE} ${DECKS}/decks/vanderpol_adaptive.yaml -output ${OUTDIR}/adaptive.h5 -tf 2)
rewind_mpi_expect(ode_app_help NP 1 RC zero REGEX "checkpoint_ram.*adjoint_mode|adjoint_mode.*checkpoint_ram"
  COMMAND ${ODE} -help)
# The output file is complete and readable: h5dump verifies the Fletcher32 checksums.
add_test(NAME ode_app_output_readable
  COMMAND ${CMAKE_COMMAND} -DFILE=${OUTDIR}/default.h5
          -P ${PROJECT_SOURCE_DIR}/tests/scripts/check_h5.cmake)
set_tests_properties(ode_app_output_readable PROPERTIES DEPENDS ode_app_default)

# On the emulated device (issue 11): the ensembles' member loops as device bodies, their sums
# in the device's order. Against the same run on the CPU: y(T) and dJ/dy0 bit for bit, J and
# dJ/dp (sums over members) to 1e-13. The default deck (binomial, host tier), reversible Heun
# (states rebuilt, drift checked), and the SDE steppers on OU and GBM paths.
function(ode_device name np)
  rewind_mpi_expect(ode_${name}_cpu NP ${np} RC zero REGEX "dJ/d"
    COMMAND ${ODE} ${ARGN} -output ${OUTDIR}/${name}_cpu.h5)
  rewind_mpi_expect(ode_${name}_device NP ${np} RC zero REGEX "device: emulated.*dJ/d"
    COMMAND ${ODE} ${ARGN} -device emulated -output ${OUTDIR}/${name}_dev.h5)
  rewind_h5_same(ode_${name}_same ${OUTDIR}/${name}_cpu.h5 ${OUTDIR}/${name}_dev.h5
    DATASETS /state/y_final /gradient/dJdy0 DEPENDS "ode_${name}_cpu;ode_${name}_device")
  add_test(NAME ode_${name}_dJdp
    COMMAND ${PROJECT_SOURCE_DIR}/tests/scripts/h5_relnorm.py ${OUTDIR}/${name}_cpu.h5
            ${OUTDIR}/${name}_dev.h5 /gradient/dJdp 1e-13)
  set_tests_properties(ode_${name}_dJdp PROPERTIES DEPENDS "ode_${name}_cpu;ode_${name}_device"
    SKIP_RETURN_CODE 77)
endfunction()
ode_device(device_default 2 -tf 2 -ensemble 5000 -ensemble_spread 1e-4 -checkpoint_ram 256KiB)
ode_device(device_lv 1 ${DECKS}/decks/lotkavolterra.yaml -tf 1 -stepper rk38)
ode_device(device_revheun 2 -tf 2 -stepper revheun -adjoint_mode reversible -checkpoint_ram 0)
ode_device(device_ou 2 -problem ou -stepper em -tf 1 -ensemble 300)
ode_device(device_gbm 1 -problem gbm -stepper sheun -tf 1 -objective_running_weight 0.3)

# Bad input: a clear message naming the key/file, non-zero exit, nothing left behind.
function(ode_bad name regex)
  rewind_mpi_expect(ode_bad_${name} NP 2 RC nonzero REGEX "${regex}"
    COMMAND ${ODE} ${ARGN} -output ${OUTDIR}/ode_bad_${name}.h5)
  add_test(NAME ode_bad_${name}_no_output
    COMMAND ${CMAKE_COMMAND} -DFILE=${OUTDIR}/ode_bad_${name}.h5 -DEXPECT_MISSING=1
            -P ${PROJECT_SOURCE_DIR}/tests/scripts/check_h5.cmake)
  set_tests_properties(ode_bad_${name}_no_output PROPERTIES DEPENDS ode_bad_${name})
endfunction()
ode_bad(unknown_key "unknown key 'dtt'.*did you mean 'dt'" -dtt 0.1)
ode_bad(wrong_type "dt.*abc.*not a real" -dt abc)
ode_bad(negative_step "dt.*-0.1.*must be > 0" -dt -0.1)
ode_bad(missing_file "nosuch.yaml.*cannot be read" ${OUTDIR}/nosuch.yaml)
ode_bad(bad_stepper "stepper.*rk5.*euler" -stepper rk5)
ode_bad(bad_interval "final time must be" -tf -1)
ode_bad(blowup "not finite" -mu 1e5 -dt 0.5 -tf 50)
# fewer members than ranks: refused up front (a rank with none used to hang the run in
# mismatched collectives, or abort in SUNDIALS without naming the key)
ode_bad(ensemble_fewer_than_ranks
  "key 'ensemble' = 1 is fewer than the 2 ranks; every rank integrates at least one member: ensemble >= 2, or at most 1 rank \\(ensemble from command line\\)"
  -ensemble 1 -tf 1)
ode_bad(sde_paths_fewer_than_ranks "key 'ensemble' = 1 is fewer than the 2 ranks"
  -problem ou -stepper em -ensemble 1 -tf 1)
rewind_mpi_expect(ode_bad_unwritable NP 2 RC nonzero
  REGEX "directory '/nonexistent-dir' does not exist"
  COMMAND ${ODE} -output /nonexistent-dir/x.h5 -tf 0.1)
ode_bad(adaptive_needs_online "adaptive.*online" -stepper dopri5 -adaptive true)
ode_bad(adaptive_needs_dopri5 "adaptive.*dopri5" -adaptive true -checkpoint_schedule online)
ode_bad(budget_too_small "smaller than one snapshot" -checkpoint_ram 8B)
ode_bad(store_with_budget "key 'checkpoint_ram' \\(from command line\\) sets a checkpoint budget, but adjoint_mode: store"
  -adjoint_mode store -checkpoint_ram 1kB)
ode_bad(store_with_slots "key 'checkpoint_slots' \\(from command line\\) sets a checkpoint budget, but adjoint_mode: store"
  -adjoint_mode store -checkpoint_slots 4)
# A slot count on the command line beats the default deck's RAM budget (checkpoint_ram: 2KiB).
rewind_mpi_expect(ode_app_slots_over_default_ram NP 2 RC zero
  REGEX "adjoint mode checkpoint \\(binomial, 5 slots\\)"
  COMMAND ${ODE} -checkpoint_slots 5 -tf 2 -output ${OUTDIR}/slots5.h5)
ode_bad(revheun_blowup "objective is not finite.*stepper revheun, reversible Heun, is only weakly stable on dissipative problems"
  -stepper revheun -adjoint_mode reversible)
ode_bad(store_all_with_slots "key 'checkpoint_slots' \\(from command line\\) is ignored by checkpoint_schedule: store_all"
  -checkpoint_schedule store_all -checkpoint_slots 5)
ode_bad(slots_and_ram "keys checkpoint_slots \\(from command line\\) and checkpoint_ram \\(from command line\\) both set"
  -checkpoint_slots 3 -checkpoint_ram 1MiB)
ode_bad(bad_size_unit "checkpoint_ram.*parsecs" -checkpoint_ram 12parsecs)
ode_bad(fixed_over_budget "fixed-interval schedule needs .* budget" -checkpoint_schedule fixed
  -checkpoint_ram 1KiB)
