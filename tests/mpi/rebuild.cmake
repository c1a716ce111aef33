# The memory-free adjoint modes (issue 8): reversible (leapfrog inverse) and backsolve (RK with
# a negative step), their drift checks against anchors, and the fallback / abort / warn
# actions, through the apps at 1, 2 and 4 ranks (tests/scripts/rebuild.sh says what each
# case asserts).
set(REBUILD_SH ${PROJECT_SOURCE_DIR}/tests/scripts/rebuild.sh)
function(rebuild_case name np case app)
  add_test(NAME rebuild_${name}_np${np}
    COMMAND ${REBUILD_SH} ${MPIEXEC_EXECUTABLE} ${np} ${case} $<TARGET_FILE:rewind-${app}> ${ARGN})
  set_tests_properties(rebuild_${name}_np${np} PROPERTIES ENVIRONMENT "${REWIND_TEST_ENV}"
    TIMEOUT 300 PROCESSORS ${np} PASS_REGULAR_EXPRESSION "PASS" FAIL_REGULAR_EXPRESSION "FAIL")
endfunction()
foreach(np 1 2 4)
  # Heat: backward RK4 amplifies the rebuilt state's errors by up to ~14x a step near the
  # stability limit: 40 steps between anchors drift by ~5e-4, so every segment falls back.
  rebuild_case(heat_fallback ${np} fallback heat -tf 0.5 -drift_interval 40)
  rebuild_case(wave_reversible ${np} reversible wave -nx 33 -ny 33 -dt 0.004 -tf 4.0
    -output_every 0)
endforeach()
# Anchors on disk (the HDF5 store; RAM holds the fallback's slots only): the same assertions,
# and each anchor written and read once with no file left.
foreach(c heat_fallback wave_reversible)
  set(dir ${CMAKE_CURRENT_BINARY_DIR}/out/rebuild_disk_${c})
  file(MAKE_DIRECTORY ${dir})
  if(c STREQUAL heat_fallback)
    rebuild_case(${c}_disk 2 fallback heat -tf 0.5 -drift_interval 40)
    set(n 8)
  else()
    rebuild_case(${c}_disk 2 reversible wave -nx 33 -ny 33 -dt 0.004 -tf 4.0 -output_every 0)
    set(n 6)
  endif()
  set_property(TEST rebuild_${c}_disk_np2 APPEND PROPERTY ENVIRONMENT REBUILD_DISK_DIR=${dir}
    "REBUILD_DISK_ARGS=-checkpoint_disk_slots ${n} -checkpoint_dir ${dir}"
    REBUILD_SKIP_ALL_FALLBACK=1)
endforeach()
# The fixed-point leapfrog: zero drift, bit for bit (1, 2, 4 ranks; 10^4 steps at 2).
foreach(np 1 2 4)
  rebuild_case(wave_exact ${np} exact wave -nx 33 -ny 33 -dt 0.004 -tf 4.0 -output_every 0
    -leapfrog_exact true)
endforeach()
rebuild_case(wave_exact_1e4 2 exact wave -nx 33 -ny 33 -dt 0.0004 -tf 4.0 -output_every 0
  -leapfrog_exact true)
# 10^4 leapfrog steps rebuilt by the inverse step (the all-fallback run is left to the
# shorter cases: suite time).
rebuild_case(wave_reversible_1e4 2 reversible wave -nx 33 -ny 33 -dt 0.0004 -tf 4.0
  -output_every 0)
set_property(TEST rebuild_wave_reversible_1e4_np2 APPEND PROPERTY ENVIRONMENT
  REBUILD_SKIP_ALL_FALLBACK=1)
foreach(np 1 2)
  rebuild_case(ode_lv_close ${np} close ode ${PROJECT_SOURCE_DIR}/apps/ode/decks/lotkavolterra.yaml)
endforeach()
rebuild_case(ode_vdp_close 1 close ode)
# Reversible Heun (partner state, inverse step) on the Lotka-Volterra ensemble.
foreach(np 1 2 4)
  rebuild_case(ode_revheun ${np} reversible ode ${PROJECT_SOURCE_DIR}/apps/ode/decks/lotkavolterra.yaml
    -stepper revheun -tf 5 -dt 0.01)
endforeach()

# Bad combinations: a clear message naming the keys, exit 2, no result file.
set(REBUILD_OUT ${CMAKE_CURRENT_BINARY_DIR}/out)
function(rebuild_bad name app regex)
  rewind_mpi_expect(rebuild_bad_${name} NP 2 RC nonzero REGEX "${regex}"
    COMMAND $<TARGET_FILE:rewind-${app}> ${ARGN} -output ${REBUILD_OUT}/rebuild_bad_${name}.h5)
  add_test(NAME rebuild_bad_${name}_no_output
    COMMAND ${CMAKE_COMMAND} -DFILE=${REBUILD_OUT}/rebuild_bad_${name}.h5 -DEXPECT_MISSING=1
            -P ${PROJECT_SOURCE_DIR}/tests/scripts/check_h5.cmake)
  set_tests_properties(rebuild_bad_${name}_no_output PROPERTIES DEPENDS rebuild_bad_${name})
endfunction()
rebuild_bad(wave_backsolve wave
  "adjoint_mode backsolve needs a stepper with a backward.*'leapfrog' has an exact inverse step.*adjoint_mode from command line, stepper from"
  -adjoint_mode backsolve -tf 0.2)
rebuild_bad(heat_reversible heat
  "adjoint_mode reversible needs a stepper with an exact inverse step, and stepper 'rk4' has only a backward \\(negative-size\\) step, no exact inverse; use adjoint_mode backsolve"
  -adjoint_mode reversible -tf 0.05)
rebuild_bad(heat_stages heat "adjoint_store_stages.*is true, but adjoint_mode: backsolve"
  -adjoint_mode backsolve -adjoint_store_stages true -tf 0.05)
rebuild_bad(heat_interval heat
  "drift_interval = 2 needs 10 anchors for 20 steps, and the fallback at least one slot more; the checkpoint budget holds 4 states"
  -adjoint_mode backsolve -drift_interval 2 -checkpoint_slots 4 -tf 0.05)
rebuild_bad(ode_revheun_backsolve ode
  "adjoint_mode backsolve needs a stepper with a backward.*'revheun' has an exact inverse step"
  -stepper revheun -adjoint_mode backsolve -tf 0.5)
rebuild_bad(wave_exact_range wave
  "exact \\(fixed-point\\) leapfrog: \\|u\\| reached .* beyond the range 0.01 .*raise leapfrog_exact_range"
  -leapfrog_exact true -leapfrog_exact_range 0.01 -tf 0.4)
rebuild_bad(heat_drift_tol heat "drift_tol" -adjoint_mode backsolve -drift_tol 0 -tf 0.05)
# A disk budget too small for the anchors at the asked interval names both.
rebuild_bad(heat_disk_interval heat
  "drift_interval = 2 needs 10 anchors for 20 steps; the disk budget holds 4 states"
  -adjoint_mode backsolve -tf 0.05 -drift_interval 2 -checkpoint_disk_slots 4
  -checkpoint_dir ${REBUILD_OUT})
