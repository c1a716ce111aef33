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
