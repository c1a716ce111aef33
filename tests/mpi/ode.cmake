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
rewind_mpi_test(ode_app_default NP 2 COMMAND ${ODE} -output ${OUTDIR}/default.h5 -tf 2)
set_tests_properties(ode_app_default PROPERTIES PASS_REGULAR_EXPRESSION "dJ/dmu")
rewind_mpi_test(ode_app_lv_yaml NP 2 COMMAND ${ODE} ${DECKS}/decks/lotkavolterra.yaml
  -output ${OUTDIR}/lv.h5 -tf 1)
set_tests_properties(ode_app_lv_yaml PROPERTIES PASS_REGULAR_EXPRESSION "dJ/ddelta")
rewind_mpi_test(ode_app_vdp_opts NP 1 COMMAND ${ODE} ${DECKS}/decks/vanderpol.opts
  -output ${OUTDIR}/vdp.h5 -tf 1)
set_tests_properties(ode_app_vdp_opts PROPERTIES PASS_REGULAR_EXPRESSION "dJ/dmu")
rewind_mpi_test(ode_app_help NP 1 COMMAND ${ODE} -help)
set_tests_properties(ode_app_help PROPERTIES PASS_REGULAR_EXPRESSION "checkpoint|adjoint_mode")
# The output file is complete and readable: h5dump verifies the Fletcher32 checksums.
add_test(NAME ode_app_output_readable
  COMMAND ${CMAKE_COMMAND} -DFILE=${OUTDIR}/default.h5
          -P ${PROJECT_SOURCE_DIR}/tests/scripts/check_h5.cmake)
set_tests_properties(ode_app_output_readable PROPERTIES DEPENDS ode_app_default)

# Bad input: a clear message naming the key/file, non-zero exit, nothing left behind.
function(ode_bad name regex)
  rewind_mpi_test(ode_bad_${name} NP 2 COMMAND ${ODE} ${ARGN} -output ${OUTDIR}/bad_${name}.h5)
  set_tests_properties(ode_bad_${name} PROPERTIES PASS_REGULAR_EXPRESSION "${regex}")
  add_test(NAME ode_bad_${name}_no_output
    COMMAND ${CMAKE_COMMAND} -DFILE=${OUTDIR}/bad_${name}.h5 -DEXPECT_MISSING=1
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
rewind_mpi_test(ode_bad_unwritable NP 2 COMMAND ${ODE} -output /nonexistent-dir/x.h5 -tf 0.1)
set_tests_properties(ode_bad_unwritable PROPERTIES PASS_REGULAR_EXPRESSION
  "directory '/nonexistent-dir' does not exist")
