# Result files and XDMF sidecars at 1, 2 and 4 ranks (values read back, sidecar structure,
# failure cases), then the sidecar's well-formedness and the plotting tool on the 4-rank file.
add_executable(test_output_mpi ${CMAKE_CURRENT_SOURCE_DIR}/output_mpi.c)
target_link_libraries(test_output_mpi PRIVATE rewind_io rewind rewind_flags)
set(REWIND_OUTPUT_TEST_DIR ${CMAKE_CURRENT_BINARY_DIR}/out_output)
file(MAKE_DIRECTORY ${REWIND_OUTPUT_TEST_DIR})
foreach(np 1 2 4)
  rewind_mpi_test(output_mpi_np${np} NP ${np}
    COMMAND $<TARGET_FILE:test_output_mpi> ${REWIND_OUTPUT_TEST_DIR}/np${np})
  set_tests_properties(output_mpi_np${np} PROPERTIES FIXTURES_SETUP output_np${np})
endforeach()

# Debian's python3-h5py/-matplotlib live in /usr/bin/python3's path: prefer that interpreter.
find_program(REWIND_PLOT_PYTHON NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH)
if(NOT REWIND_PLOT_PYTHON)
  find_program(REWIND_PLOT_PYTHON NAMES python3)
endif()
add_test(NAME output_xdmf_wellformed
  COMMAND ${CMAKE_COMMAND} -DMODE=xmf -DXMF=${REWIND_OUTPUT_TEST_DIR}/np4/result.xmf
          -P ${PROJECT_SOURCE_DIR}/tests/scripts/check_xdmf.cmake)
add_test(NAME output_plot
  COMMAND ${CMAKE_COMMAND} -DMODE=plot "-DPYTHON=${REWIND_PLOT_PYTHON}"
          -DTOOL=${PROJECT_SOURCE_DIR}/tools/rewind_plot.py
          -DH5=${REWIND_OUTPUT_TEST_DIR}/np4/result.h5 -DOUT=${REWIND_OUTPUT_TEST_DIR}/plots
          -P ${PROJECT_SOURCE_DIR}/tests/scripts/check_xdmf.cmake)
set_tests_properties(output_xdmf_wellformed output_plot PROPERTIES FIXTURES_REQUIRED output_np4
  SKIP_REGULAR_EXPRESSION "SKIPPED:" TIMEOUT 300)

# The plotting tool on the apps' flat records: rewind-wave's receiver traces (the two-sources
# deck's 5 receivers: lines with a legend; 24 receivers on the small deck: the image past 16
# traces) and rewind-heat's sensor data (the sensors deck's explicit coordinates), then on
# malformed copies (check_plot_records.cmake).
set(REWIND_PLOT_REC_DIR ${CMAKE_CURRENT_BINARY_DIR}/out_plot_records)
file(MAKE_DIRECTORY ${REWIND_PLOT_REC_DIR})
set(plot_receivers "")
foreach(i RANGE 1 24) # x = 0.04 .. 0.96 along y = 0.85
  math(EXPR x "4 * ${i}")
  if(x LESS 10)
    set(x "0${x}")
  endif()
  list(APPEND plot_receivers "0.${x},0.85")
endforeach()
string(JOIN "," plot_receivers ${plot_receivers})
rewind_mpi_test(output_plot_wave_run NP 2
  COMMAND $<TARGET_FILE:rewind-wave> ${PROJECT_SOURCE_DIR}/apps/wave/decks/two_sources.opts
          -output ${REWIND_PLOT_REC_DIR}/wave.h5)
rewind_mpi_test(output_plot_wave_many_run NP 2
  COMMAND $<TARGET_FILE:rewind-wave> ${PROJECT_SOURCE_DIR}/apps/wave/decks/small.yaml
          -receivers ${plot_receivers} -output ${REWIND_PLOT_REC_DIR}/wave_many.h5)
rewind_mpi_test(output_plot_heat_run NP 2
  COMMAND $<TARGET_FILE:rewind-heat> ${PROJECT_SOURCE_DIR}/apps/heat/decks/sensors.yaml
          -output ${REWIND_PLOT_REC_DIR}/heat.h5)
set_tests_properties(output_plot_wave_run output_plot_wave_many_run output_plot_heat_run
  PROPERTIES FIXTURES_SETUP plot_records)
add_test(NAME output_plot_records
  COMMAND ${CMAKE_COMMAND} "-DPYTHON=${REWIND_PLOT_PYTHON}"
          -DTOOL=${PROJECT_SOURCE_DIR}/tools/rewind_plot.py -DDIR=${REWIND_PLOT_REC_DIR}
          -P ${PROJECT_SOURCE_DIR}/tests/scripts/check_plot_records.cmake)
set_tests_properties(output_plot_records PROPERTIES FIXTURES_REQUIRED plot_records
  SKIP_REGULAR_EXPRESSION "SKIPPED:" TIMEOUT 300)
