# The heat problem (VJPs, Taylor tests, checkpointing, rank counts) and rewind-heat end to end.
add_executable(test_heat ${CMAKE_CURRENT_SOURCE_DIR}/test_heat.c)
target_link_libraries(test_heat PRIVATE rewind rewind_flags)
foreach(np 1 2 4)
  rewind_mpi_expect(heat_np${np} NP ${np} RC zero REGEX "test_heat: all checks passed"
    FORBID "FAIL" COMMAND $<TARGET_FILE:test_heat>)
endforeach()

set(HEAT $<TARGET_FILE:rewind-heat>)
set(HEAT_DECKS ${PROJECT_SOURCE_DIR}/apps/heat/decks)
set(HEAT_OUT ${CMAKE_CURRENT_BINARY_DIR}/out)
file(MAKE_DIRECTORY ${HEAT_OUT})
# The embedded default deck (shortened) and the 3-D example deck (made small) run to the end.
rewind_mpi_expect(heat_app_default NP 2 RC zero
  REGEX "rewind-heat: heat on 2 ranks.*dJ/dsource.*dJ/dkappa\\|_2 *= [0-9]"
  COMMAND ${HEAT} -output ${HEAT_OUT}/heat_default.h5 -tf 0.05)
rewind_mpi_expect(heat_app_3d NP 2 RC zero REGEX "3-D 20 x 20 x 20.*dJ/dkappa\\|_2 *= [0-9]"
  COMMAND ${HEAT} ${HEAT_DECKS}/heat3d.yaml -n 20 -output ${HEAT_OUT}/heat3d.h5 -tf 0.02)
# On the emulated device (issue 11): the app's GPU path gives the CPU run's dJ/dkappa and
# dJ/dy0 bit for bit.
rewind_mpi_expect(heat_app_device NP 2 RC zero
  REGEX "device: emulated.*dJ/dkappa\\|_2 *= [0-9]"
  COMMAND ${HEAT} -output ${HEAT_OUT}/heat_device.h5 -tf 0.05 -device emulated)
rewind_h5_same(heat_app_device_same ${HEAT_OUT}/heat_default.h5 ${HEAT_OUT}/heat_device.h5
  DATASETS /gradient/dJdkappa /gradient/dJdy0 DEPENDS heat_app_default heat_app_device)
# Frozen inputs (key differentiate): what is not selected is neither computed nor reported, and
# what is selected is the default run's bit for bit (the frozen VJPs do not feed the adjoint
# state): dJ/dy0 alone, and dJ/dkappa alone.
function(heat_frozen what others dataset)
  rewind_mpi_expect(heat_app_frozen_${what} NP 2 RC zero
    REGEX "\\|?dJ/d${what}\\|?_2 .*not differentiated +${others} \\(key differentiate\\)"
    FORBID "${ARGN}"
    COMMAND ${HEAT} -output ${HEAT_OUT}/heat_frozen_${what}.h5 -tf 0.05 -differentiate ${what})
  rewind_h5_same(heat_app_frozen_${what}_same ${HEAT_OUT}/heat_default.h5
    ${HEAT_OUT}/heat_frozen_${what}.h5 DATASETS ${dataset}
    DEPENDS heat_app_default heat_app_frozen_${what})
endfunction()
heat_frozen(y0 "source, kappa" /gradient/dJdy0 "dJ/dsource|dJ/dkappa")
heat_frozen(kappa "source, y0" /gradient/dJdkappa "dJ/dsource|dJ/dy0")
# Neumann sides on the device: the adjoint's gather form (zero-ghost operator plus each ghost
# face's term at the node it mirrors) runs there as on the CPU, so the gradients agree bit for
# bit, at 2 and 4 ranks.
foreach(np 2 4)
  rewind_mpi_expect(heat_app_neumann_np${np} NP ${np} RC zero REGEX "dJ/dkappa\\|_2 *= [0-9]"
    COMMAND ${HEAT} -output ${HEAT_OUT}/heat_neumann${np}.h5 -tf 0.05 -boundary neumann)
  rewind_mpi_expect(heat_app_device_neumann_np${np} NP ${np} RC zero
    REGEX "device: emulated.*dJ/dkappa\\|_2 *= [0-9]"
    COMMAND ${HEAT} -output ${HEAT_OUT}/heat_device_neumann${np}.h5 -tf 0.05 -boundary neumann
            -device emulated)
  rewind_h5_same(heat_app_device_neumann_np${np}_same ${HEAT_OUT}/heat_neumann${np}.h5
    ${HEAT_OUT}/heat_device_neumann${np}.h5 DATASETS /gradient/dJdkappa /gradient/dJdy0
    DEPENDS heat_app_neumann_np${np} heat_app_device_neumann_np${np})
endforeach()
# The result file is complete: h5dump reads the fields (verifying their Fletcher32 checksums).
add_test(NAME heat_app_output_readable
  COMMAND h5dump -d /gradient/dJdkappa -d /fields/kappa -d /fields/kappa_true -d /state/u
          -d /sensors/data -d /snapshots/000000/u ${HEAT_OUT}/heat_default.h5)
set_tests_properties(heat_app_output_readable PROPERTIES DEPENDS heat_app_default
  PASS_REGULAR_EXPRESSION "DATASET \"/gradient/dJdkappa\"" FAIL_REGULAR_EXPRESSION "h5dump error")

# Bad input: a clear message, a non-zero exit, no output file left behind.
function(heat_bad name regex)
  rewind_mpi_expect(heat_bad_${name} NP 2 RC nonzero REGEX "${regex}"
    COMMAND ${HEAT} ${ARGN} -output ${HEAT_OUT}/heat_bad_${name}.h5)
  add_test(NAME heat_bad_${name}_no_output
    COMMAND ${CMAKE_COMMAND} -DFILE=${HEAT_OUT}/heat_bad_${name}.h5 -DEXPECT_MISSING=1
            -P ${PROJECT_SOURCE_DIR}/tests/scripts/check_h5.cmake)
  set_tests_properties(heat_bad_${name}_no_output PROPERTIES DEPENDS heat_bad_${name})
endfunction()
heat_bad(unstable_dt "dt = 0.01 .*exceeds the explicit stability limit" -dt 0.01)
# a spacing whose stability limit underflows: no dt would do, and the message says so (it
# advised "use dt <= 0" until 2026-12-02)
heat_bad(spacing_underflow
  "the grid spacing h = .*keys length = 1e-300 and n = 16.*too small for any step dt > 0; use a longer length or fewer nodes"
  -n 16 -length 1e-300)
heat_bad(unknown_boundary "boundary.*robin.*dirichlet" -boundary robin)
heat_bad(process_grid_3d "key 'process_grid' .* is '2x1'; allowed: auto, or PxQxR with each count >= 1 and their product the rank count 2"
  -dim 3 -n 16 -process_grid 2x1)
heat_bad(sensor_outside "sensor 2 \\(counted from 1\\): x = 1.5 lies outside" -sensor_coords 0.5,0.5,1.5,0.5)
heat_bad(kappa_nonpositive "kappa.*must be > 0" -kappa_init -0.5)
