# tools/rewind_plot.py on the apps' flat records (tests/mpi/output.cmake runs the apps):
#   cmake -DPYTHON=python3 -DTOOL=rewind_plot.py -DDIR=dir -P check_plot_records.cmake
# DIR holds wave.h5 (rewind-wave, 5 receivers), wave_many.h5 (24 receivers) and heat.h5
# (rewind-heat, 5 sensors at given coordinates). The tool writes data_traces.png and
# sensors_data.png next to the other plots, with no dataset skipped. On copies with a
# malformed record it skips that record with a line naming the file and the dataset, still
# plots the rest (exit 0), and exits 1 when the malformed record is all there is to plot.
# Exit 77 from the tool (numpy, h5py or matplotlib missing) skips: "SKIPPED:".
include(${CMAKE_CURRENT_LIST_DIR}/png.cmake)
if(NOT PYTHON)
  message("SKIPPED: no python3 found")
  return()
endif()

# run_tool(H5 OUTDIR [args...]): sets rc, out and err in the caller.
macro(run_tool h5 outdir)
  file(REMOVE_RECURSE "${outdir}")
  execute_process(COMMAND ${PYTHON} ${TOOL} ${h5} -o ${outdir} --snapshot none ${ARGN}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(rc EQUAL 77)
    message("SKIPPED: ${err}")
    return()
  endif()
endmacro()

foreach(pair wave:data_traces wave_many:data_traces heat:sensors_data)
  string(REPLACE ":" ";" pair "${pair}")
  list(GET pair 0 name)
  list(GET pair 1 png)
  if(NOT EXISTS "${DIR}/${name}.h5")
    message(FATAL_ERROR "${DIR}/${name}.h5 is missing: the output_plot_*_run tests write it")
  endif()
  run_tool(${DIR}/${name}.h5 ${DIR}/${name}_plots)
  if(NOT rc EQUAL 0 OR NOT out MATCHES "${png}\\.png")
    message(FATAL_ERROR "rewind_plot.py on ${name}.h5: exit ${rc}, no ${png}.png:\n${out}${err}")
  endif()
  if(err MATCHES "skipped")
    message(FATAL_ERROR "rewind_plot.py on ${name}.h5 skipped datasets:\n${err}")
  endif()
  rewind_check_png("${DIR}/${name}_plots/${png}.png" rewind_plot.py)
  rewind_check_png("${DIR}/${name}_plots/gradient_dJdp.png" rewind_plot.py)
  message("${name}.h5: ${png}.png written")
endforeach()

# Malformed copies: the receiver count does not match the values, plus a dataset of no known
# layout; the sensor data without their times.
execute_process(COMMAND ${PYTHON} -c "
import shutil, sys, h5py
d = sys.argv[1]
shutil.copy(d + '/wave.h5', d + '/bad_wave.h5')
shutil.copy(d + '/heat.h5', d + '/bad_heat.h5')
with h5py.File(d + '/bad_wave.h5', 'r+') as h:
    h['/data/traces'].attrs['receivers'] = 7
    h['/extra/notes'] = [b'not', b'numbers']
with h5py.File(d + '/bad_heat.h5', 'r+') as h:
    del h['/sensors/times']
" ${DIR} RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "could not write the malformed copies: ${err}")
endif()
run_tool(${DIR}/bad_wave.h5 ${DIR}/bad_wave_plots)
if(NOT rc EQUAL 0
   OR NOT err MATCHES "bad_wave\\.h5: /data/traces: skipped: [^\n]*receivers x samples = 7 x"
   OR NOT err MATCHES "bad_wave\\.h5: /extra/notes: skipped: no plot for this layout"
   OR EXISTS "${DIR}/bad_wave_plots/data_traces.png")
  message(FATAL_ERROR "malformed traces: exit ${rc}, messages:\n${err}")
endif()
rewind_check_png("${DIR}/bad_wave_plots/gradient_dJdp.png" rewind_plot.py)
rewind_check_png("${DIR}/bad_wave_plots/state_final_u.png" rewind_plot.py)
run_tool(${DIR}/bad_heat.h5 ${DIR}/bad_heat_plots --fields sensors/*)
if(NOT rc EQUAL 1
   OR NOT err MATCHES "bad_heat\\.h5: /sensors/data: skipped: no dataset /sensors/times"
   OR NOT err MATCHES "bad_heat\\.h5: nothing could be plotted")
  message(FATAL_ERROR "sensor data without times, alone: exit ${rc}, messages:\n${err}")
endif()
message("rewind_plot.py: receiver traces and sensor data plotted; malformed records skipped "
        "with a message naming file and dataset")
