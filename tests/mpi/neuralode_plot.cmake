# tools/rewind_neuralode_plot.py on the result of neuralode_train_short (tests/mpi/
# neuralode.cmake): the loss and trajectory PNGs, and clear errors for a missing file, a
# non-HDF5 file and the gradient-mode result of neuralode_trained_reload. Skips ("SKIPPED:")
# where python3, numpy, h5py or matplotlib is missing, like output_plot. The two runs are
# fixture set-ups (appended, so neuralode.cmake's own properties stay), so that
# `ctest -R neuralode_plot` runs them first.
find_program(REWIND_PLOT_PYTHON NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH)
if(NOT REWIND_PLOT_PYTHON)
  find_program(REWIND_PLOT_PYTHON NAMES python3)
endif()
set(NODE_PLOT_OUT ${CMAKE_CURRENT_BINARY_DIR}/out/neuralode)
set_property(TEST neuralode_train_short neuralode_trained_reload APPEND
  PROPERTY FIXTURES_SETUP neuralode_trained)
add_test(NAME neuralode_plot
  COMMAND ${CMAKE_COMMAND} "-DPYTHON=${REWIND_PLOT_PYTHON}"
          -DTOOL=${PROJECT_SOURCE_DIR}/tools/rewind_neuralode_plot.py
          -DH5=${NODE_PLOT_OUT}/train.h5 -DGRADIENT_H5=${NODE_PLOT_OUT}/reload.h5
          -DOUT=${NODE_PLOT_OUT}/train_plots
          -P ${PROJECT_SOURCE_DIR}/tests/scripts/check_neuralode_plot.cmake)
set_tests_properties(neuralode_plot PROPERTIES
  DEPENDS "neuralode_train_short;neuralode_trained_reload"
  FIXTURES_REQUIRED neuralode_trained SKIP_REGULAR_EXPRESSION "SKIPPED:" TIMEOUT 300)
