# SDE paths and pathwise gradients across rank counts (issue 12): the noise is keyed by the
# global path index, so 1, 2 and 4 ranks draw the same paths.
add_executable(test_sde_ranks ${CMAKE_CURRENT_SOURCE_DIR}/test_sde_ranks.c)
target_link_libraries(test_sde_ranks PRIVATE rewind rewind_flags)
foreach(np 1 2 4)
  rewind_mpi_test(sde_ranks_np${np} NP ${np} COMMAND $<TARGET_FILE:test_sde_ranks>)
endforeach()

# rewind-ode with the SDE problems: the example deck runs (checkpointed, 2 ranks), and the
# problem and the stepper must both be SDE or both ODE (a deck error naming both keys).
set(SDE_OUTDIR ${CMAKE_CURRENT_BINARY_DIR}/out_sde)
file(MAKE_DIRECTORY ${SDE_OUTDIR})
rewind_mpi_expect(ode_app_sde_gbm NP 2 RC zero REGEX "gbm on 2 ranks, sheun.*dJ/dsigma"
  COMMAND $<TARGET_FILE:rewind-ode> ${PROJECT_SOURCE_DIR}/apps/ode/decks/gbm_sde.yaml
          -output ${SDE_OUTDIR}/gbm.h5)
rewind_mpi_expect(ode_app_sde_ou_em NP 2 RC zero REGEX "dJ/dtheta.*dJ/dsigma"
  COMMAND $<TARGET_FILE:rewind-ode> -problem ou -stepper em -ensemble 9 -tf 1 -dt 0.02
          -noise_seed 3 -output ${SDE_OUTDIR}/ou.h5)
rewind_mpi_expect(ode_bad_sde_ode_stepper NP 2 RC nonzero
  REGEX "problem 'ou' is an SDE and stepper 'rk4'.*em, sheun.*problem from command line"
  COMMAND $<TARGET_FILE:rewind-ode> -problem ou -stepper rk4 -output ${SDE_OUTDIR}/bad1.h5)
rewind_mpi_expect(ode_bad_sde_reversible NP 2 RC nonzero
  REGEX "adjoint_mode reversible needs.*stepper 'sheun' has no reverse step; use a checkpointing adjoint_mode"
  COMMAND $<TARGET_FILE:rewind-ode> -problem gbm -stepper sheun -adjoint_mode reversible
          -output ${SDE_OUTDIR}/bad2.h5)
# noise_paths: the mean over 4 paths runs and says so (the arithmetic of the mean is checked
# against single-path solves in test_sde's ensemble test); without noise it is a deck error.
rewind_mpi_expect(ode_app_sde_noise_paths NP 2 RC zero
  REGEX "ensemble of 4 noise paths \\(seeds 3 \\.\\. 6\\).*objective J.*dJ/dsigma"
  COMMAND $<TARGET_FILE:rewind-ode> -problem gbm -stepper sheun -ensemble 8 -tf 1 -dt 0.05
          -noise_seed 3 -noise_paths 4 -output ${SDE_OUTDIR}/paths.h5)
rewind_mpi_expect(grayscott_bad_noise_paths_without_noise NP 2 RC nonzero
  REGEX "noise_paths 3 averages noise paths, and this run has no noise.*noise_paths from command"
  COMMAND $<TARGET_FILE:rewind-grayscott> -N 16 -noise_paths 3 -output ${SDE_OUTDIR}/gsbad.h5)
