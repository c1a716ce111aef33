# tools/rewind_neuralode_plot.py on a rewind-neuralode training result:
#   cmake -DPYTHON=python3 -DTOOL=rewind_neuralode_plot.py -DH5=train.h5 -DOUT=dir
#         [-DGRADIENT_H5=gradient-mode.h5] -P check_neuralode_plot.cmake
# The tool writes the loss and the two trajectory PNGs, and fails clearly (exit 1, a message
# naming the file) on a missing file, a file that is not HDF5 and a gradient-mode result.
# Exit 77 from the tool (numpy, h5py or matplotlib missing) skips: "SKIPPED:".
include(${CMAKE_CURRENT_LIST_DIR}/png.cmake)
if(NOT PYTHON)
  message("SKIPPED: no python3 found")
  return()
endif()
if(NOT EXISTS "${H5}")
  message(FATAL_ERROR "${H5} is missing: it is written by the test neuralode_train_short")
endif()
file(REMOVE_RECURSE "${OUT}")
execute_process(COMMAND ${PYTHON} ${TOOL} ${H5} -o ${OUT}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(rc EQUAL 77)
  message("SKIPPED: ${err}")
  return()
endif()
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "rewind_neuralode_plot.py failed (${rc}): ${out}${err}")
endif()
message("${out}")
foreach(png train_loss trajectory_phase trajectory_components)
  if(NOT out MATCHES "${png}\\.png")
    message(FATAL_ERROR "rewind_neuralode_plot.py did not print ${png}.png")
  endif()
  rewind_check_png("${OUT}/${png}.png" rewind_neuralode_plot.py)
endforeach()
# Clear failures: a missing file, a file that is not HDF5, a result without training history.
execute_process(COMMAND ${PYTHON} ${TOOL} ${OUT}/no-such-file.h5 -o ${OUT}
  RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 1 OR NOT err MATCHES "no-such-file.h5: no such file")
  message(FATAL_ERROR "missing file: exit ${rc}, message '${err}'")
endif()
execute_process(COMMAND ${PYTHON} ${TOOL} ${TOOL} -o ${OUT}
  RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 1 OR NOT err MATCHES "not an HDF5 file")
  message(FATAL_ERROR "non-HDF5 file: exit ${rc}, message '${err}'")
endif()
if(GRADIENT_H5)
  execute_process(COMMAND ${PYTHON} ${TOOL} ${GRADIENT_H5} -o ${OUT}/gradient
    RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 1 OR NOT err MATCHES "gradient-mode result.*-mode train")
    message(FATAL_ERROR "gradient-mode result: exit ${rc}, message '${err}'")
  endif()
  if(EXISTS "${OUT}/gradient")
    message(FATAL_ERROR "gradient-mode result: ${OUT}/gradient was created")
  endif()
endif()
message("rewind_neuralode_plot.py: PNGs written; clear errors for a missing file, a non-HDF5 "
        "file and a gradient-mode result")
