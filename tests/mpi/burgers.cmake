# The 2-D viscous Burgers problem and rewind-burgers (issue 4).
add_executable(test_burgers ${CMAKE_CURRENT_SOURCE_DIR}/test_burgers.c)
target_link_libraries(test_burgers PRIVATE rewind rewind_flags)
foreach(np 1 2 4)
  rewind_mpi_test(burgers_np${np} NP ${np} COMMAND $<TARGET_FILE:test_burgers>)
endforeach()

set(BURGERS $<TARGET_FILE:rewind-burgers>)
set(BURGERS_DECKS ${PROJECT_SOURCE_DIR}/apps/burgers)
set(BURGERS_OUT ${CMAKE_CURRENT_BINARY_DIR}/out)
file(MAKE_DIRECTORY ${BURGERS_OUT})
# The embedded default deck (shortened) and the example decks run and write complete files.
rewind_mpi_expect(burgers_app_default NP 2 RC zero REGEX "dJ/dnu.*binomial optimum"
  COMMAND ${BURGERS} -output ${BURGERS_OUT}/burgers_default.h5 -tf 0.1)
set(burgers_h5dump h5dump -A ${BURGERS_OUT}/burgers_default.h5)
string(REPLACE ";" "\\;" burgers_h5dump "${burgers_h5dump}")
set(burgers_args -DRC=zero "-DREGEX=dJ/dnu.*objective|objective.*dJ/dnu"
    "-DCMD=${burgers_h5dump}")
add_test(NAME burgers_app_output_attrs
  COMMAND ${CMAKE_COMMAND} ${burgers_args} -P ${PROJECT_SOURCE_DIR}/tests/scripts/expect.cmake)
add_test(NAME burgers_app_output_datasets
  COMMAND h5dump -d /gradient/dJdy0/u -d /state/final/u -d /state/initial/u -d /target/u
          -d /snapshots/000001/u ${BURGERS_OUT}/burgers_default.h5)
set_tests_properties(burgers_app_output_attrs burgers_app_output_datasets PROPERTIES
  DEPENDS burgers_app_default)
# On the emulated device (issue 11): the app's GPU path gives the CPU run's dJ/du0 bit for bit.
rewind_mpi_expect(burgers_app_device NP 2 RC zero REGEX "device: emulated.*dJ/dnu.*binomial optimum"
  COMMAND ${BURGERS} -output ${BURGERS_OUT}/burgers_device.h5 -tf 0.1 -device emulated)
rewind_h5_same(burgers_app_device_same ${BURGERS_OUT}/burgers_default.h5
  ${BURGERS_OUT}/burgers_device.h5 DATASETS /gradient/dJdy0
  DEPENDS burgers_app_default burgers_app_device)
# The viscosity frozen (key differentiate): dJ/dy0 alone, the default run's bit for bit.
rewind_mpi_expect(burgers_app_frozen NP 2 RC zero
  REGEX "\\|dJ/dy0\\|_2 .*not differentiated +nu \\(key differentiate\\)" FORBID "dJ/dnu"
  COMMAND ${BURGERS} -output ${BURGERS_OUT}/burgers_frozen.h5 -tf 0.1 -differentiate y0)
rewind_h5_same(burgers_app_frozen_same ${BURGERS_OUT}/burgers_default.h5
  ${BURGERS_OUT}/burgers_frozen.h5 DATASETS /gradient/dJdy0
  DEPENDS burgers_app_default burgers_app_frozen)
rewind_mpi_expect(burgers_app_steep NP 2 RC zero REGEX "ssprk3.*dJ/dnu"
  COMMAND ${BURGERS} ${BURGERS_DECKS}/decks/steep.yaml -output ${BURGERS_OUT}/steep.h5 -tf 0.01)
rewind_mpi_expect(burgers_app_small NP 1 RC zero REGEX "dJ/dnu"
  COMMAND ${BURGERS} ${BURGERS_DECKS}/decks/small.opts -output ${BURGERS_OUT}/small.h5)

# Bad input: a clear message, a non-zero exit, no result file left behind.
function(burgers_bad name regex)
  rewind_mpi_expect(burgers_bad_${name} NP 2 RC nonzero REGEX "${regex}"
    COMMAND ${BURGERS} ${ARGN} -output ${BURGERS_OUT}/burgers_bad_${name}.h5)
  add_test(NAME burgers_bad_${name}_no_output
    COMMAND ${CMAKE_COMMAND} -DFILE=${BURGERS_OUT}/burgers_bad_${name}.h5 -DEXPECT_MISSING=1
            -P ${PROJECT_SOURCE_DIR}/tests/scripts/check_h5.cmake)
  set_tests_properties(burgers_bad_${name}_no_output PROPERTIES DEPENDS burgers_bad_${name})
endfunction()
burgers_bad(negative_nu "nu.*-0.1" -nu -0.1)
burgers_bad(blowup "not finite.*reduce dt" -dt 0.05 -tf 5 -stability_check off)
burgers_bad(center_pair "profile_center.*two values" -profile_center 0.5)
burgers_bad(too_many_ranks "grid 3 x 3.*on 2 ranks.*use fewer ranks or a finer grid" -N 3)
