# Checks on the output of tests/mpi/output_mpi.c (prints "SKIPPED: why" when a tool is missing;
# ctest's SKIP_REGULAR_EXPRESSION turns that into a skip).
#  MODE=xmf  XMF=file.xmf: the sidecar is well-formed XML (xmllint) and no .partial is left.
#  MODE=plot PYTHON=python3 TOOL=rewind_plot.py H5=result.h5 OUT=dir: the plotting tool writes
#            PNGs of the fields, the gradient and the series; it fails clearly on a missing file
#            and on a file that is not a Rewind result. Exit 77 from the tool: modules missing.
include(${CMAKE_CURRENT_LIST_DIR}/png.cmake)
if(MODE STREQUAL "xmf")
  if(NOT EXISTS "${XMF}" OR EXISTS "${XMF}.partial")
    message(FATAL_ERROR "missing ${XMF}, or ${XMF}.partial left behind")
  endif()
  find_program(XMLLINT xmllint)
  if(NOT XMLLINT)
    message("SKIPPED: xmllint (Debian: libxml2-utils) not found; ${XMF} exists")
    return()
  endif()
  execute_process(COMMAND ${XMLLINT} --noout "${XMF}" RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${XMF} is not well-formed XML: ${err}")
  endif()
  message("${XMF}: well-formed")
elseif(MODE STREQUAL "plot")
  if(NOT PYTHON)
    message("SKIPPED: no python3 found")
    return()
  endif()
  file(REMOVE_RECURSE "${OUT}")
  execute_process(COMMAND ${PYTHON} ${TOOL} ${H5} -o ${OUT} --snapshot all
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(rc EQUAL 77)
    message("SKIPPED: ${err}")
    return()
  endif()
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "rewind_plot.py failed (${rc}): ${out}${err}")
  endif()
  message("${out}")
  foreach(png snapshots_000000_u snapshots_000002_v state_final_u state_final_v
              gradient_dJdkappa_kappa trajectory_y gradient_dJdp)
    rewind_check_png("${OUT}/${png}.png" rewind_plot.py)
  endforeach()
  # Clear failures: a missing file, and a file that is not a Rewind result.
  execute_process(COMMAND ${PYTHON} ${TOOL} ${OUT}/no-such-file.h5 -o ${OUT}
    RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(rc EQUAL 0 OR NOT err MATCHES "no-such-file.h5")
    message(FATAL_ERROR "missing file: exit ${rc}, message '${err}'")
  endif()
  execute_process(COMMAND ${PYTHON} ${TOOL} ${TOOL} -o ${OUT}
    RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(rc EQUAL 0 OR NOT err MATCHES "not an HDF5 file")
    message(FATAL_ERROR "non-HDF5 file: exit ${rc}, message '${err}'")
  endif()
  message("rewind_plot.py: PNGs written; clear errors for a missing and a non-HDF5 file")
else()
  message(FATAL_ERROR "check_xdmf.cmake: MODE must be xmf or plot")
endif()
