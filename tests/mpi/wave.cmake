# The acoustic wave problem, the leapfrog stepper and rewind-wave (issue 4).
add_executable(test_wave ${CMAKE_CURRENT_SOURCE_DIR}/test_wave.c)
target_link_libraries(test_wave PRIVATE rewind rewind_flags)
foreach(np 1 2 4)
  rewind_mpi_test(wave_np${np} NP ${np} COMMAND $<TARGET_FILE:test_wave>)
endforeach()

set(WAVE $<TARGET_FILE:rewind-wave>)
set(WAVE_DECKS ${PROJECT_SOURCE_DIR}/apps/wave)
set(WAVE_OUT ${CMAKE_CURRENT_BINARY_DIR}/out)
file(MAKE_DIRECTORY ${WAVE_OUT})
# The embedded default deck (shortened) and the example decks run and write complete files.
rewind_mpi_expect(wave_app_default NP 2 RC zero
  REGEX "dJ/damplitude.*velocity.*binomial optimum"
  COMMAND ${WAVE} -output ${WAVE_OUT}/wave_default.h5 -tf 0.4)
# The result file is complete: h5dump reads the attributes and every gradient, model, trace and
# state dataset (which verifies the Fletcher32 checksums).
set(wave_h5dump h5dump -A ${WAVE_OUT}/wave_default.h5)
string(REPLACE ";" "\\;" wave_h5dump "${wave_h5dump}")
set(wave_args -DRC=zero "-DREGEX=dJ/damplitude.*objective|objective.*dJ/damplitude"
    "-DCMD=${wave_h5dump}")
add_test(NAME wave_app_output_attrs
  COMMAND ${CMAKE_COMMAND} ${wave_args} -P ${PROJECT_SOURCE_DIR}/tests/scripts/expect.cmake)
add_test(NAME wave_app_output_datasets
  COMMAND h5dump -d /gradient/dJdvelocity -d /gradient/dJdy0/u -d /gradient/dJdy0/u_prev
          -d /model/true/c -d /model/initial/c -d /data/traces -d /state/final/u
          -d /snapshots/000002/u ${WAVE_OUT}/wave_default.h5)
set_tests_properties(wave_app_output_attrs wave_app_output_datasets PROPERTIES
  DEPENDS wave_app_default)
# On the emulated device (issue 11): the app's GPU path (wave problem and leapfrog as device
# bodies) gives the CPU run's gradients bit for bit.
rewind_mpi_expect(wave_app_device NP 2 RC zero REGEX "device: emulated.*dJ/damplitude.*binomial optimum"
  COMMAND ${WAVE} -output ${WAVE_OUT}/wave_device.h5 -tf 0.4 -device emulated)
rewind_h5_same(wave_app_device_same ${WAVE_OUT}/wave_default.h5 ${WAVE_OUT}/wave_device.h5
  DATASETS /gradient/dJdvelocity /gradient/dJdy0 /gradient/dJdp DEPENDS wave_app_default wave_app_device)
# 512 x 512 on 4 ranks: slabs for the state grid (2 components: four wave windows fit 128
# layers), which the 1-component field grid must follow (alone it would take 2 x 2); the
# gradients equal the one-rank run's bit for bit.
foreach(np 1 4)
  rewind_mpi_expect(wave_app_slabs_np${np} NP ${np} RC zero
    REGEX "512 x 512 grid on 1 x ${np} ranks.*dJ/damplitude"
    COMMAND ${WAVE} -nx 512 -ny 512 -tf 0.008 -dt 0.0004 -output ${WAVE_OUT}/wave_slabs${np}.h5)
endforeach()
rewind_h5_same(wave_app_slabs_same ${WAVE_OUT}/wave_slabs1.h5 ${WAVE_OUT}/wave_slabs4.h5
  DATASETS /gradient/dJdvelocity /gradient/dJdy0 /gradient/dJdp /state/final/u
  DEPENDS wave_app_slabs_np1 wave_app_slabs_np4)
rewind_mpi_expect(wave_app_small NP 2 RC zero REGEX "dJ/damplitude"
  COMMAND ${WAVE} ${WAVE_DECKS}/decks/small.yaml -output ${WAVE_OUT}/wave_small.h5 -tf 0.5)
rewind_mpi_expect(wave_app_two_sources NP 2 RC zero REGEX "2 source\\(s\\), 5 receivers"
  COMMAND ${WAVE} ${WAVE_DECKS}/decks/two_sources.opts -output ${WAVE_OUT}/wave_two.h5 -tf 0.3)
# The traces' positions: /data/receivers holds the node each receiver was moved to
# (0.234 -> 0.23, 0.8149 -> 0.81 on the default grid, h = 0.01), not the deck's position.
rewind_mpi_test(wave_app_receiver_nodes NP 2
  COMMAND ${WAVE} -receivers 0.234,0.8149,0.5,0.5 -tf 0.1 -output ${WAVE_OUT}/wave_rec.h5)
add_test(NAME wave_app_receiver_nodes_check
  COMMAND sh -c "h5dump -d /data/receivers \"$1\" | grep -q '(0): 0.23, 0.81, 0.5, 0.5$'"
          sh ${WAVE_OUT}/wave_rec.h5)
set_tests_properties(wave_app_receiver_nodes_check PROPERTIES DEPENDS wave_app_receiver_nodes
  ENVIRONMENT "${REWIND_TEST_ENV}" TIMEOUT 60)

# Bad input: a clear message, a non-zero exit, no result file left behind.
function(wave_bad name regex)
  rewind_mpi_expect(wave_bad_${name} NP 2 RC nonzero REGEX "${regex}"
    COMMAND ${WAVE} ${ARGN} -output ${WAVE_OUT}/wave_bad_${name}.h5)
  add_test(NAME wave_bad_${name}_no_output
    COMMAND ${CMAKE_COMMAND} -DFILE=${WAVE_OUT}/wave_bad_${name}.h5 -DEXPECT_MISSING=1
            -P ${PROJECT_SOURCE_DIR}/tests/scripts/check_h5.cmake)
  set_tests_properties(wave_bad_${name}_no_output PROPERTIES DEPENDS wave_bad_${name})
endfunction()
wave_bad(cfl "CFL condition violated: dt = 0.01 .*use dt <= 0.0058" -dt 0.01)
wave_bad(cfl_anomaly "CFL condition violated.*true model" -anomaly_amplitude 1.0 -tf 0.2)
wave_bad(dt_divides "dt = 0.0035 does not divide tf - t0 = 1.2" -dt 0.0035)
wave_bad(receiver_outside "receiver 2 at \\(1.5, 0.5\\) lies outside" -receivers 0.5,0.5,1.5,0.5)
wave_bad(odd_pairs "key 'receivers'.*x,y pairs" -receivers 0.5,0.5,0.7)
wave_bad(stepper "stepper.*rk4.*leapfrog" -stepper rk4)
wave_bad(adaptive "adaptive.*leapfrog.*no error estimate" -adaptive true)
